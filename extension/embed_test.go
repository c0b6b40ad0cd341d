package extension

import (
	"strings"
	"testing"
)

func TestObserverScript(t *testing.T) {
	tests := []struct {
		name    string
		global  string
		wantErr bool
	}{
		{"default", DefaultGlobal, false},
		{"random", "__aegis_0123abcd", false},
		{"dollar", "$x", false},
		{"empty", "", true},
		{"quote", `x");alert(1);("`, true},
		{"dot", "a.b", true},
		{"digit first", "1abc", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ObserverScript(tt.global)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ObserverScript(%q) error = %v, wantErr %v", tt.global, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			want := `})(globalThis, "` + tt.global + `");`
			if !strings.HasSuffix(strings.TrimSpace(got), want) {
				t.Errorf("script does not end with %q", want)
			}
			if len(got) != len(Observer())-len(DefaultGlobal)+len(tt.global) {
				t.Errorf("script length %d, want only the install call changed", len(got))
			}
		})
	}
}

func TestObserverEndsWithInstallCall(t *testing.T) {
	if got := strings.Count(Observer(), installCall); got != 1 {
		t.Fatalf("observer.js holds the install call %d times, want 1", got)
	}
	if !strings.HasSuffix(strings.TrimSpace(Observer()), installCall) {
		t.Fatal("observer.js must end with the install call")
	}
}

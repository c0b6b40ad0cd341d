package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// run executes the command line in-process and returns its exit code and
// what it wrote.
func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, Stdio{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func TestRunDispatch(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    string // substring of stdout
		wantErrOut string // substring of stderr
	}{
		{"no arguments prints help and fails", nil, ExitUsage, "", "Usage: aegis COMMAND"},
		{"help", []string{"help"}, ExitOK, "validate", ""},
		{"--help", []string{"--help"}, ExitOK, "Commands:", ""},
		{"help for a command", []string{"help", "validate"}, ExitOK, "Usage: aegis validate", ""},
		{"version", []string{"version"}, ExitOK, "aegis " + Version, ""},
		{"unknown command", []string{"frobnicate"}, ExitUsage, "", `unknown command "frobnicate"`},
		{"command -h is success", []string{"validate", "-h"}, ExitOK, "KIND is one of", ""},
		{"unknown flag", []string{"validate", "--nope"}, ExitUsage, "", "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, "", tt.args...)
			if got, want := code, tt.wantCode; got != want {
				t.Errorf("exit code = %d, want %d (stderr %q)", got, want, errOut)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("stdout = %q, want it to contain %q", out, tt.wantOut)
			}
			if !strings.Contains(errOut, tt.wantErrOut) {
				t.Errorf("stderr = %q, want it to contain %q", errOut, tt.wantErrOut)
			}
		})
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	_, out, _ := run(t, "", "help")
	for name, c := range commands {
		if c.summary == "" {
			t.Errorf("command %q has no summary", name)
		}
		if !strings.Contains(out, "  "+name+" ") {
			t.Errorf("help does not list %q:\n%s", name, out)
		}
	}
}

package driver

import (
	"slices"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// TestRefusedEffect: a boundary.refused event becomes an Effect without
// query or fragment, with the kind and resource type the other drivers
// use, and a reason the extension cannot make up.
func TestRefusedEffect(t *testing.T) {
	tests := []struct {
		name string
		ev   extRefused
		want contract.Effect
	}{
		{"link", extRefused{URL: "http://127.0.0.1:9/next?q=secret#x", Method: "get", Type: "main_frame", Reason: refusedOrigin},
			contract.Effect{Kind: contract.EffectNavigation, Method: "GET", Origin: "http://127.0.0.1:9", Path: "/next", ResourceType: "document", Refused: refusedOrigin}},
		{"frame", extRefused{URL: "https://Ads.Example:443/f", Method: "GET", Type: "sub_frame", Reason: refusedOrigin},
			contract.Effect{Kind: contract.EffectFrame, Method: "GET", Origin: "https://ads.example", Path: "/f", ResourceType: "document", Refused: refusedOrigin}},
		{"beacon", extRefused{URL: "http://x.test/b", Method: "POST", Type: "ping", Reason: refusedOrigin},
			contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: "http://x.test", Path: "/b", ResourceType: "ping", Refused: refusedOrigin}},
		{"held fetch", extRefused{URL: "http://a.test/api", Method: "POST", Type: "xmlhttprequest", Reason: refusedHeld},
			contract.Effect{Kind: contract.EffectRequest, Method: "POST", Origin: "http://a.test", Path: "/api", ResourceType: "fetch", Refused: refusedHeld}},
		{"websocket", extRefused{URL: "wss://x.test/ws", Method: "GET", Type: "websocket", Reason: refusedOrigin},
			contract.Effect{Kind: contract.EffectRequest, Method: "GET", Origin: "https://x.test", Path: "/ws", ResourceType: "websocket", Refused: refusedOrigin}},
		{"popup", extRefused{URL: "http://x.test/p", Type: "main_frame", Reason: refusedPopup},
			contract.Effect{Kind: contract.EffectNavigation, Method: "GET", Origin: "http://x.test", Path: "/p", ResourceType: "document", Refused: refusedPopup}},
		{"unknown reason", extRefused{URL: "http://x.test/", Method: "GET", Type: "", Reason: "made up"},
			contract.Effect{Kind: contract.EffectRequest, Method: "GET", Origin: "http://x.test", Path: "/", ResourceType: "other", Refused: "refused by the browser: made up"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, br := refusedEffect(tc.ev)
			if got.Kind != tc.want.Kind || got.Method != tc.want.Method || got.Origin != tc.want.Origin || got.Path != tc.want.Path ||
				got.ResourceType != tc.want.ResourceType || got.Refused != tc.want.Refused || got.Fields != nil {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if br.Origin != got.Origin || br.Reason != got.Refused || br.ResourceType != got.ResourceType || br.Time.IsZero() {
				t.Errorf("blocked request %+v for %+v", br, got)
			}
		})
	}
}

func TestEffectFields(t *testing.T) {
	many := make([]string, 0, 100)
	for i := range 100 {
		many = append(many, strings.Repeat("f", i+1))
	}
	tests := []struct {
		name string
		in   []string
		want int
	}{
		{"sorted and unique", []string{"b", "a", "b", ""}, 2},
		{"bounded", many, contract.MaxEffectFields},
	}
	for _, tc := range tests {
		got := effectFields(tc.in)
		if len(got) != tc.want || !slices.IsSorted(got) {
			t.Errorf("%s: effectFields = %v (%d), want %d sorted", tc.name, got, len(got), tc.want)
		}
	}
	if got := effectFields([]string{strings.Repeat("x", 1000)}); len([]rune(got[0])) != contract.MaxEffectField {
		t.Errorf("a long field name is %d runes", len([]rune(got[0])))
	}
}

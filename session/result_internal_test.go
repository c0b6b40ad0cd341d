package session

import (
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// TestOKDetail: the progress detail of a successful action carries the
// driver's note (a click the page covered after the press), which the
// model reads.
func TestOKDetail(t *testing.T) {
	click := contract.Action{ID: "a1", Type: contract.ActClick, Selector: "#b"}
	tests := []struct {
		name string
		res  contract.ToolResult
		want string
	}{
		{"plain", contract.ToolResult{OK: true}, "now on https://shop.example/"},
		{"note", contract.ToolResult{OK: true, Note: "the page removed the element after mousedown"},
			"now on https://shop.example/; the page removed the element after mousedown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := okDetail(click, tt.res, "https://shop.example/"); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

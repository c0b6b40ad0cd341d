package a11ytest_test

import (
	"strings"
	"testing"

	"github.com/playwright-community/playwright-go"

	"github.com/aegis-run/aegis/internal/a11ytest"
	"github.com/aegis-run/aegis/palette"
)

// TestCheck: axe-core, run in real Chromium, finds a contrast violation
// only where there is one: grey on white in the light scheme, a palette
// page in neither scheme.
func TestCheck(t *testing.T) {
	b := a11ytest.Launch(t)
	page, err := b.NewPage()
	if err != nil {
		t.Fatal(err)
	}
	pageWith := func(body string) {
		t.Helper()
		html := `<!doctype html><html lang="en"><head><title>t</title><style>` + palette.CSS +
			`body{background:var(--ae-bg);color:var(--ae-fg)}</style></head><body><main>` + body + `</main></body></html>`
		if err := page.SetContent(html); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, body string
		scheme     *playwright.ColorScheme
		want       bool // a color-contrast violation
	}{
		{"grey on white", `<p style="color:#aaaaaa">faint</p>`, playwright.ColorSchemeLight, true},
		{"palette light", `<p class="risk-high">high</p><p class="risk-medium">medium</p><p class="risk-low">low</p><button class="btn-primary">Approve</button><button class="btn-danger">Deny</button>`, playwright.ColorSchemeLight, false},
		{"palette dark", `<p class="risk-high">high</p><p class="risk-medium">medium</p><p class="risk-low">low</p><button class="btn-primary">Approve</button><button class="btn-danger">Deny</button>`, playwright.ColorSchemeDark, false},
		{"light text in dark scheme on a fixed light background", `<p style="background:#fff;color:var(--ae-fg)">pale text on white</p>`, playwright.ColorSchemeDark, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pageWith(tt.body)
			if err := page.EmulateMedia(playwright.PageEmulateMediaOptions{ColorScheme: tt.scheme}); err != nil {
				t.Fatal(err)
			}
			vs, err := a11ytest.Check(page)
			if err != nil {
				t.Fatal(err)
			}
			got := false
			var all []string
			for _, v := range vs {
				all = append(all, v.String())
				if v.ID == "color-contrast" {
					got = true
				}
			}
			if got != tt.want {
				t.Errorf("color-contrast violation = %v, want %v; violations:\n%s", got, tt.want, strings.Join(all, "\n"))
			}
		})
	}
}

package palette

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var varRe = regexp.MustCompile(`--ae-([a-z-]+):\s*(#[0-9a-f]{6});`)

// schemes returns the variables of the light scheme (before the dark media
// query) and of the dark scheme (inside it).
func schemes(t *testing.T) (light, dark map[string]string) {
	t.Helper()
	i := strings.Index(CSS, "@media (prefers-color-scheme: dark)")
	if i < 0 {
		t.Fatal("palette.css has no dark scheme")
	}
	parse := func(s string) map[string]string {
		m := map[string]string{}
		for _, g := range varRe.FindAllStringSubmatch(s, -1) {
			m[g[1]] = g[2]
		}
		return m
	}
	return parse(CSS[:i]), parse(CSS[i:])
}

func luminance(hex string) float64 {
	var c [3]float64
	for i := range c {
		v, err := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		if err != nil {
			panic(err)
		}
		x := float64(v) / 255
		if x <= 0.03928 {
			c[i] = x / 12.92
		} else {
			c[i] = math.Pow((x+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*c[0] + 0.7152*c[1] + 0.0722*c[2]
}

// contrast is the WCAG 2 contrast ratio of two colours.
func contrast(a, b string) float64 {
	la, lb := luminance(a), luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

func TestContrast(t *testing.T) {
	if got, want := fmt.Sprintf("%.2f", contrast("#ffffff", "#000000")), "21.00"; got != want {
		t.Fatalf("contrast(white, black) = %s, want %s", got, want)
	}
	light, dark := schemes(t)
	for name, vars := range map[string]map[string]string{"light": light, "dark": dark} {
		if len(vars) != len(light) {
			t.Errorf("%s scheme sets %d variables, the light one %d: every variable needs both", name, len(vars), len(light))
		}
		for _, fg := range []string{"fg", "muted", "link", "low", "medium", "high", "ok", "bad", "wait", "danger-fg"} {
			for _, bg := range []string{"bg", "bg-alt"} {
				if got := contrast(vars[fg], vars[bg]); got < 4.5 {
					t.Errorf("%s scheme: --ae-%s %s on --ae-%s %s has contrast %.2f:1, below WCAG AA 4.5:1", name, fg, vars[fg], bg, vars[bg], got)
				}
			}
		}
		pairs := [][2]string{{"primary-fg", "primary-bg"}, {"danger-fg", "danger-bg"}}
		for _, p := range pairs {
			if got := contrast(vars[p[0]], vars[p[1]]); got < 4.5 {
				t.Errorf("%s scheme: button --ae-%s on --ae-%s has contrast %.2f:1, below 4.5:1", name, p[0], p[1], got)
			}
		}
		if vars["primary-bg"] == vars["danger-bg"] {
			t.Errorf("%s scheme: the primary and danger buttons share a background: they must look different", name)
		}
	}
}

package attack

import (
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/aegis-run/aegis/driver"
)

// The capture judge reads the pixels of the bundle's screenshots inside
// the box the page reported.
func TestUnmaskedShots(t *testing.T) {
	field := image.Rect(10, 10, 50, 30)
	shot := func(paint image.Rectangle) *image.RGBA {
		img := image.NewRGBA(image.Rect(0, 0, 100, 60))
		draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
		draw.Draw(img, paint, image.NewUniform(driver.MaskColor), image.Point{}, draw.Src)
		return img
	}
	rect := []hit{{Line: "GET /start"}, {Line: "GET /rect?x=10&y=10&w=40&h=20"}}
	for _, tc := range []struct {
		name    string
		img     *image.RGBA
		jpeg    bool
		allowed []hit
		want    int
	}{
		{"masked", shot(field), false, rect, 0},
		{"masked with its padding", shot(field.Inset(-2)), false, rect, 0},
		{"masked jpeg", shot(field), true, rect, 0},
		{"not masked", shot(image.Rectangle{}), false, rect, 1},
		{"half masked", shot(image.Rect(10, 10, 30, 30)), false, rect, 1},
		{"not masked jpeg", shot(image.Rectangle{}), true, rect, 1},
		{"no box reported", shot(image.Rectangle{}), false, []hit{{Line: "GET /start"}}, 0},
		{"box outside the image", shot(field), false, []hit{{Line: "GET /rect?x=90&y=50&w=40&h=20"}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "artifacts"), 0o755); err != nil {
				t.Fatal(err)
			}
			name := "art-000001-image.png"
			if tc.jpeg {
				name = "art-000001-image.jpg"
			}
			f, err := os.Create(filepath.Join(dir, "artifacts", name))
			if err != nil {
				t.Fatal(err)
			}
			if tc.jpeg {
				err = jpeg.Encode(f, tc.img, &jpeg.Options{Quality: 70})
			} else {
				err = png.Encode(f, tc.img)
			}
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			got := unmaskedShots(dir, tc.allowed)
			if len(got) != tc.want {
				t.Errorf("unmaskedShots = %q, want %d file(s)", got, tc.want)
			}
		})
	}
}

// The capture judge finds the secret's letters and digits in order in a
// bundle file, whatever but letters and digits is between them, and only
// in capture scenarios.
func TestSpelledOut(t *testing.T) {
	const secret = "attack-secret-0123abcd"
	for _, tc := range []struct {
		name, content string
		want          int
	}{
		{"spaced out", `{"data-spaced":"a t t a c k - s e c r e t - 0 1 2 3 a b c d"}`, 1},
		{"split across strings", `["attack-se", "CRET-0123", "abcd"]`, 1},
		{"placeholder only", `{"text":"{{secret:PASSWORD}}"}`, 0},
		{"a part", `attack-secret-0123`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			capture := &Scenario{Class: ClassCapture}
			if got := captureLeaks(dir, capture, nil, secret); len(got) != tc.want {
				t.Errorf("captureLeaks = %q, want %d file(s)", got, tc.want)
			}
			if got := captureLeaks(dir, &Scenario{Class: ClassExfiltration}, nil, secret); len(got) != 0 {
				t.Errorf("captureLeaks of another class = %q, want none", got)
			}
		})
	}
	if got := spelledOut(t.TempDir(), "short"); got != nil {
		t.Errorf("a secret of few letters and digits is looked for: %q", got)
	}
}

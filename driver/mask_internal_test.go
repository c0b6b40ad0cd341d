package driver

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// maskShot paints the boxes, scaled from CSS pixels to the image's, on
// the whole viewport, crops an element's box out of it, and leaves an
// image with nothing to paint or crop as it is.
func TestMaskShot(t *testing.T) {
	white := func(w, h int) []byte {
		img := image.NewRGBA(image.Rect(0, 0, w, h))
		draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	box := maskArea{X: 10, Y: 20, Width: 30, Height: 10}
	for _, tc := range []struct {
		name   string
		scale  float64 // the image is 100x50 CSS pixels at scale
		crop   *maskArea
		views  []maskView
		masked int
		size   image.Point // of the result
		// in and out are pixels of the result that must be, and must
		// not be, MaskColor.
		in, out []image.Point
	}{
		{"nothing to mask", 1, nil, []maskView{{VW: 100, VH: 50}}, 0, image.Pt(100, 50), nil, []image.Point{{15, 25}}},
		{"viewport at scale 1", 1, nil, []maskView{{Rects: []maskArea{box}, VW: 100, VH: 50}}, 1, image.Pt(100, 50),
			[]image.Point{{10, 20}, {39, 29}, {8, 18}, {41, 31}}, []image.Point{{7, 25}, {43, 25}, {25, 33}}},
		{"viewport at scale 2", 2, nil, []maskView{{Taint: []maskArea{box}, VW: 100, VH: 50}}, 1, image.Pt(200, 100),
			[]image.Point{{20, 40}, {79, 59}}, []image.Point{{17, 50}, {83, 50}}},
		{"crop", 1, &maskArea{X: 5, Y: 15, Width: 60, Height: 30}, []maskView{{Rects: []maskArea{box}, VW: 100, VH: 50}}, 1, image.Pt(60, 30),
			[]image.Point{{5, 5}, {34, 14}}, []image.Point{{2, 10}, {38, 10}}},
		{"crop at scale 2", 2, &maskArea{X: 5, Y: 15, Width: 60, Height: 30}, []maskView{{Rects: []maskArea{box}, VW: 100, VH: 50}}, 1, image.Pt(120, 60),
			[]image.Point{{10, 10}, {69, 29}}, []image.Point{{5, 20}, {75, 20}}},
		{"outside the crop", 1, &maskArea{X: 50, Y: 0, Width: 50, Height: 30}, []maskView{{Rects: []maskArea{box}, VW: 100, VH: 50}}, 0, image.Pt(50, 30),
			nil, []image.Point{{0, 0}}},
		{"crop, nothing to mask", 1, &maskArea{X: 50, Y: 0, Width: 50, Height: 30}, []maskView{{VW: 100, VH: 50}}, 0, image.Pt(50, 30),
			nil, []image.Point{{0, 0}}},
		{"before and after", 1, nil, []maskView{{Rects: []maskArea{box}, VW: 100, VH: 50}, {Taint: []maskArea{{X: 60, Y: 5, Width: 10, Height: 5}}, VW: 100, VH: 50}}, 2, image.Pt(100, 50),
			[]image.Point{{10, 20}, {60, 5}}, []image.Point{{50, 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := white(int(100*tc.scale), int(50*tc.scale))
			got, err := maskShot(context.Background(), "", data, contract.MIMEPNG, tc.scale, tc.crop, tc.views...)
			if err != nil {
				t.Fatal(err)
			}
			if got.masked != tc.masked || got.mime != contract.MIMEPNG {
				t.Errorf("masked %d (%s), want %d (PNG)", got.masked, got.mime, tc.masked)
			}
			if tc.masked == 0 && tc.crop == nil && !bytes.Equal(got.data, data) {
				t.Errorf("an image with nothing to mask was re-encoded")
			}
			img, err := png.Decode(bytes.NewReader(got.data))
			if err != nil {
				t.Fatal(err)
			}
			if s := img.Bounds().Size(); s != tc.size {
				t.Errorf("the image is %v, want %v", s, tc.size)
			}
			b := img.Bounds().Min
			isMask := func(p image.Point) bool {
				r, g, bl, a := img.At(b.X+p.X, b.Y+p.Y).RGBA()
				mr, mg, mb, ma := MaskColor.RGBA()
				return r == mr && g == mg && bl == mb && a == ma
			}
			for _, p := range tc.in {
				if !isMask(p) {
					t.Errorf("pixel %v is not masked", p)
				}
			}
			for _, p := range tc.out {
				if isMask(p) {
					t.Errorf("pixel %v is masked", p)
				}
			}
		})
	}
}

// shotScale takes the scale from the image's width over the viewport's,
// and refuses an image that is not of the viewport both answers reported.
func TestShotScale(t *testing.T) {
	v := maskView{VW: 800, VH: 600}
	for _, tc := range []struct {
		name          string
		w, h          int
		before, after maskView
		want          float64 // 0: refused
	}{
		{"scale 1", 800, 600, v, v, 1},
		{"device scale 2", 1600, 1200, v, v, 2},
		{"page zoom 150%", 1200, 900, v, v, 1.5},
		{"rounded viewport", 1280, 720, maskView{VW: 1163, VH: 654}, maskView{VW: 1163, VH: 654}, 1280.0 / 1163},
		{"taller image", 800, 640, v, v, 0},
		{"resized between", 800, 600, v, maskView{VW: 700, VH: 600}, 0},
	} {
		got, err := shotScale("", tc.w, tc.h, tc.before, tc.after)
		if (err == nil) != (tc.want != 0) || got != tc.want {
			t.Errorf("%s: shotScale = %v, %v, want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestMaskViewOfAndStillTainted(t *testing.T) {
	box := maskArea{X: 1, Y: 2, Width: 3, Height: 4}
	for _, tc := range []struct {
		name string
		r    pageResult
		ok   bool
	}{
		{"boxes", pageResult{Rects: []maskArea{box}, Taint: []maskArea{box}, VW: 10, VH: 10}, true},
		{"no viewport", pageResult{Rects: []maskArea{box}}, false},
		{"empty box", pageResult{Taint: []maskArea{{X: 1, Y: 1}}, VW: 10, VH: 10}, false},
		{"negative box", pageResult{Rects: []maskArea{{Width: -3, Height: 4}}, VW: 10, VH: 10}, false},
		{"negative change count", pageResult{VW: 10, VH: 10, Changes: -1}, false},
	} {
		if _, err := maskViewOf(tc.r); (err == nil) != tc.ok {
			t.Errorf("%s: maskViewOf error %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	moved := box
	moved.X += 2
	for _, tc := range []struct {
		name          string
		before, after []maskArea
		ok            bool
	}{
		{"none", nil, nil, true},
		{"still", []maskArea{box}, []maskArea{box}, true},
		{"moved", []maskArea{box}, []maskArea{moved}, false},
		{"appeared", nil, []maskArea{box}, false},
		{"went", []maskArea{box}, nil, false},
	} {
		err := stillTainted("", maskView{Taint: tc.before}, maskView{Taint: tc.after})
		if (err == nil) != tc.ok {
			t.Errorf("%s: stillTainted error %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	for _, tc := range []struct {
		name          string
		before, after maskView
		ok            bool
	}{
		{"same count", maskView{Taint: []maskArea{box}, Changes: 3}, maskView{Taint: []maskArea{box}, Changes: 3}, true},
		{"changed in between", maskView{Taint: []maskArea{box}, Changes: 3}, maskView{Taint: []maskArea{box}, Changes: 5}, false},
		{"animating before", maskView{Taint: []maskArea{box}, Animating: true}, maskView{Taint: []maskArea{box}}, false},
		{"animating after", maskView{Taint: []maskArea{box}}, maskView{Taint: []maskArea{box}, Animating: true}, false},
	} {
		err := stillTainted("", tc.before, tc.after)
		if (err == nil) != tc.ok {
			t.Errorf("%s: stillTainted error %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

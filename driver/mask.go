package driver

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"math"

	"github.com/aegis-run/aegis/contract"
)

// Masked screenshots. Both drivers take a screenshot the same way: they
// ask the observer for the boxes of every tainted element (one a secret
// was typed into) and every sensitive field (its maskRects) right before
// and right after the capture, then paint every box of both answers
// opaque in MaskColor on the decoded image before anyone stores it. The
// page cannot undo painting done here, after the capture; the observer
// measures tainted elements directly (not by a walk a page could
// mislead) with the box getter it took before page scripts ran, and a
// screenshot during which one of them moved is refused, as is one where
// a tainted element may be drawn outside its box (a reflection, a shadow,
// a filter, a scaled frame: the observer's outsideOf). A page
// with more fields or elements than the observer walks makes the
// screenshot fail: it is never stored unmasked. Fields in cross-origin
// frames are out of the observer's reach, and are not masked (no secret
// is ever typed there: a selector cannot enter such a frame).

// MaskColor is the colour screenshots are painted with where a tainted
// element or a sensitive field is: opaque black. (A variable only because
// Go has no constant structs, as image/color's Black; never assigned.)
var MaskColor = color.RGBA{A: 0xff}

// maskPad widens every painted box by this many image pixels on each side,
// against rounding and anti-aliased edges.
const maskPad = 2

// maxMaskPixels bounds the screenshots maskShot decodes (a 16384-pixel
// square viewport at scale 1, 1 GiB as RGBA, is past it).
const maxMaskPixels = 8192 * 8192

// maskJPEGQuality is the quality of a screenshot re-encoded as JPEG
// because its PNG is larger than contract.MaxImageBytes.
const maskJPEGQuality = 70

// maskArea is a box in CSS pixels of the top-level viewport.
type maskArea struct {
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

// maskView is one maskRects answer: the boxes to paint (Rects: sensitive
// fields and what is inside tainted elements; Taint: the tainted elements
// themselves, measured directly) and the viewport's size in CSS pixels
// when they were measured.
type maskView struct {
	Rects  []maskArea
	Taint  []maskArea
	VW, VH float64
}

// maskViewOf checks an observer answer of maskRects.
func maskViewOf(r pageResult) (maskView, error) {
	v := maskView{Rects: r.Rects, Taint: r.Taint, VW: r.VW, VH: r.VH}
	if !finitePos(v.VW) || !finitePos(v.VH) {
		return maskView{}, newErr(contract.CodeInternal, "", "the observer reported no viewport size to mask the screenshot by", nil)
	}
	for _, a := range append(v.Rects[:len(v.Rects):len(v.Rects)], v.Taint...) {
		if !finite(a.X) || !finite(a.Y) || !finitePos(a.Width) || !finitePos(a.Height) {
			return maskView{}, newErr(contract.CodeInternal, "", "the observer reported a mask box that is not a box", nil)
		}
	}
	return v, nil
}

// maskMoveSlack is how far (CSS pixels) a tainted element may seem to
// move between the two answers of a screenshot: rounding only.
const maskMoveSlack = 0.5

// stillTainted fails when a tainted element moved, appeared or went
// between before and after: a page that moves the field a secret was
// typed into while it is captured may have shown it where neither answer
// put it, and the screenshot is refused.
func stillTainted(sel string, before, after maskView) error {
	same := len(before.Taint) == len(after.Taint)
	for i := 0; same && i < len(before.Taint); i++ {
		a, b := before.Taint[i], after.Taint[i]
		same = math.Abs(a.X-b.X) <= maskMoveSlack && math.Abs(a.Y-b.Y) <= maskMoveSlack &&
			math.Abs(a.Width-b.Width) <= maskMoveSlack && math.Abs(a.Height-b.Height) <= maskMoveSlack
	}
	if !same {
		return newErr(contract.CodeInternal, sel, "a field a secret was typed into moved during the screenshot: the screenshot is refused", nil)
	}
	return nil
}

func finite(f float64) bool    { return !math.IsNaN(f) && !math.IsInf(f, 0) }
func finitePos(f float64) bool { return finite(f) && f > 0 }

// maskOptions is the argument of the observer's maskRects.
func maskOptions(sensitive []string) map[string]any {
	return map[string]any{"sensitive": nonNil(sensitive)}
}

// maskedShot is a screenshot after masking.
type maskedShot struct {
	data   []byte
	mime   string
	masked int // boxes painted
}

// maskShot paints the boxes of views over the screenshot data (a PNG or a
// JPEG, as mime says) of the element sel ("" for the page) and returns
// the image to store. clip is the screenshot's clip in top-level viewport
// CSS pixels (nil: the whole viewport); the boxes are placed relative to
// it. Scale is the image's size over the clip's (or the viewport's) in
// CSS pixels. A painted image is re-encoded as PNG, or as JPEG when its
// PNG is past contract.MaxImageBytes; one with nothing to paint is
// returned as it is, or re-encoded as JPEG when it is past that bound.
func maskShot(ctx context.Context, sel string, data []byte, mime string, clip *maskArea, views ...maskView) (maskedShot, error) {
	n := 0
	for _, v := range views {
		n += len(v.Rects) + len(v.Taint)
	}
	if n == 0 && len(data) <= contract.MaxImageBytes {
		return maskedShot{data: data, mime: mime}, nil
	}
	if c, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil && c.Width*c.Height > maxMaskPixels {
		return maskedShot{}, newErr(contract.CodeInternal, sel, fmt.Sprintf("a screenshot of %dx%d pixels is too large to mask", c.Width, c.Height), nil)
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return maskedShot{}, newErr(contract.CodeInternal, sel, "the screenshot to mask does not decode", err)
	}
	b := src.Bounds()
	img, ok := src.(draw.Image)
	if !ok {
		rgba := image.NewRGBA(b)
		draw.Draw(rgba, b, src, b.Min, draw.Src)
		img = rgba
	}
	fill := image.NewUniform(MaskColor)
	painted := 0
	for _, v := range views {
		base := maskArea{Width: v.VW, Height: v.VH}
		if clip != nil {
			base = *clip
		}
		sx, sy := float64(b.Dx())/base.Width, float64(b.Dy())/base.Height
		for _, a := range append(v.Rects[:len(v.Rects):len(v.Rects)], v.Taint...) {
			r := image.Rect(
				int(math.Floor((a.X-base.X)*sx))-maskPad,
				int(math.Floor((a.Y-base.Y)*sy))-maskPad,
				int(math.Ceil((a.X+a.Width-base.X)*sx))+maskPad,
				int(math.Ceil((a.Y+a.Height-base.Y)*sy))+maskPad,
			).Add(b.Min).Intersect(b)
			if r.Empty() {
				continue
			}
			draw.Draw(img, r, fill, image.Point{}, draw.Src)
			painted++
		}
	}
	if painted == 0 && len(data) <= contract.MaxImageBytes {
		return maskedShot{data: data, mime: mime}, nil
	}
	if err := ctx.Err(); err != nil {
		return maskedShot{}, ctxErr(ctx)
	}
	var out bytes.Buffer
	if painted > 0 {
		if err := png.Encode(&out, img); err != nil {
			return maskedShot{}, newErr(contract.CodeInternal, sel, "the masked screenshot does not encode", err)
		}
		if out.Len() <= contract.MaxImageBytes {
			return maskedShot{data: out.Bytes(), mime: contract.MIMEPNG, masked: painted}, nil
		}
		out.Reset()
	}
	if err := jpeg.Encode(&out, img, &jpeg.Options{Quality: maskJPEGQuality}); err != nil {
		return maskedShot{}, newErr(contract.CodeInternal, sel, "the screenshot does not encode as JPEG", err)
	}
	return maskedShot{data: out.Bytes(), mime: contract.MIMEJPEG, masked: painted}, nil
}

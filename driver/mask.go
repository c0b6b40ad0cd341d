package driver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"math"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// Masked screenshots. Both drivers take a screenshot the same way
// (shootMasked): they ask the observer for the boxes of every tainted
// element (one a secret was typed into) and every sensitive field (its
// maskRects) right before and right after capturing the whole viewport,
// then paint every box of both answers opaque in MaskColor on the decoded
// image, and crop an element's box out of it, before anyone stores it. The
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

// maxMaskPixels bounds the screenshots maskShot decodes: the largest
// surface Chromium captures (16384 pixels a side), so every viewport and
// device scale (up to 16) the configuration allows is masked, never
// refused for its size; decoded as RGBA it takes up to 1 GiB.
const maxMaskPixels = 16384 * 16384

// maskJPEGQuality is the quality of a screenshot encoded as JPEG: one
// captured as JPEG, or one whose PNG is larger than
// contract.MaxImageBytes. (The extension captures at this quality too.)
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
// themselves, measured directly), the viewport's size in CSS pixels when
// they were measured, how many attribute changes the observer has seen on
// the tainted elements and the elements around them since they were
// tainted, and whether an animation runs on one of them.
type maskView struct {
	Rects     []maskArea
	Taint     []maskArea
	VW, VH    float64
	Changes   float64
	Animating bool
}

// maskViewOf checks an observer answer of maskRects.
func maskViewOf(r pageResult) (maskView, error) {
	v := maskView{Rects: r.Rects, Taint: r.Taint, VW: r.VW, VH: r.VH, Changes: r.Changes, Animating: r.Animating}
	if !finite(v.Changes) || v.Changes < 0 {
		return maskView{}, newErr(contract.CodeInternal, "", "the observer reported a change count that is not one", nil)
	}
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
// between before and after, when the observer saw an attribute of it or
// of an element around it change in between (a page toggling it A-B-A
// leaves the two boxes equal; of <html> or <body>, only a change after
// which a tainted element was elsewhere counts), or when an animation
// that may move them runs: a page
// that moves the field a secret was typed into while it is captured may
// have shown it where neither answer put it, and the screenshot is
// refused.
func stillTainted(sel string, before, after maskView) error {
	same := len(before.Taint) == len(after.Taint) && before.Changes == after.Changes && !before.Animating && !after.Animating
	for i := 0; same && i < len(before.Taint); i++ {
		a, b := before.Taint[i], after.Taint[i]
		same = math.Abs(a.X-b.X) <= maskMoveSlack && math.Abs(a.Y-b.Y) <= maskMoveSlack &&
			math.Abs(a.Width-b.Width) <= maskMoveSlack && math.Abs(a.Height-b.Height) <= maskMoveSlack
	}
	if !same {
		return newErr(contract.CodeInternal, sel, "a field a secret was typed into moved during the screenshot (its box, an attribute of it or of an element around it changed, or an animation runs on them): the screenshot is refused", nil)
	}
	return nil
}

func finite(f float64) bool    { return !math.IsNaN(f) && !math.IsInf(f, 0) }
func finitePos(f float64) bool { return finite(f) && f > 0 }

// maskOptions is the argument of the observer's maskRects.
func maskOptions(sensitive []string) map[string]any {
	return map[string]any{"sensitive": nonNil(sensitive)}
}

// observerCall calls one function of the observer in the active page
// and parses its answer: a driver's callResult.
type observerCall func(ctx context.Context, sel, fn string, args ...any) (pageResult, error)

// captureFunc captures the whole viewport as the browser shows it: the
// image (at most contract.MaxImageBytes) and its MIME type, PNG or JPEG.
type captureFunc func(ctx context.Context) ([]byte, string, error)

// shootMasked takes a masked screenshot, the one way both drivers do: of
// the viewport, or of the box of the element sel. It asks the observer
// (call) for the element's box, then for the boxes to mask right before
// and right after capture takes the whole viewport, refuses the
// screenshot if a tainted element moved in between, and paints and crops
// the image in Go (maskShot) at the scale of the image's width over the
// viewport's width the observer reported, before anyone keeps it.
func shootMasked(ctx context.Context, sel string, sensitive []string, call observerCall, capture captureFunc) (Extracted, error) {
	var crop *maskArea
	if sel != "" {
		r, err := call(ctx, sel, "rect", sel)
		if err != nil {
			return Extracted{}, err
		}
		crop = &maskArea{X: r.X, Y: r.Y, Width: r.Width, Height: r.Height}
		if !finite(crop.X) || !finite(crop.Y) || !finitePos(crop.Width) || !finitePos(crop.Height) {
			return Extracted{}, newErr(contract.CodeInternal, sel, "the observer reported a box that is not a box", nil)
		}
	}
	masks := func() (maskView, error) {
		r, err := call(ctx, sel, "maskRects", maskOptions(sensitive))
		if err != nil {
			return maskView{}, err
		}
		return maskViewOf(r)
	}
	before, err := masks()
	if err != nil {
		return Extracted{}, err
	}
	data, mime, err := capture(ctx)
	if err != nil {
		return Extracted{}, err
	}
	after, err := masks()
	if err != nil {
		return Extracted{}, err
	}
	if err := stillTainted(sel, before, after); err != nil {
		return Extracted{}, err
	}
	if len(data) == 0 || len(data) > contract.MaxImageBytes {
		return Extracted{}, newErr(contract.CodeInternal, sel, fmt.Sprintf("screenshot of %d bytes is outside 1..%d", len(data), contract.MaxImageBytes), nil)
	}
	// The bytes must be what they claim: decode the header.
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	switch {
	case err != nil:
		return Extracted{}, newErr(contract.CodeInternal, sel, "the screenshot is not an image", err)
	case format == "png" && mime == contract.MIMEPNG, format == "jpeg" && mime == contract.MIMEJPEG:
	default:
		return Extracted{}, newErr(contract.CodeInternal, sel, fmt.Sprintf("the screenshot is a %s image labelled %q", format, text.CutRunes(mime, 32)), nil)
	}
	scale, err := shotScale(sel, cfg.Width, cfg.Height, before, after)
	if err != nil {
		return Extracted{}, err
	}
	shot, err := maskShot(ctx, sel, data, mime, scale, crop, before, after)
	if err != nil {
		return Extracted{}, err
	}
	if shot.width == 0 { // returned as captured
		shot.width, shot.height = cfg.Width, cfg.Height
	}
	if len(shot.data) == 0 || len(shot.data) > contract.MaxImageBytes {
		return Extracted{}, newErr(contract.CodeInternal, sel, fmt.Sprintf("masked screenshot of %d bytes is outside 1..%d", len(shot.data), contract.MaxImageBytes), nil)
	}
	h := sha256.Sum256(shot.data)
	img := &contract.ImageArtifact{MIMEType: shot.mime, ByteSize: int64(len(shot.data)), ContentHash: hex.EncodeToString(h[:])}
	if shot.width > 0 && shot.height > 0 && shot.width <= 65535 && shot.height <= 65535 {
		img.Width, img.Height = shot.width, shot.height
	}
	return Extracted{
		Artifact: contract.Artifact{Type: contract.ArtifactScreenshot, Hash: img.ContentHash},
		Image:    img,
		Data:     shot.data,
		Masked:   shot.masked,
	}, nil
}

// shotScale is the image pixels per CSS pixel of a capture of the whole
// viewport w by h pixels: its width over the viewport's width the
// observer reported (before), which holds whatever the page zoom or the
// device scale. The viewport both answers reported must be the image's,
// within a CSS pixel: anything else (a resize, a viewport that is not
// what was captured) is refused rather than painted at a guessed scale.
func shotScale(sel string, w, h int, before, after maskView) (float64, error) {
	s := float64(w) / before.VW
	ok := finitePos(s)
	for _, v := range []maskView{before, after} {
		ok = ok && math.Abs(float64(w)/s-v.VW) <= 1 && math.Abs(float64(h)/s-v.VH) <= 1
	}
	if !ok {
		return 0, newErr(contract.CodeInternal, sel, fmt.Sprintf("a screenshot of %dx%d pixels is not of the viewport the observer reported (%gx%g CSS pixels, then %gx%g): refused", w, h, before.VW, before.VH, after.VW, after.VH), nil)
	}
	return s, nil
}

// maskedShot is a screenshot after masking.
type maskedShot struct {
	data          []byte
	mime          string
	masked        int // boxes painted
	width, height int // of the image, when maskShot decoded it
}

// maskShot paints the boxes of views (top-level viewport CSS pixels) over
// the screenshot data of the whole viewport (a PNG or a JPEG, as mime
// says), scale image pixels to a CSS pixel, then crops it to crop (the
// element's box, in the same pixels; nil: the whole viewport) and returns
// the image to store. An image with nothing to paint or crop is returned
// as it is; one that was painted or cropped is re-encoded: PNG (fastest
// compression) or, from a JPEG capture or when the PNG is past
// contract.MaxImageBytes, JPEG.
func maskShot(ctx context.Context, sel string, data []byte, mime string, scale float64, crop *maskArea, views ...maskView) (maskedShot, error) {
	n := 0
	for _, v := range views {
		n += len(v.Rects) + len(v.Taint)
	}
	if n == 0 && crop == nil && len(data) <= contract.MaxImageBytes {
		return maskedShot{data: data, mime: mime}, nil
	}
	c, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return maskedShot{}, newErr(contract.CodeInternal, sel, "the screenshot to mask does not decode", err)
	}
	if c.Width*c.Height > maxMaskPixels {
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
	px := func(a maskArea, pad int) image.Rectangle {
		return image.Rect(
			int(math.Floor(a.X*scale))-pad,
			int(math.Floor(a.Y*scale))-pad,
			int(math.Ceil((a.X+a.Width)*scale))+pad,
			int(math.Ceil((a.Y+a.Height)*scale))+pad,
		).Add(b.Min).Intersect(b)
	}
	out := b
	if crop != nil {
		if out = px(*crop, 0); out.Empty() {
			return maskedShot{}, newErr(contract.CodeInternal, sel, "the element is outside the captured viewport", nil)
		}
	}
	fill := image.NewUniform(MaskColor)
	painted := 0
	for _, v := range views {
		for _, a := range append(v.Rects[:len(v.Rects):len(v.Rects)], v.Taint...) {
			r := px(a, maskPad)
			if r.Empty() {
				continue
			}
			draw.Draw(img, r, fill, image.Point{}, draw.Src)
			if r.Overlaps(out) {
				painted++
			}
		}
	}
	if painted == 0 && crop == nil && len(data) <= contract.MaxImageBytes {
		return maskedShot{data: data, mime: mime}, nil
	}
	var final image.Image = img
	if out != b {
		sub, ok := img.(interface {
			SubImage(image.Rectangle) image.Image
		})
		if !ok {
			return maskedShot{}, newErr(contract.CodeInternal, sel, "the screenshot cannot be cropped", nil)
		}
		final = sub.SubImage(out)
	}
	if err := ctx.Err(); err != nil {
		return maskedShot{}, ctxErr(ctx)
	}
	shot := maskedShot{masked: painted, width: out.Dx(), height: out.Dy()}
	var buf bytes.Buffer
	if mime != contract.MIMEJPEG {
		enc := png.Encoder{CompressionLevel: png.BestSpeed}
		if err := enc.Encode(&buf, final); err != nil {
			return maskedShot{}, newErr(contract.CodeInternal, sel, "the masked screenshot does not encode", err)
		}
		if buf.Len() <= contract.MaxImageBytes {
			shot.data, shot.mime = buf.Bytes(), contract.MIMEPNG
			return shot, nil
		}
		buf.Reset()
	}
	if err := jpeg.Encode(&buf, final, &jpeg.Options{Quality: maskJPEGQuality}); err != nil {
		return maskedShot{}, newErr(contract.CodeInternal, sel, "the screenshot does not encode as JPEG", err)
	}
	shot.data, shot.mime = buf.Bytes(), contract.MIMEJPEG
	return shot, nil
}

// Package thumb scales screenshots down to thumbnails: one implementation
// for the HTML report's timeline and the popup's steps (the native host
// sends them).
package thumb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	_ "image/png" // screenshots are PNG
)

// MaxPixels is the largest image Make decodes (its header's width times
// height): larger ones get no thumbnail. A screenshot has at most about
// 4M pixels; decoding costs time and memory by the pixel, whatever the
// file's size (a PNG of a few KB can declare millions of them).
const MaxPixels = 8 << 20

// ErrNotDecoded says that an image is not one Make decodes.
var ErrNotDecoded = errors.New("thumb: not decoded")

// Check returns the pixels Make would decode of an image (its header's
// width times height), or an error wrapping ErrNotDecoded when Make would
// refuse it: not a PNG or JPEG, over MaxPixels, or a PNG of 16 bits per
// channel or interlaced (which cost several times as much to decode, and
// which no browser's screenshot is).
func Check(data []byte) (int, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return 0, fmt.Errorf("%w: not a PNG or JPEG", ErrNotDecoded)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > MaxPixels || cfg.Height > MaxPixels || cfg.Width*cfg.Height > MaxPixels {
		return 0, fmt.Errorf("%w: %d×%d pixels is over %d", ErrNotDecoded, cfg.Width, cfg.Height, MaxPixels)
	}
	if format == "png" {
		// The header chunk follows the 8-byte signature: length, "IHDR",
		// width, height, bit depth (24), colour type, compression,
		// filter, interlace method (28).
		if len(data) < 29 || string(data[12:16]) != "IHDR" || binary.BigEndian.Uint32(data[8:12]) != 13 {
			return 0, fmt.Errorf("%w: a PNG without its header first", ErrNotDecoded)
		}
		if data[24] > 8 {
			return 0, fmt.Errorf("%w: a PNG of %d bits per channel", ErrNotDecoded, data[24])
		}
		if data[28] != 0 {
			return 0, fmt.Errorf("%w: an interlaced PNG", ErrNotDecoded)
		}
	}
	return cfg.Width * cfg.Height, nil
}

// Thumb is a scaled-down screenshot, a JPEG.
type Thumb struct {
	Data          []byte
	Width, Height int
}

// Make scales a PNG or JPEG screenshot down to fit in a box of maxWidth by
// maxHeight pixels (never up), as a JPEG of the given quality; ok is false
// for an image it cannot decode or that Check refuses (the decoder is
// given only images Check accepts).
func Make(data []byte, maxWidth, maxHeight, quality int) (Thumb, bool) {
	if _, err := Check(data); err != nil {
		return Thumb{}, false
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return Thumb{}, false
	}
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	tw, th := w, h
	if tw > maxWidth {
		tw, th = maxWidth, max(1, h*maxWidth/w)
	}
	if th > maxHeight {
		tw, th = max(1, tw*maxHeight/th), maxHeight
	}
	// A box filter: each pixel of the thumbnail is the mean of the source
	// pixels it covers, composited onto white (a JPEG has no alpha).
	px := pixelReader(src)
	out := image.NewRGBA(image.Rect(0, 0, tw, th))
	for y := 0; y < th; y++ {
		y0, y1 := y*h/th, max((y+1)*h/th, y*h/th+1)
		for x := 0; x < tw; x++ {
			x0, x1 := x*w/tw, max((x+1)*w/tw, x*w/tw+1)
			var r, g, bl, n uint64
			for sy := y0; sy < y1; sy++ {
				for sx := x0; sx < x1; sx++ {
					c := px(b.Min.X+sx, b.Min.Y+sy)
					r, g, bl, n = r+uint64(c.R), g+uint64(c.G), bl+uint64(c.B), n+1
				}
			}
			o := out.Pix[y*out.Stride+x*4:]
			o[0], o[1], o[2], o[3] = uint8(r/n), uint8(g/n), uint8(bl/n), 0xff
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, out, &jpeg.Options{Quality: quality}); err != nil {
		return Thumb{}, false
	}
	return Thumb{Data: buf.Bytes(), Width: tw, Height: th}, true
}

// pixelReader returns a function that reads a pixel of img composited
// onto white, reading the pixels of the types PNG decodes screenshots to
// directly (no copy of the image is made).
func pixelReader(img image.Image) func(x, y int) color.RGBA {
	onWhite := func(c color.RGBA) color.RGBA { // c premultiplied
		k := 255 - c.A
		return color.RGBA{c.R + k, c.G + k, c.B + k, 255}
	}
	switch im := img.(type) {
	case *image.RGBA:
		return func(x, y int) color.RGBA {
			p := im.Pix[im.PixOffset(x, y):]
			return onWhite(color.RGBA{p[0], p[1], p[2], p[3]})
		}
	case *image.NRGBA:
		return func(x, y int) color.RGBA {
			p := im.Pix[im.PixOffset(x, y):]
			a := uint16(p[3])
			return onWhite(color.RGBA{uint8(uint16(p[0]) * a / 255), uint8(uint16(p[1]) * a / 255), uint8(uint16(p[2]) * a / 255), p[3]})
		}
	}
	return func(x, y int) color.RGBA {
		return onWhite(color.RGBAModel.Convert(img.At(x, y)).(color.RGBA))
	}
}

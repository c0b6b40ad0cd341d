package thumb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"testing"
)

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.NRGBA{0x20, 0x40, 0x80, 0xff})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withSize rewrites the width and height a PNG's header declares.
func withSize(b []byte, w, h uint32) []byte {
	out := append([]byte(nil), b...)
	binary.BigEndian.PutUint32(out[16:], w)
	binary.BigEndian.PutUint32(out[20:], h)
	binary.BigEndian.PutUint32(out[29:], crc32.ChecksumIEEE(out[12:29]))
	return out
}

func TestMake(t *testing.T) {
	for _, tc := range []struct {
		name         string
		w, h         int
		boxW, boxH   int
		wantW, wantH int
	}{
		{"wide", 1280, 800, 320, 200, 320, 200},
		{"tall, by height", 400, 4000, 320, 960, 96, 960},
		{"small, never up", 100, 50, 320, 200, 100, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th, ok := Make(pngOf(t, tc.w, tc.h), tc.boxW, tc.boxH, 70)
			if !ok || th.Width != tc.wantW || th.Height != tc.wantH {
				t.Fatalf("got %dx%d (%v), want %dx%d", th.Width, th.Height, ok, tc.wantW, tc.wantH)
			}
			img, err := jpegDecode(th.Data)
			if err != nil || img.Bounds().Dx() != tc.wantW {
				t.Fatalf("the thumbnail is not a JPEG of its size: %v", err)
			}
			r, g, b, _ := img.At(tc.wantW/2, tc.wantH/2).RGBA()
			if d := int(r>>8) - 0x20 + int(g>>8) - 0x40 + int(b>>8) - 0x80; d > 12 || d < -12 {
				t.Errorf("colour %x %x %x, want about 20 40 80", r>>8, g>>8, b>>8)
			}
		})
	}
	if _, ok := Make([]byte("not an image"), 320, 200, 70); ok {
		t.Error("made a thumbnail of junk")
	}
	if _, ok := Make(withSize(pngOf(t, 4, 4), 1<<15, 1<<15), 320, 200, 70); ok {
		t.Error("decoded an image whose header declares a billion pixels")
	}
}

func jpegDecode(b []byte) (image.Image, error) {
	img, _, err := image.Decode(bytes.NewReader(b))
	return img, err
}

// withIHDR rewrites a PNG header's byte at offset (24: bit depth, 28:
// interlace method) and its checksum.
func withIHDR(b []byte, offset int, v byte) []byte {
	out := append([]byte(nil), b...)
	out[offset] = v
	binary.BigEndian.PutUint32(out[29:], crc32.ChecksumIEEE(out[12:29]))
	return out
}

// pngOf16 is a PNG of 16 bits per channel.
func pngOf16(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA64(image.Rect(0, 0, w, h))
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestCheck: what Make refuses to decode, from the header alone: over
// MaxPixels, 16 bits per channel, interlaced (crafted images of a few
// bytes that would cost seconds and hundreds of MB to decode).
func TestCheck(t *testing.T) {
	small := pngOf(t, 4, 4)
	for _, tc := range []struct {
		name string
		data []byte
		want int // pixels; 0: refused
	}{
		{"a screenshot's size", withSize(small, 1280, 800), 1280 * 800},
		{"at most MaxPixels", withSize(small, 2048, 4096), 2048 * 4096},
		{"over MaxPixels", withSize(small, 4096, 4096), 0},
		{"16 bits per channel", pngOf16(t, 4, 4), 0},
		{"16 bits, 4096×4096", withSize(pngOf16(t, 4, 4), 4096, 4096), 0},
		{"16 bits, header edited", withIHDR(small, 24, 16), 0},
		{"interlaced", withIHDR(small, 28, 1), 0},
		{"junk", []byte("not an image"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Check(tc.data)
			if got != tc.want || (tc.want == 0) != errors.Is(err, ErrNotDecoded) {
				t.Errorf("got %d (%v), want %d", got, err, tc.want)
			}
			if tc.want == 0 {
				if _, ok := Make(tc.data, 320, 200, 70); ok {
					t.Error("Make decoded it")
				}
			}
		})
	}
	if _, ok := Make(pngOf(t, 64, 64), 320, 200, 70); !ok {
		t.Error("Make refused a small 8-bit PNG")
	}
}

package audit

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// TestExtractedViews: each extracted artifact is rendered by its type: a
// table as its header and rows, links as a list of text and address, text
// (and anything that does not parse as its type) as text; screenshots are
// left to the images.
func TestExtractedViews(t *testing.T) {
	long := strings.Repeat("x", MaxReportText+10)
	tests := []struct {
		name string
		art  contract.Artifact
		want extractView
	}{
		{"table", contract.Artifact{ID: "t", Type: contract.ArtifactTable, Value: `[["Order","Total"],["A-1",42],["A-2",null]]`},
			extractView{ID: "t", Type: "table", Head: []string{"Order", "Total"}, Rows: [][]string{{"A-1", "42"}, {"A-2", ""}}}},
		{"table of a header only", contract.Artifact{ID: "t", Type: contract.ArtifactTable, Value: `[["Order"]]`},
			extractView{ID: "t", Type: "table", Head: []string{"Order"}}},
		{"a table that is not one", contract.Artifact{ID: "t", Type: contract.ArtifactTable, Value: `{"rows": 1}`},
			extractView{ID: "t", Type: "table", Text: `{"rows": 1}`}},
		{"an empty table", contract.Artifact{ID: "t", Type: contract.ArtifactTable, Value: `[]`},
			extractView{ID: "t", Type: "table", Text: `[]`}},
		{"links", contract.Artifact{ID: "l", Type: contract.ArtifactLink, Value: `[{"text":"Home","href":"https://shop.example/"},{"text":"","href":"javascript:alert(1)"}]`},
			extractView{ID: "l", Type: "link", Links: []linkView{{"Home", "https://shop.example/"}, {"", "javascript:alert(1)"}}}},
		{"text", contract.Artifact{ID: "x", Type: contract.ArtifactText, Value: "Thank you, Ada", SourceSelector: "h1", SourceURL: "https://shop.example/done"},
			extractView{ID: "x", Type: "text", Text: "Thank you, Ada", Source: "h1", URL: "https://shop.example/done"}},
		{"long text", contract.Artifact{ID: "x", Type: contract.ArtifactText, Value: long},
			extractView{ID: "x", Type: "text", Text: clip(long, MaxReportText), Cut: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Step{Artifacts: []contract.Artifact{{ID: "shot", Type: contract.ArtifactScreenshot, Value: "artifacts/shot.png"}, tt.art}}
			got := extracted(s, 4, "step-4")
			tt.want.Number, tt.want.Anchor = 4, "step-4"
			if len(got) != 1 || !reflect.DeepEqual(got[0], tt.want) {
				t.Errorf("got %+v, want [%+v]", got, tt.want)
			}
		})
	}
}

// TestExtractedTableBound: a long table shows its first rows and counts
// the rest.
func TestExtractedTableBound(t *testing.T) {
	var b strings.Builder
	b.WriteString(`[["n"]`)
	for i := 0; i < MaxReportTableRows+5; i++ {
		b.WriteString(`,["r"]`)
	}
	b.WriteString("]")
	got := extracted(&Step{Artifacts: []contract.Artifact{{Type: contract.ArtifactTable, Value: b.String()}}}, 1, "step-1")
	if len(got) != 1 || len(got[0].Rows) != MaxReportTableRows || got[0].More != 5 {
		t.Errorf("got %d rows and %d more, want %d and 5", len(got[0].Rows), got[0].More, MaxReportTableRows)
	}
}

// TestThumbnail: a screenshot is scaled down into the thumbnail box,
// keeping its aspect, as a JPEG; a small one is not scaled up; what is not
// a PNG or JPEG gets none.
func TestThumbnail(t *testing.T) {
	shot := func(w, h int) []byte {
		img := image.NewRGBA(image.Rect(0, 0, w, h))
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				img.Set(x, y, color.RGBA{uint8(x), uint8(y), 128, 255})
			}
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	tests := []struct {
		name         string
		data         []byte
		ok           bool
		wantW, wantH int
	}{
		{"viewport", shot(1280, 800), true, 320, 200},
		{"tall", shot(400, 1600), true, 50, 200},
		{"small", shot(100, 50), true, 100, 50},
		{"not an image", []byte("GIF89a nope"), false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th, ok := thumbnail(tt.data)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if th.width != tt.wantW || th.height != tt.wantH || th.mime != contract.MIMEJPEG {
				t.Errorf("got %dx%d %s, want %dx%d %s", th.width, th.height, th.mime, tt.wantW, tt.wantH, contract.MIMEJPEG)
			}
			cfg, err := jpeg.DecodeConfig(bytes.NewReader(th.data))
			if err != nil || cfg.Width != tt.wantW || cfg.Height != tt.wantH {
				t.Errorf("the thumbnail decodes as %+v, %v", cfg, err)
			}
		})
	}
}

// TestApproverText: who approved, and through which channel when the
// record names one.
func TestApproverText(t *testing.T) {
	tests := []struct {
		channel contract.ApprovalChannel
		want    string
	}{
		{"", "alice"},
		{contract.ApprovalChannelLive, "alice in the live console"},
		{contract.ApprovalChannelPopup, "alice in the extension's popup"},
		{contract.ApprovalChannelRule, "alice (a rule: no person was asked)"},
		{contract.ApprovalChannelProgram, "alice (given by the program that ran the session, not through an aegis channel)"},
	}
	for _, tt := range tests {
		if got := approverText(&contract.ApprovalRef{Approver: "alice", Channel: tt.channel}); got != tt.want {
			t.Errorf("approverText(channel %q) = %q, want %q", tt.channel, got, tt.want)
		}
	}
}

// TestResultClass: one colour per decision result, the palette's.
func TestResultClass(t *testing.T) {
	tests := []struct {
		result string
		failed bool
		want   string
	}{
		{"allowed", false, "ok"},
		{"approved", false, "ok"},
		{"allowed", true, "warn"},
		{"paused", false, "warn"},
		{"denied", false, "bad"},
		{"denied", true, "bad"},
		{"", false, "bad"},
	}
	for _, tt := range tests {
		if got := resultClass(tt.result, tt.failed); got != tt.want {
			t.Errorf("resultClass(%q, %v) = %q, want %q", tt.result, tt.failed, got, tt.want)
		}
	}
}

// TestStepThumbBudget: the timeline's thumbnail is made of a step's last
// screenshot only, within the report's budget of decoded pixels, and never
// of a picture that costs more to decode than a screenshot (16 bits per
// channel, interlaced, over thumb.MaxPixels: crafted headers of a few
// bytes); a step without one says why.
func TestStepThumbBudget(t *testing.T) {
	dir := t.TempDir()
	shot := func(w, h int) []byte {
		var buf bytes.Buffer
		if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, w, h))); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	// header rewrites a PNG's header field at offset (16 width, 20
	// height: 4 bytes; 24 bit depth, 28 interlace: 1 byte) and its CRC.
	header := func(b []byte, offset int, v uint32) []byte {
		out := append([]byte(nil), b...)
		if offset < 24 {
			binary.BigEndian.PutUint32(out[offset:], v)
		} else {
			out[offset] = byte(v)
		}
		binary.BigEndian.PutUint32(out[29:], crc32.ChecksumIEEE(out[12:29]))
		return out
	}
	small := shot(64, 40)
	b := &Bundle{images: map[string]string{}}
	steps := 0
	step := func(pics ...[]byte) *Step {
		s := &Step{}
		steps++
		for i, p := range pics {
			name := fmt.Sprintf("p%d-%d.png", steps, i)
			uri, path := "artifacts/"+name, filepath.Join(dir, name)
			if err := os.WriteFile(path, p, 0o644); err != nil {
				t.Fatal(err)
			}
			b.images[uri] = path
			s.Images = append(s.Images, contract.ImageArtifact{ID: uri, URI: uri, MIMEType: contract.MIMEPNG})
		}
		return s
	}
	tests := []struct {
		name     string
		step     *Step
		pixels   int
		wantID   string // the thumbnail's image; "" for none
		wantNote string
	}{
		{"the last screenshot", step(small, shot(32, 20)), 64 * 40, "artifacts/p1-1.png", ""},
		{"16 bits per channel", step(header(small, 24, 16)), 1 << 30, "", "no thumbnail: a PNG of 16 bits per channel"},
		{"interlaced", step(header(small, 28, 1)), 1 << 30, "", "no thumbnail: an interlaced PNG"},
		{"over MaxPixels", step(header(header(small, 16, 4096), 20, 4096)), 1 << 30, "", "no thumbnail: 4096×4096 pixels is over 8388608"},
		{"past the pixel budget", step(small), 64*40 - 1, "", "no thumbnail: the report's budget of pixels to decode is used up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			budget := imageBudget{bytes: MaxReportImageBytes, pixels: tt.pixels}
			sv := buildStep(b, tt.step, 1, "step-1", &budget)
			gotID := ""
			if sv.Thumb != nil {
				gotID = sv.Thumb.ID
			}
			if gotID != tt.wantID || sv.ThumbNote != tt.wantNote {
				t.Errorf("thumbnail of %q, note %q; want of %q, note %q", gotID, sv.ThumbNote, tt.wantID, tt.wantNote)
			}
			if len(sv.Images) != len(tt.step.Images) || sv.Images[0].Src == "" {
				t.Errorf("the screenshots are not all embedded: %+v", sv.Images)
			}
			if tt.wantID != "" && budget.pixels != tt.pixels-32*20 {
				t.Errorf("%d pixels left of %d, want the last screenshot's 640 spent", budget.pixels, tt.pixels)
			}
		})
	}
}

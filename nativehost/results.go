package nativehost

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	_ "image/png" // the evidence's screenshots
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/secrets"
	"github.com/aegis-run/aegis/session"
)

// What the popup shows of a session besides its steps: a small picture of
// every screenshot the evidence holds (session.thumbnail), the values an
// approval would submit, and the result at the end (extracted data, counts).

// EventThumbnail carries a small copy of one screenshot the session
// stored in its evidence (masked as the evidence holds it): ThumbnailEvent.
const EventThumbnail = "session.thumbnail"

// Bounds of what the popup is sent. A frame to the extension is at most
// MaxOutbound (1 MiB): a thumbnail travels alone, and the result's
// extracted values are bounded together.
const (
	// ThumbnailWidth is the largest width of a thumbnail, in pixels.
	ThumbnailWidth = 320
	// MaxThumbnailBytes bounds a thumbnail's JPEG; a larger one is not sent.
	MaxThumbnailBytes = 256 << 10
	// MaxResultValues bounds the extracted values of EndedEvent, in bytes
	// of their text together; each value gets at most MaxResultValue.
	MaxResultValues = 384 << 10
	// MaxResultValue bounds one extracted value, in bytes.
	MaxResultValue = 64 << 10
	// MaxReason bounds the Navigator's reason on a step, in characters.
	MaxReason = 300
)

// ThumbnailEvent is a small JPEG of one screenshot of the evidence: the
// screenshot's path in the bundle (the value of its artifact), the action
// that took it, and the picture (base64, at most ThumbnailWidth wide).
type ThumbnailEvent struct {
	URI      string `json:"uri"`
	ActionID string `json:"actionId,omitempty"`
	Mime     string `json:"mime"`
	Data     string `json:"data"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
}

// ResultView is the end of a session as the popup's result panel shows
// it: counts and the extracted artifacts, in order.
type ResultView struct {
	ActionsExecuted int            `json:"actionsExecuted"`
	Denied          int            `json:"denied"`
	Approved        int            `json:"approved"`
	DurationMs      int64          `json:"durationMs"`
	LastURL         string         `json:"lastUrl,omitempty"`
	Artifacts       []ArtifactView `json:"artifacts"`
}

// ArtifactView is one extracted artifact: its type, value (for a table,
// the JSON rows; for a screenshot, its path in the bundle, whose picture
// came as a session.thumbnail), page, and whether the value was cut.
type ArtifactView struct {
	ID        string                `json:"id"`
	Type      contract.ArtifactType `json:"type"`
	Value     string                `json:"value"`
	SourceURL string                `json:"sourceUrl,omitempty"`
	Truncated bool                  `json:"truncated,omitempty"`
}

// SubmitValue is one value an action to approve would submit: a typed
// text, a selected option, a URL, a request's fields. Secrets appear as
// their {{secret:NAME}} placeholders, never as values.
type SubmitValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// resultView returns the result panel's data of a session's result, with
// every extracted value through the secrets' redaction and bounded.
func resultView(r session.Result, set *secrets.Set) *ResultView {
	v := &ResultView{
		ActionsExecuted: r.Output.ActionsExecuted, Denied: r.Denied, Approved: r.Approved,
		DurationMs: int64(r.Output.DurationMs), Artifacts: []ArtifactView{},
	}
	if r.Output.LastURL != nil {
		v.LastURL = session.Sanitize(set.Redact(*r.Output.LastURL), 2048)
	}
	budget := MaxResultValues
	for _, a := range r.Artifacts {
		av := ArtifactView{ID: bound(a.ID, 128), Type: a.Type, SourceURL: session.Sanitize(set.Redact(a.SourceURL), 2048)}
		limit := min(MaxResultValue, budget)
		av.Value, av.Truncated = cutValue(a.Type, set.Redact(a.Value), limit)
		budget -= len(av.Value)
		v.Artifacts = append(v.Artifacts, av)
	}
	return v
}

// cutValue bounds an extracted value to limit bytes: a table loses its
// last rows (it stays a JSON list of rows), text is cut at a rune.
func cutValue(t contract.ArtifactType, s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	if t == contract.ArtifactTable {
		var rows [][]string
		if json.Unmarshal([]byte(s), &rows) == nil {
			for len(rows) > 0 {
				rows = rows[:len(rows)-1]
				if b, err := json.Marshal(rows); err == nil && len(b) <= limit {
					return string(b), true
				}
			}
			return "[]", true
		}
	}
	if limit <= 0 {
		return "", true
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

// submitValues lists what an action to approve would submit, in the
// words of the action as proposed (placeholders for secrets) and through
// the secrets' redaction besides.
func submitValues(req session.ApprovalRequest, set *secrets.Set) []SubmitValue {
	var out []SubmitValue
	add := func(name, value string) {
		if value != "" {
			out = append(out, SubmitValue{Name: name, Value: bound(set.Redact(value), 1000)})
		}
	}
	if e := req.Effect; e != nil {
		add("request", strings.TrimSpace(e.Method+" "+e.Origin+e.Path))
		add("fields (names only)", strings.Join(e.Fields, ", "))
		return out
	}
	a := req.Action
	switch a.Type {
	case contract.ActType:
		add("text", a.Text)
	case contract.ActSelect:
		add("option", a.Value)
	case contract.ActNavigate:
		add("url", a.URL)
	}
	return out
}

// shotURI is the path of a screenshot in a bundle.
var shotURI = regexp.MustCompile(`^artifacts/[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.(png|jpg|jpeg)$`)

// thumbnail reads the screenshot uri of the bundle dir and returns its
// thumbnail event: the image scaled to at most ThumbnailWidth wide, as a
// JPEG, with the action that took it (from its image record).
func thumbnail(dir, uri string) (ThumbnailEvent, error) {
	if !shotURI.MatchString(uri) {
		return ThumbnailEvent{}, fmt.Errorf("not a screenshot of the bundle: %q", bound(uri, 100))
	}
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(uri)))
	if err != nil {
		return ThumbnailEvent{}, err
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return ThumbnailEvent{}, fmt.Errorf("decode %s: %w", uri, err)
	}
	small := downscale(img, ThumbnailWidth)
	var out bytes.Buffer
	if err := jpeg.Encode(&out, small, &jpeg.Options{Quality: 70}); err != nil {
		return ThumbnailEvent{}, err
	}
	if out.Len() > MaxThumbnailBytes {
		return ThumbnailEvent{}, fmt.Errorf("the thumbnail of %s is %d bytes", uri, out.Len())
	}
	ev := ThumbnailEvent{URI: uri, Mime: "image/jpeg", Data: base64.StdEncoding.EncodeToString(out.Bytes()), Width: small.Bounds().Dx(), Height: small.Bounds().Dy()}
	var rec contract.ImageArtifact
	recPath := strings.TrimSuffix(uri, filepath.Ext(uri)) + ".json"
	if rb, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(recPath))); err == nil && json.Unmarshal(rb, &rec) == nil {
		ev.ActionID = bound(rec.ActionID, 128)
	}
	return ev, nil
}

// downscale returns img at most width pixels wide (the aspect kept),
// each pixel the average of the pixels it covers.
func downscale(img image.Image, width int) image.Image {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w <= width || w == 0 || h == 0 {
		return img
	}
	nh := max(1, h*width/w)
	out := image.NewRGBA(image.Rect(0, 0, width, nh))
	for y := 0; y < nh; y++ {
		y0, y1 := b.Min.Y+y*h/nh, b.Min.Y+max((y+1)*h/nh, y*h/nh+1)
		for x := 0; x < width; x++ {
			x0, x1 := b.Min.X+x*w/width, b.Min.X+max((x+1)*w/width, x*w/width+1)
			var r, g, bl, n uint64
			// At most 4 by 4 samples a pixel: enough for a thumbnail.
			dy, dx := max(1, (y1-y0)/4), max(1, (x1-x0)/4)
			for sy := y0; sy < y1; sy += dy {
				for sx := x0; sx < x1; sx += dx {
					cr, cg, cb, _ := img.At(sx, sy).RGBA()
					r, g, bl, n = r+uint64(cr), g+uint64(cg), bl+uint64(cb), n+1
				}
			}
			i := out.PixOffset(x, y)
			out.Pix[i], out.Pix[i+1], out.Pix[i+2], out.Pix[i+3] = uint8(r/n>>8), uint8(g/n>>8), uint8(bl/n>>8), 0xff
		}
	}
	return out
}

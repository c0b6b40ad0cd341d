package nativehost

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/thumb"
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
	// ThumbnailWidth is the largest width of a thumbnail, in pixels, and
	// MaxThumbnailHeight its largest height (a tall page is narrower).
	ThumbnailWidth     = 320
	MaxThumbnailHeight = 960
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

// resultFor returns the result panel's data of a session's result whose
// session.ended frame fits in MaxOutbound: the extracted values get less
// room until it does (JSON escapes can make a value six times its size).
func resultFor(ended EndedEvent, r session.Result, set *secrets.Set) *ResultView {
	for budget := MaxResultValues; ; budget /= 2 {
		ended.Result = resultView(r, set, budget)
		b, err := json.Marshal(ended)
		if err == nil && len(b) <= MaxOutbound-4096 || budget == 0 {
			return ended.Result
		}
	}
}

// resultView returns the result panel's data of a session's result, with
// every extracted value through the secrets' redaction and bounded: each
// to MaxResultValue bytes, all to budget.
func resultView(r session.Result, set *secrets.Set, budget int) *ResultView {
	v := &ResultView{
		ActionsExecuted: r.Output.ActionsExecuted, Denied: r.Denied, Approved: r.Approved,
		DurationMs: int64(r.Output.DurationMs), Artifacts: []ArtifactView{},
	}
	if r.Output.LastURL != nil {
		v.LastURL = session.Sanitize(set.Redact(*r.Output.LastURL), 2048)
	}
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
// JPEG (package internal/thumb, the report's too), with the action that
// took it (from its image record).
func thumbnail(dir, uri string) (ThumbnailEvent, error) {
	if !shotURI.MatchString(uri) {
		return ThumbnailEvent{}, fmt.Errorf("not a screenshot of the bundle: %q", bound(uri, 100))
	}
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(uri)))
	if err != nil {
		return ThumbnailEvent{}, err
	}
	small, ok := thumb.Make(b, ThumbnailWidth, MaxThumbnailHeight, 70)
	if !ok {
		return ThumbnailEvent{}, fmt.Errorf("%s: not a PNG or JPEG of at most %d pixels", uri, thumb.MaxPixels)
	}
	if len(small.Data) > MaxThumbnailBytes {
		return ThumbnailEvent{}, fmt.Errorf("the thumbnail of %s is %d bytes", uri, len(small.Data))
	}
	ev := ThumbnailEvent{URI: uri, Mime: "image/jpeg", Data: base64.StdEncoding.EncodeToString(small.Data), Width: small.Width, Height: small.Height}
	var rec contract.ImageArtifact
	recPath := strings.TrimSuffix(uri, filepath.Ext(uri)) + ".json"
	if rb, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(recPath))); err == nil && json.Unmarshal(rb, &rec) == nil {
		ev.ActionID = bound(rec.ActionID, 128)
	}
	return ev, nil
}

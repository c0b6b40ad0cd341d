package nativehost

import (
	"encoding/json"
	"strings"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
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
	// Omitted counts the last artifacts left out: their ids and pages
	// alone did not fit in the frame.
	Omitted int `json:"omittedArtifacts,omitempty"`
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

// maxEndedFrame bounds the JSON of a session.ended event: MaxOutbound less
// room for the frame's envelope.
const maxEndedFrame = MaxOutbound - 4096

// resultFor returns the result panel's data of a session's result, sized
// in one pass so that the session.ended frame carrying it fits in
// maxEndedFrame: every extracted value goes through the secrets'
// redaction and is bounded (each to MaxResultValue bytes, all to
// MaxResultValues, and all to the room their JSON escapes leave in the
// frame, which can be six times their size); when even the artifacts'
// other fields (ids, pages) do not fit, the last artifacts are dropped and
// counted, so that the frame that ends the session is always sent.
func resultFor(ended EndedEvent, r session.Result, set *secrets.Set) *ResultView {
	v := &ResultView{
		ActionsExecuted: r.Output.ActionsExecuted, Denied: r.Denied, Approved: r.Approved,
		DurationMs: int64(r.Output.DurationMs), Artifacts: []ArtifactView{},
	}
	if r.Output.LastURL != nil {
		v.LastURL = session.Sanitize(set.Redact(*r.Output.LastURL), 2048)
	}
	values := make([]string, 0, len(r.Artifacts))
	for _, a := range r.Artifacts {
		// Truncated is set for the measure: the most an artifact's fields
		// take besides its value.
		v.Artifacts = append(v.Artifacts, ArtifactView{ID: bound(a.ID, 128), Type: a.Type, SourceURL: session.Sanitize(set.Redact(a.SourceURL), 2048), Truncated: true})
		values = append(values, a.Value)
	}
	// The frame without the values, and with the largest count of dropped
	// artifacts there could be.
	v.Omitted = len(v.Artifacts)
	ended.Result = v
	room := maxEndedFrame - jsonLen(ended)
	v.Omitted = 0
	for room < 0 && len(v.Artifacts) > 0 {
		last := len(v.Artifacts) - 1
		room += jsonLen(v.Artifacts[last]) + 1 // and its comma
		v.Artifacts = v.Artifacts[:last]
		v.Omitted++
	}
	budget := MaxResultValues
	for i := range v.Artifacts {
		av := &v.Artifacts[i]
		var cost int
		av.Value, av.Truncated, cost = cutValue(av.Type, set.Redact(values[i]), min(MaxResultValue, budget), max(room, 0))
		budget -= len(av.Value)
		room -= cost
	}
	return v
}

// jsonLen is the length of v's JSON (encoding/json's, as Conn.Notify
// writes it).
func jsonLen(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return maxEndedFrame + 1
	}
	return len(b)
}

// escapedLen is what s adds to a JSON document as the contents of a
// string: its length once encoding/json escaped it.
func escapedLen(s string) int {
	return jsonLen(s) - 2
}

// cutValue bounds an extracted value to limit bytes and to room bytes once
// escaped as a JSON string, and returns what it kept, whether it cut, and
// what the kept value adds to a JSON document (escapedLen): a table loses
// its last rows (it stays a JSON list of rows; each row is encoded once
// and the rows that fit are kept), text is cut at a rune.
func cutValue(t contract.ArtifactType, s string, limit, room int) (string, bool, int) {
	if len(s) <= limit {
		if n := escapedLen(s); n <= room {
			return s, false, n
		}
	}
	if t == contract.ArtifactTable {
		var rows [][]string
		if json.Unmarshal([]byte(s), &rows) == nil {
			return cutTable(rows, limit, room)
		}
	}
	// Each byte takes at least one byte escaped: no more than limit and
	// room bytes, then the longest prefix that fits once escaped.
	cut := len(text.CutBytes(s, min(len(s), limit, room)))
	if n := escapedLen(s[:cut]); n <= room {
		return s[:cut], true, n
	}
	lo, hi := 0, cut // s[:lo] fits, s[:hi] does not
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if escapedLen(s[:mid]) <= room {
			lo = mid
		} else {
			hi = mid
		}
	}
	cut = len(text.CutBytes(s, lo))
	return s[:cut], true, escapedLen(s[:cut])
}

// cutTable returns the JSON of the longest prefix of rows (the table was
// cut) within limit bytes and within room bytes escaped (at least "[]"),
// with its escaped length. Each row is encoded once: the JSON of a prefix of rows is "[",
// the rows' JSON joined by ",", and "]", and escaping adds up the same way.
func cutTable(rows [][]string, limit, room int) (string, bool, int) {
	var b strings.Builder
	b.WriteByte('[')
	size, cost := 2, 2 // "[]"
	for i, r := range rows {
		rb, err := json.Marshal(r)
		if err != nil {
			break
		}
		n, c := len(rb), escapedLen(string(rb))
		if i > 0 {
			n, c = n+1, c+1
		}
		if size+n > limit || cost+c > room {
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(rb)
		size, cost = size+n, cost+c
	}
	b.WriteByte(']')
	return b.String(), true, cost // at least "[]", an empty table
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

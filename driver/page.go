package driver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// MaxPagePayload bounds the JSON the observer may send back for one
// observation. The observer's own bounds keep it far below; a page that
// tampers with the observer cannot make the driver read more.
const MaxPagePayload = 16 << 20

// pageObservation is the page part of an observation, as the observer
// returns it, after parsePage has checked and bounded it.
type pageObservation struct {
	URL         string
	Title       string
	Viewport    contract.Viewport
	Text        string
	Affordances []contract.Affordance
	// Snapshot is the canonical JSON (RFC 8785) of the DOM snapshot.
	Snapshot []byte
	Stats    pageStats
}

// pageStats are the observer's counters, for tests and benchmarks.
type pageStats struct {
	Elements           int     `json:"elements"`
	Candidates         int     `json:"candidates"`
	Affordances        int     `json:"affordances"`
	AffordancesDropped int     `json:"affordancesDropped"`
	SelectorFailed     int     `json:"selectorFailed"`
	WalkTruncated      bool    `json:"walkTruncated"`
	TooDeep            int     `json:"tooDeep"`
	SnapshotDropped    int     `json:"snapshotDropped"`
	TextTruncated      bool    `json:"textTruncated"`
	Masked             int     `json:"masked"`
	Frames             int     `json:"frames"`
	CrossOriginFrames  int     `json:"crossOriginFrames"`
	ShadowRoots        int     `json:"shadowRoots"`
	Ms                 float64 `json:"ms"`
	WalkMs             float64 `json:"walkMs"`
	BoxMs              float64 `json:"boxMs"`
	SelectorMs         float64 `json:"selectorMs"`
	// PeerRefused counts the WebRTC attempts the WebRTC guard
	// (extension/webrtc.js) refused in the page since the previous
	// observation.
	PeerRefused int `json:"peerRefused"`
}

type wireAffordance struct {
	Selector string `json:"selector"`
	Role     string `json:"role"`
	Text     string `json:"text"`
	Hint     string `json:"hint"`
	Generic  bool   `json:"generic"`
}

type wirePage struct {
	OK          bool             `json:"ok"`
	Code        string           `json:"code"`
	Msg         string           `json:"msg"`
	URL         string           `json:"url"`
	Title       string           `json:"title"`
	Viewport    wireViewport     `json:"viewport"`
	Text        string           `json:"text"`
	Affordances []wireAffordance `json:"affordances"`
	Snapshot    json.RawMessage  `json:"snapshot"`
	Stats       pageStats        `json:"stats"`
}

type wireViewport struct {
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	DPR    float64 `json:"dpr"`
}

// emptySnapshot stands in for a snapshot that broke its bound.
const emptySnapshot = `{"root":["#document",{},["#truncated"]],"truncated":{"snapshot":-1},"v":1}`

// parsePage checks and bounds what the observer returned. Everything in it
// is page-controlled: it must be one JSON object of the expected shape; any
// string longer than its bound is cut (text gets TextTruncatedMarker), an
// affordance without a valid selector is dropped, hints outside the enum
// are dropped, and a snapshot that is not JSON is an error while one past
// its bound is replaced by a stub.
func parsePage(data []byte, o ObserveOptions) (pageObservation, error) {
	var po pageObservation
	if len(data) > MaxPagePayload {
		return po, newErr(contract.CodeInternal, "", fmt.Sprintf("observer returned %d bytes, more than %d", len(data), MaxPagePayload), nil)
	}
	var w wirePage
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil {
		return po, newErr(contract.CodeInternal, "", "observer returned malformed JSON", err)
	}
	if d.More() {
		return po, newErr(contract.CodeInternal, "", "observer returned data after its JSON", nil)
	}
	if !w.OK {
		return po, pageError(w.Code, "", w.Msg, 0)
	}
	po.URL = w.URL
	po.Title = text.CutRunes(strings.ToValidUTF8(w.Title, "\uFFFD"), MaxTitle)
	po.Viewport = contract.Viewport{
		Width:             clampInt(w.Viewport.Width, 1, 16384),
		Height:            clampInt(w.Viewport.Height, 1, 16384),
		DeviceScaleFactor: w.Viewport.DPR,
	}
	if !(po.Viewport.DeviceScaleFactor > 0 && po.Viewport.DeviceScaleFactor <= 16) {
		po.Viewport.DeviceScaleFactor = 1
	}
	po.Text = boundText(w.Text, o.MaxTextChars)
	limit := min(o.MaxAffordances, MaxAffordances)
	for _, a := range w.Affordances {
		if len(po.Affordances) >= limit {
			break
		}
		if a.Selector == "" || len(a.Selector) > MaxSelector || !utf8.ValidString(a.Selector) {
			continue
		}
		aff := contract.Affordance{
			Selector: a.Selector,
			Role:     text.CutRunes(strings.ToValidUTF8(a.Role, "\uFFFD"), MaxRole),
			Text:     text.CutRunes(strings.ToValidUTF8(a.Text, "\uFFFD"), min(o.MaxAffordanceText, MaxAffordanceText)),
			Generic:  a.Generic,
		}
		switch h := contract.ActionHint(a.Hint); h {
		case contract.HintClick, contract.HintType, contract.HintSelect, contract.HintScroll:
			aff.ActionHint = h
		}
		po.Affordances = append(po.Affordances, aff)
	}
	if len(w.Snapshot) == 0 {
		return po, newErr(contract.CodeInternal, "", "observer returned no snapshot", nil)
	}
	canon, err := canonicalSnapshot(w.Snapshot)
	if err != nil {
		return po, newErr(contract.CodeInternal, "", "observer returned a snapshot that is not canonicalizable JSON", err)
	}
	if utf8.RuneCount(canon) > min(o.MaxSnapshotChars, MaxSnapshotChars) {
		canon = []byte(emptySnapshot)
	}
	po.Snapshot = canon
	po.Stats = w.Stats
	return po, nil
}

// observerOptions is the options argument of the observer's observe: the
// limits of o (merged already) and its sensitive selectors. Both drivers
// send it.
func observerOptions(o ObserveOptions) map[string]any {
	return map[string]any{
		"maxElements":       o.MaxElements,
		"maxDepth":          o.MaxDepth,
		"maxTextChars":      o.MaxTextChars,
		"maxSnapshotChars":  o.MaxSnapshotChars,
		"maxAffordances":    o.MaxAffordances,
		"maxAffordanceText": o.MaxAffordanceText,
		"maxSelector":       o.MaxSelector,
		"sensitive":         nonNil(o.SensitiveSelectors),
	}
}

// observation builds the Observation both drivers return from a parsed
// observer answer po, captured at captured. The active URL is browserURL
// (what the browser says the page is), else the page's own URL, else
// about:blank; tabID is nil for a driver without tab ids. The caller adds
// its artifact records.
func observation(cfg Config, po pageObservation, browserURL string, tabID *int, captured time.Time) contract.Observation {
	active := boundURL(browserURL)
	if active == "" {
		active = boundURL(po.URL)
	}
	if active == "" {
		active = "about:blank"
	}
	return contract.Observation{
		State: contract.State{
			SessionID:     cfg.SessionID,
			Mode:          cfg.Mode,
			ActiveURL:     active,
			Title:         po.Title,
			Viewport:      po.Viewport,
			TabID:         tabID,
			Timestamp:     timestamp(captured),
			DOMHash:       DOMHash(po.Snapshot),
			PolicyContext: cfg.PolicyContext,
		},
		DOMText:     po.Text,
		DOMSnapshot: string(po.Snapshot),
		Affordances: po.Affordances,
	}
}

// boundText makes s valid UTF-8 and cuts it to max runes, ending a cut text
// with TextTruncatedMarker.
func boundText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if max <= 0 || max > MaxTextChars {
		max = MaxTextChars
	}
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return text.CutRunes(s, max-utf8.RuneCountInString(TextTruncatedMarker)) + TextTruncatedMarker
}

func clampInt(f float64, lo, hi int) int {
	if math.IsNaN(f) || f < float64(lo) {
		return lo
	}
	if f > float64(hi) {
		return hi
	}
	return int(math.Round(f))
}

// DOMHash returns the domHash of a canonical snapshot: the SHA-256 of its
// bytes, 64 lowercase hex digits.
func DOMHash(canonicalSnapshot []byte) string {
	h := sha256.Sum256(canonicalSnapshot)
	return hex.EncodeToString(h[:])
}

// boundURL returns u if it fits the schema's url bound (absolute, at most
// MaxURL bytes); a longer URL loses its fragment, then its query, then is
// cut on a safe boundary; "" when nothing usable remains.
func boundURL(u string) string {
	u = strings.ToValidUTF8(u, "")
	if len(u) <= MaxURL && absoluteURI(u) {
		return u
	}
	if i := strings.IndexByte(u, '#'); i >= 0 {
		u = u[:i]
	}
	if len(u) > MaxURL {
		if i := strings.IndexByte(u, '?'); i >= 0 {
			u = u[:i]
		}
	}
	if len(u) > MaxURL {
		u = u[:MaxURL]
		for !utf8.ValidString(u) && len(u) > 0 {
			u = u[:len(u)-1]
		}
		// Do not end in a partial percent-escape.
		if i := strings.LastIndexByte(u, '%'); i >= 0 && i >= len(u)-2 {
			u = u[:i]
		}
	}
	if !absoluteURI(u) {
		return ""
	}
	return u
}

func absoluteURI(s string) bool {
	if s == "" {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && u.Scheme != ""
}

// pageResult is the small answer of every observer function but observe.
type pageResult struct {
	OK    bool   `json:"ok"`
	Code  string `json:"code"`
	Msg   string `json:"msg"`
	Count int    `json:"count"`
	Final bool   `json:"final"`

	// prepareClick, rect
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	// finishClick (and the extension's click)
	Seen       bool   `json:"seen"`
	Navigating bool   `json:"navigating"`
	Download   bool   `json:"download"`
	Note       string `json:"note"`
	// prepareType
	Mode string `json:"mode"`
	// select
	Label string `json:"label"`
	// extract, select
	Value string `json:"value"`
	// scroll
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	Max    float64 `json:"max"`
	// describe
	Element    *contract.Element `json:"element"`
	PageOrigin string            `json:"pageOrigin"`
	Observed   string            `json:"observed"`
	// check: the facts that changed since describe
	Changed []string `json:"changed"`
	// split
	Segments []string `json:"segments"`
	// maskRects: the boxes to paint over (of sensitive fields, of tainted
	// elements) and the viewport's size
	Rects []maskArea `json:"rects"`
	Taint []maskArea `json:"taint"`
	VW    float64    `json:"vw"`
	VH    float64    `json:"vh"`
	// and the changes seen on tainted elements and the elements around
	// them, and whether an animation runs on them (mask.go's stillTainted).
	Changes   float64 `json:"changes"`
	Animating bool    `json:"animating"`
}

// parseResult decodes one small observer answer; a failure answer becomes
// an *Error for sel.
func parseResult(data []byte, sel string) (pageResult, error) {
	var r pageResult
	if len(data) > MaxPagePayload {
		return r, newErr(contract.CodeInternal, sel, "observer answer too large", nil)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return r, newErr(contract.CodeInternal, sel, "observer returned malformed JSON", err)
	}
	if !r.OK {
		err := pageError(r.Code, sel, r.Msg, r.Count)
		if e, ok := err.(*Error); ok {
			e.final = r.Final
		}
		return r, err
	}
	return r, nil
}

// pageError maps an observer failure to an *Error, keeping only known codes.
func pageError(code, sel, msg string, count int) error {
	c := contract.ErrorCode(code)
	switch c {
	case contract.CodeElementNotFound, contract.CodeAmbiguousSelector, contract.CodeNotInteractable,
		contract.CodeUnsupported, contract.CodeInternal, contract.CodeTargetChanged:
	default:
		c = contract.CodeInternal
	}
	msg = text.CutRunes(strings.ToValidUTF8(msg, "\uFFFD"), 512)
	if msg == "" {
		msg = string(c)
	}
	if count < 0 {
		count = 0
	}
	return &Error{Code: c, Selector: sel, Msg: msg, Count: count}
}

var errNoObserver = errors.New("observer not installed in this document")

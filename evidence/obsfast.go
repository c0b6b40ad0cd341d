package evidence

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// The observation is the largest record of a step (the affordances of a
// page of thousands of elements, its visible text): the general path of
// the other records (encoding/json, a tree of maps, masking on the tree,
// encoding the tree) cost it several milliseconds of CPU a step. Its
// canonical bytes are written here directly from the Go value instead,
// masking its free text (freeText) and refusing a secret value in any
// other string or member name as maskRecord does; the bytes are then
// parsed, validated and checked as every record's are (prepareRecord).
// Tests hold the bytes, the masking and the refusals to the general path
// (canonicalize) on random observations.

// obsScratch is what recording an observation reuses from one step to
// the next: the buffer of its canonical bytes and the tape they are
// parsed on (a page of thousands of elements fills about 2 MB of them).
// The bytes and the record prepareObservation returns are valid until it
// is called again with the same scratch.
type obsScratch struct {
	buf  []byte
	tape schemas.Tape
}

// prepareObservation is prepareRecord for an observation: the same
// canonical bytes, parsed record, masking report and errors, without
// building a tree. sc, when not nil, lends the buffer and the tape.
func prepareObservation(obs contract.Observation, m *masker, sc *obsScratch) (canon []byte, r rec, masked bool, err error) {
	if sc == nil {
		sc = &obsScratch{}
	}
	if canon, masked, err = canonicalObservation(&obs, m, sc.buf[:0]); err != nil {
		return nil, rec{}, false, err
	}
	sc.buf = canon
	if r, err = parseRec(canon, &sc.tape); err != nil {
		return nil, rec{}, false, err
	}
	if err := validateRec(string(schemas.KindObservation), r); err != nil {
		return nil, rec{}, false, err
	}
	return canon, r, masked, nil
}

// canonicalObservation is canonicalize for an observation: its canonical
// bytes, appended to buf, its free text masked, having checked that no
// known value is left in them.
func canonicalObservation(obs *contract.Observation, m *masker, buf []byte) (canon []byte, masked bool, err error) {
	e := newObsEncoder(m, buf)
	if n := observationSizeHint(obs); cap(e.b)-len(e.b) < n {
		e.b = make([]byte, len(buf), len(buf)+n)
		copy(e.b, buf)
	}
	if err := e.observation(obs); err != nil {
		return nil, false, err
	}
	if m != nil {
		if err := m.check("the record", e.b); err != nil {
			return nil, false, err
		}
	}
	return e.b, e.masked, nil
}

// observationSizeHint estimates the canonical size of an observation,
// so that its bytes are written without growing the buffer.
func observationSizeHint(o *contract.Observation) int {
	n := 1024 + len(o.DOMText) + len(o.DOMSnapshot) + len(o.State.ActiveURL) + len(o.State.Title)
	for _, a := range o.Affordances {
		n += 64 + len(a.Selector) + len(a.Role) + len(a.Text) + len(a.ActionHint)
	}
	for _, a := range o.ExtractedArtifacts {
		n += 160 + len(a.ID) + len(a.Value) + len(a.SourceSelector) + len(a.SourceURL) + len(a.Hash)
	}
	return n + n/16 // room for escapes
}

// obsEncoder writes canonical JSON (RFC 8785) of an observation's fixed
// shape. Member names are written in canonical order (all are ASCII, so
// byte order is UTF-16 order).
type obsEncoder struct {
	b      []byte
	m      *masker
	active bool // m has values to mask
	masked bool
	// nameRisk is whether a known value could occur in a member name:
	// only one made of ASCII letters can, since every name written is.
	nameRisk bool
	names    map[string]bool // member names checked for secret values
}

// newObsEncoder returns an encoder that masks with m (nil: nothing to
// mask), appending to buf.
func newObsEncoder(m *masker, buf []byte) obsEncoder {
	e := obsEncoder{m: m, active: m != nil && m.r != nil, b: buf}
	if e.active {
		for _, p := range m.pairs {
			if asciiLetters(p.value) {
				e.nameRisk = true
				break
			}
		}
	}
	return e
}

// asciiLetters reports whether s is made of ASCII letters only.
func asciiLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// name writes a member name and its colon, after the comma when not
// first; in refuses a name that holds a secret value, naming the object
// at path as maskRecord does.
func (e *obsEncoder) name(first bool, name, path string) error {
	if e.nameRisk {
		bad, ok := e.names[name]
		if !ok {
			_, bad = e.m.findInString(name)
			if e.names == nil {
				e.names = map[string]bool{}
			}
			e.names[name] = bad
		}
		if bad {
			return fmt.Errorf("%w: a member name of %s", ErrSecret, pointer(path))
		}
	}
	if !first {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, name...)
	e.b = append(e.b, '"', ':')
	return nil
}

// str writes a string as the general path stores it: invalid UTF-8
// replaced as encoding/json replaces it, then masked when it is free
// text, or refused when it holds a secret value and is not.
func (e *obsEncoder) str(s, path string, free bool) error {
	if !e.put(s, free) {
		return notFreeText(path)
	}
	return nil
}

// put is str without the path: it reports false, having written
// nothing, when s is not free text and holds a secret value.
func (e *obsEncoder) put(s string, free bool) bool {
	s = validUTF8JSON(s)
	if e.active {
		if free {
			var c bool
			s, c = e.m.maskString(s)
			e.masked = e.masked || c
		} else if _, found := e.m.findInString(s); found {
			return false
		}
	}
	e.b = canonjson.AppendString(e.b, s)
	return true
}

// notFreeText is the refusal of a secret value in the string at path,
// which is not free text, in maskRecord's words.
func notFreeText(path string) error {
	return fmt.Errorf("%w: %s is not free text", ErrSecret, pointer(path))
}

// member writes a string member.
func (e *obsEncoder) member(first bool, name, s, obj, path string, free bool) error {
	if err := e.name(first, name, obj); err != nil {
		return err
	}
	return e.str(s, path, free)
}

// integer writes an integer as RFC 8785 writes the double it rounds to.
func (e *obsEncoder) integer(n int64) error {
	const exact = 1 << 53
	if -exact <= n && n <= exact {
		e.b = strconv.AppendInt(e.b, n, 10)
		return nil
	}
	return e.float(float64(n))
}

// float writes a number as RFC 8785 does; NaN and infinities are refused
// (encoding/json has no form for them either).
func (e *obsEncoder) float(f float64) error {
	s, err := canonjson.FormatNumber(f)
	if err != nil {
		return err
	}
	e.b = append(e.b, s...)
	return nil
}

func (e *obsEncoder) boolean(v bool) {
	if v {
		e.b = append(e.b, "true"...)
	} else {
		e.b = append(e.b, "false"...)
	}
}

// observation writes the record: affordances, domSnapshot, domText,
// extractedArtifacts (when there are any), state.
func (e *obsEncoder) observation(o *contract.Observation) error {
	e.b = append(e.b, '{')
	if err := e.name(true, "affordances", ""); err != nil {
		return err
	}
	e.b = append(e.b, '[')
	for i := range o.Affordances {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		if err := e.affordance(&o.Affordances[i]); err != nil {
			return err
		}
	}
	e.b = append(e.b, ']')
	if err := e.member(false, "domSnapshot", o.DOMSnapshot, "", "domSnapshot", false); err != nil {
		return err
	}
	if err := e.member(false, "domText", o.DOMText, "", "domText", true); err != nil {
		return err
	}
	if len(o.ExtractedArtifacts) > 0 {
		if err := e.name(false, "extractedArtifacts", ""); err != nil {
			return err
		}
		e.b = append(e.b, '[')
		for i := range o.ExtractedArtifacts {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			if err := e.artifact(&o.ExtractedArtifacts[i]); err != nil {
				return err
			}
		}
		e.b = append(e.b, ']')
	}
	if err := e.name(false, "state", ""); err != nil {
		return err
	}
	if err := e.state(&o.State); err != nil {
		return err
	}
	e.b = append(e.b, '}')
	return nil
}

// affordance writes actionHint, role, selector, text (the empty ones
// omitted but selector's, as encoding/json omits them).
func (e *obsEncoder) affordance(a *contract.Affordance) error {
	const obj = "affordances/*"
	e.b = append(e.b, '{')
	first := true
	if a.ActionHint != "" {
		if err := e.member(first, "actionHint", string(a.ActionHint), obj, obj+"/actionHint", false); err != nil {
			return err
		}
		first = false
	}
	if a.Role != "" {
		if err := e.member(first, "role", a.Role, obj, obj+"/role", true); err != nil {
			return err
		}
		first = false
	}
	if err := e.member(first, "selector", a.Selector, obj, obj+"/selector", true); err != nil {
		return err
	}
	if a.Text != "" {
		if err := e.member(false, "text", a.Text, obj, obj+"/text", true); err != nil {
			return err
		}
	}
	e.b = append(e.b, '}')
	return nil
}

// artifact writes hash, id, sourceSelector (when not empty), sourceUrl,
// type, value.
func (e *obsEncoder) artifact(a *contract.Artifact) error {
	const obj = "extractedArtifacts/*"
	e.b = append(e.b, '{')
	if err := e.member(true, "hash", a.Hash, obj, obj+"/hash", false); err != nil {
		return err
	}
	if err := e.member(false, "id", a.ID, obj, obj+"/id", false); err != nil {
		return err
	}
	if a.SourceSelector != "" {
		if err := e.member(false, "sourceSelector", a.SourceSelector, obj, obj+"/sourceSelector", true); err != nil {
			return err
		}
	}
	if err := e.member(false, "sourceUrl", a.SourceURL, obj, obj+"/sourceUrl", true); err != nil {
		return err
	}
	if err := e.member(false, "type", string(a.Type), obj, obj+"/type", false); err != nil {
		return err
	}
	if err := e.member(false, "value", a.Value, obj, obj+"/value", true); err != nil {
		return err
	}
	e.b = append(e.b, '}')
	return nil
}

// state writes activeUrl, domHash, mode, policyContext, sessionId, tabId
// (when set), timestamp, title, viewport.
func (e *obsEncoder) state(s *contract.State) error {
	e.b = append(e.b, '{')
	if err := e.member(true, "activeUrl", s.ActiveURL, "state", "state/activeUrl", true); err != nil {
		return err
	}
	if err := e.member(false, "domHash", s.DOMHash, "state", "state/domHash", false); err != nil {
		return err
	}
	if err := e.member(false, "mode", string(s.Mode), "state", "state/mode", false); err != nil {
		return err
	}
	if err := e.name(false, "policyContext", "state"); err != nil {
		return err
	}
	if err := e.policyContext(&s.PolicyContext); err != nil {
		return err
	}
	if err := e.member(false, "sessionId", s.SessionID, "state", "state/sessionId", false); err != nil {
		return err
	}
	if s.TabID != nil {
		if err := e.name(false, "tabId", "state"); err != nil {
			return err
		}
		if err := e.integer(int64(*s.TabID)); err != nil {
			return err
		}
	}
	if err := e.member(false, "timestamp", s.Timestamp, "state", "state/timestamp", false); err != nil {
		return err
	}
	if err := e.member(false, "title", s.Title, "state", "state/title", true); err != nil {
		return err
	}
	if err := e.name(false, "viewport", "state"); err != nil {
		return err
	}
	const vp = "state/viewport"
	e.b = append(e.b, '{')
	if err := e.name(true, "deviceScaleFactor", vp); err != nil {
		return err
	}
	if err := e.float(s.Viewport.DeviceScaleFactor); err != nil {
		return err
	}
	if err := e.name(false, "height", vp); err != nil {
		return err
	}
	if err := e.integer(int64(s.Viewport.Height)); err != nil {
		return err
	}
	if err := e.name(false, "width", vp); err != nil {
		return err
	}
	if err := e.integer(int64(s.Viewport.Width)); err != nil {
		return err
	}
	e.b = append(e.b, '}', '}')
	return nil
}

// policyContext writes allowVisionEscalation, classification,
// decisionLogId, maxStepBudget.
func (e *obsEncoder) policyContext(p *contract.PolicyContext) error {
	const obj = "state/policyContext"
	e.b = append(e.b, '{')
	if err := e.name(true, "allowVisionEscalation", obj); err != nil {
		return err
	}
	e.boolean(p.AllowVisionEscalation)
	if err := e.member(false, "classification", string(p.Classification), obj, obj+"/classification", false); err != nil {
		return err
	}
	if err := e.member(false, "decisionLogId", p.DecisionLogID, obj, obj+"/decisionLogId", false); err != nil {
		return err
	}
	if err := e.name(false, "maxStepBudget", obj); err != nil {
		return err
	}
	if err := e.integer(int64(p.MaxStepBudget)); err != nil {
		return err
	}
	e.b = append(e.b, '}')
	return nil
}

// validUTF8JSON returns s with each byte that is not part of valid UTF-8
// replaced by U+FFFD, as encoding/json writes a Go string (and so as the
// general path stores it).
func validUTF8JSON(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}

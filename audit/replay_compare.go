package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/gate"
)

// compareTarget checks the element the action targets on the replayed page
// against the element the recorded decision judged. A bundle that predates
// target recording holds no such element: then, when the action's text is
// recorded, the recorded action hash is recomputed with the live element
// in place of the recorded one (same action, session id and active URL),
// equal hashes meaning the very same element; otherwise the recorded and
// live affordances of the selector are compared.
func (rp *replayer) compareTarget(s *Step, live *contract.Element) (Difference, bool) {
	if rt := recordedTarget(s); rt != nil {
		// The live element's origin is the replay's: compare it mapped back,
		// and not at all with a recording that predates element origins.
		cmp := *live
		cmp.Origin = rp.back.URL(cmp.Origin)
		if rt.Origin == "" {
			cmp.Origin = ""
		}
		if *rt == cmp {
			return Difference{}, true
		}
		return Difference{
			Field: FieldTarget, Observation: -1, Want: describeElement(rt), Got: describeElement(&cmp),
			TextDiff: TextDiff(elementLines(rt), elementLines(&cmp)),
		}, false
	}
	final := s.Final()
	if !redacted(*s.Action) && final.ActionHash != "" {
		req := gate.Request{SessionID: final.SessionID, ActiveURL: s.ActiveURL, Action: *s.Action, Target: live}
		if req.SessionID == "" {
			req.SessionID = rp.b.Manifest.SessionID
		}
		if actionHash(req) == final.ActionHash {
			return Difference{}, true
		}
		return Difference{Field: FieldTarget, Observation: -1, Want: describeRecordedTarget(s), Got: describeElement(live)}, false
	}
	var want *contract.Affordance
	if s.Before != nil {
		want = affordance(&s.Before.Observation, s.Action.Selector)
	}
	got := affordance(rp.live, s.Action.Selector)
	if affordanceText(want) == affordanceText(got) {
		return Difference{}, true
	}
	return Difference{Field: FieldTarget, Observation: -1, Want: affordanceText(want), Got: affordanceText(got)}, false
}

// recordedTarget is the element the step's decisions judged, as recorded;
// nil when the bundle predates target recording (or the action has none).
func recordedTarget(s *Step) *contract.Element {
	for i := len(s.Decisions) - 1; i >= 0; i-- {
		if t := s.Decisions[i].Target; t != nil {
			return t
		}
	}
	return nil
}

// elementLines writes an element one field a line, for a text diff.
func elementLines(e *contract.Element) string {
	return strings.Join([]string{
		"tag: " + e.Tag, "type: " + e.Type, "name: " + e.Name, "id: " + e.ID,
		"autocomplete: " + e.Autocomplete, "role: " + e.Role, "label: " + e.Label, "text: " + e.Text,
		"origin: " + e.Origin,
	}, "\n")
}

// describeRecordedTarget says what the recording's target was, as far as
// the bundle tells: the element the decision recorded, or the affordance.
func describeRecordedTarget(s *Step) string {
	if e := recordedTarget(s); e != nil {
		return describeElement(e)
	}
	if s.Before != nil {
		if a := affordance(&s.Before.Observation, s.Action.Selector); a != nil {
			return affordanceText(a)
		}
	}
	return "selector " + s.Action.Selector
}

// describeElement says what an element is, in one line.
func describeElement(e *contract.Element) string {
	if e == nil {
		return "(none)"
	}
	var b strings.Builder
	b.WriteString("<" + e.Tag)
	for _, kv := range [][2]string{{"type", e.Type}, {"id", e.ID}, {"name", e.Name}, {"autocomplete", e.Autocomplete}, {"role", e.Role}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, " %s=%q", kv[0], clip(kv[1], 80))
		}
	}
	b.WriteString(">")
	if e.Label != "" {
		fmt.Fprintf(&b, " label %q", clip(e.Label, 120))
	}
	if e.Text != "" && e.Text != e.Label {
		fmt.Fprintf(&b, " text %q", clip(e.Text, 120))
	}
	return b.String()
}

func affordanceText(a *contract.Affordance) string {
	if a == nil {
		return "(no affordance)"
	}
	return fmt.Sprintf("%s role=%q text=%q hint=%q", a.Selector, a.Role, clip(a.Text, 120), a.ActionHint)
}

func outcomeText(r contract.ToolResult, err error) string {
	if r.OK {
		return "ok"
	}
	if r.Error != nil {
		return "failed: " + string(r.Error.Code) + ": " + clip(r.Error.Message, 200)
	}
	if err != nil {
		return "failed: " + errText(err)
	}
	return "failed"
}

func errText(err error) string { return clip(err.Error(), 300) }

// observe takes the observation the recording took at this point, records
// it, and compares it with the recorded one.
func (rp *replayer) observe(ctx context.Context, o *Observed) ([]Difference, error) {
	obs, err := rp.drv.Observe(ctx, driver.ObserveOptions{})
	if err != nil && ctx.Err() == nil {
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
		}
		obs, err = rp.drv.Observe(ctx, driver.ObserveOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("audit: replay: observe: %w", err)
	}
	for i, a := range obs.ExtractedArtifacts {
		if u, ok := rp.shots[a.Value]; ok && a.Type == contract.ArtifactScreenshot {
			obs.ExtractedArtifacts[i].Value = u
		}
	}
	if err := rp.w.Observation(rp.seq, obs); err != nil {
		return nil, fmt.Errorf("audit: replay: %w", err)
	}
	rp.seq++
	rp.live = &obs
	if obs.State.ActiveURL != "" {
		rp.cur = obs.State.ActiveURL
	}
	want := o.Observation
	var diffs []Difference
	if got := rp.back.URL(obs.State.ActiveURL); got != want.State.ActiveURL {
		diffs = append(diffs, Difference{Field: FieldURL, Observation: o.Seq, Want: want.State.ActiveURL, Got: got})
	}
	if got := rp.back.Text(obs.State.Title); got != want.State.Title {
		diffs = append(diffs, Difference{Field: FieldTitle, Observation: o.Seq, Want: want.State.Title, Got: got})
	}
	got := obs.State.DOMHash
	if len(rp.back) > 0 {
		sum := sha256.Sum256([]byte(rp.back.Text(obs.DOMSnapshot)))
		got = hex.EncodeToString(sum[:])
	}
	if got != want.State.DOMHash {
		diffs = append(diffs, Difference{
			Field: FieldDOMHash, Observation: o.Seq, Want: want.State.DOMHash, Got: got,
			TextDiff: TextDiff(want.DOMText, rp.back.Text(obs.DOMText)),
		})
	}
	return diffs, nil
}

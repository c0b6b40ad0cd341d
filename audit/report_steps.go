package audit

import (
	"encoding/base64"
	"fmt"
	"html/template"
	"os"
	"strconv"
	"strings"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
	thumbs "github.com/aegis-run/aegis/internal/thumb"
)

// imageBudget is what a report may still spend on pictures: bytes
// embedded (screenshots and thumbnails) and pixels decoded (thumbnails);
// omitted counts the screenshots left out for want of bytes.
type imageBudget struct {
	bytes, pixels, omitted int
}

// buildStep is the view of step s, numbered n, at anchor; its screenshots,
// and the thumbnail of the last, take from the report's image budget.
func buildStep(b *Bundle, s *Step, n int, anchor string, budget *imageBudget) stepView {
	final := s.Final()
	sv := stepView{Number: n, Anchor: anchor, Outcome: string(final.Result), Result: string(final.Result), Risk: string(final.Risk)}
	switch {
	case s.Executed() && s.Result != nil && !s.Result.OK:
		sv.Outcome, sv.Class = string(final.Result)+", but the action failed", "warn"
	case s.Executed():
		sv.Class = "ok"
	default:
		sv.Outcome, sv.Class = "not executed: "+string(final.Result), "bad"
	}
	name, act := final.ActionName, s.Action
	judged := judgedAction(s)
	switch {
	case s.Action != nil:
		name = s.Action.PolicyName()
		sv.Action = actionFacts(*s.Action)
	case judged != nil:
		// Not executed: the action as the policy judged it, which the
		// decision records.
		name, act = judged.PolicyName(), judged
		sv.Action = append(actionFacts(*judged), kv{"Executed", "no: this is the action as the policy judged it (its decision records it)"})
	default:
		sv.Action = []kv{
			{"Action id", final.ActionID},
			{"Type", name},
			{"Content", "not recorded: an action that does not run is kept only as its hash " + final.ActionHash},
		}
		for _, ev := range s.Events {
			if ev.Type == contract.EventApprovalRequired && ev.ActionID == final.ActionID {
				sv.Action = append(sv.Action, kv{"Described as", ev.Summary})
			}
		}
	}
	sv.Title = actionTitle(name, act)
	sv.Action = append(sv.Action, kv{"Active page", s.ActiveURL})
	for _, d := range s.Decisions {
		sv.Decisions = append(sv.Decisions, decisionFacts(d))
	}
	denied := 0
	for _, e := range s.Effects {
		sv.Effects = append(sv.Effects, effectFacts(e))
		if !e.Final().Allow {
			denied++
		}
	}
	if denied > 0 {
		sv.Outcome += fmt.Sprintf("; %d of its effects denied", denied)
		if sv.Class == "ok" {
			sv.Class = "warn"
		}
	}
	if r := s.Result; r != nil {
		res := "done"
		if !r.OK {
			res = "failed"
			if r.Error != nil {
				res += ": " + string(r.Error.Code) + ": " + r.Error.Message
			}
		}
		sv.Facts = []kv{{"Outcome", res}, {"Page after", orDash(r.URL)}, {"Started", r.StartedAt}, {"Took", duration(r.StartedAt, r.EndedAt)}}
		if r.InputLatencyMs != nil {
			sv.Facts = append(sv.Facts, kv{"Input latency", strconv.FormatFloat(*r.InputLatencyMs, 'f', 1, 64) + " ms"})
		}
		if r.CaptureLatencyMs != nil {
			sv.Facts = append(sv.Facts, kv{"Capture latency", strconv.FormatFloat(*r.CaptureLatencyMs, 'f', 1, 64) + " ms"})
		}
	}
	for _, o := range s.After {
		text := o.Observation.DOMText
		cut := false
		if len([]rune(text)) > MaxReportText {
			text, cut = clip(text, MaxReportText), true
		}
		sv.Observed = append(sv.Observed, obsView{
			Seq: o.Seq, URL: o.Observation.State.ActiveURL, Title: o.Observation.State.Title,
			Hash: o.Observation.State.DOMHash, Text: text, Cut: cut,
		})
	}
	var last []byte // the last screenshot embedded
	lastID := ""
	for _, im := range s.Images {
		iv := imageView{ID: im.ID, Width: im.Width, Height: im.Height}
		data, err := os.ReadFile(b.ImagePath(im.URI))
		switch {
		case err != nil:
			iv.Note = "the image could not be read"
		case len(data) > budget.bytes:
			iv.Note = "not embedded: the report's image budget is used up"
			budget.omitted++
		case !safeImageType(im.MIMEType):
			iv.Note = "not embedded: unknown image type"
		default:
			budget.bytes -= len(data)
			iv.Src = dataURI(im.MIMEType, data)
			last, lastID = data, im.ID
		}
		sv.Images = append(sv.Images, iv)
	}
	if last != nil {
		sv.Thumb, sv.ThumbNote = stepThumb(last, lastID, budget)
	}
	sv.Extracted = extracted(s, n, anchor)
	for _, ev := range s.Events {
		switch ev.Type {
		case contract.EventApprovalRequired:
			sv.Events = append(sv.Events, "approval requested: "+ev.Summary)
		case contract.EventApprovalResolved:
			sv.Events = append(sv.Events, "approval answered: "+string(ev.Decision))
		case contract.EventError:
			sv.Events = append(sv.Events, ev.Code+": "+ev.Message)
		}
	}
	return sv
}

// stepThumb returns the timeline's thumbnail of a step's last screenshot,
// or a note that says why it has none: the picture is not one to decode
// (package internal/thumb's Check), or the report's budget of decoded
// pixels or of bytes is used up.
func stepThumb(data []byte, id string, budget *imageBudget) (*imageView, string) {
	px, err := thumbs.Check(data)
	switch {
	case err != nil: // it wraps thumbs.ErrNotDecoded, with why
		return nil, "no thumbnail: " + strings.TrimPrefix(err.Error(), thumbs.ErrNotDecoded.Error()+": ")
	case px > budget.pixels:
		return nil, "no thumbnail: the report's budget of pixels to decode is used up"
	}
	budget.pixels -= px
	th, ok := thumbnail(data)
	switch {
	case !ok:
		return nil, "no thumbnail: the picture does not decode"
	case len(th.data) > budget.bytes:
		return nil, "no thumbnail: the report's image budget is used up"
	}
	budget.bytes -= len(th.data)
	return &imageView{ID: id, Src: dataURI(th.mime, th.data), Width: th.width, Height: th.height}, ""
}

// judgedAction returns the action a decision about step s records (the one
// the policy judged); nil in bundles written before decisions recorded it.
func judgedAction(s *Step) *contract.Action {
	for i := len(s.Decisions) - 1; i >= 0; i-- {
		if a := s.Decisions[i].Action; a != nil {
			return a
		}
	}
	return nil
}

func dataURI(mime string, data []byte) template.URL {
	return template.URL("data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data))
}

// safeImageType reports whether an image may be embedded as a data: URI:
// only the types the verifier recognizes from the bytes.
func safeImageType(mime string) bool {
	switch mime {
	case contract.MIMEPNG, contract.MIMEJPEG, contract.MIMEWebP:
		return true
	}
	return false
}

func actionTitle(name string, a *contract.Action) string {
	verb := strings.TrimPrefix(name, "browser.")
	if a == nil {
		return verb
	}
	switch a.Type {
	case contract.ActNavigate:
		return "navigate to " + a.URL
	case contract.ActClick:
		return "click " + a.Selector
	case contract.ActType:
		return "type into " + a.Selector
	case contract.ActSelect:
		return "select " + strconv.Quote(a.Value) + " in " + a.Selector
	case contract.ActScroll:
		return "scroll " + string(a.Direction)
	case contract.ActWait:
		return "wait " + strconv.Itoa(a.DurationMs) + " ms"
	case contract.ActExtract:
		if a.Selector != "" {
			return "extract " + string(a.Extract) + " of " + a.Selector
		}
		return "extract " + string(a.Extract)
	}
	return verb
}

// actionFacts lists the action's fields; the text typed into a redacted
// field is masked, whatever the bundle holds.
func actionFacts(a contract.Action) []kv {
	out := []kv{{"Action id", a.ID}, {"Type", string(a.Type)}, {"Why (the model's words)", a.Reason}}
	switch a.Type {
	case contract.ActNavigate:
		out = append(out, kv{"URL", a.URL})
	case contract.ActClick:
		out = append(out, kv{"Element", a.Selector})
	case contract.ActType:
		text := a.Text
		if a.Redact || text == evidence.RedactedText {
			text = "•••••• (secret, masked)"
		}
		out = append(out, kv{"Element", a.Selector}, kv{"Text typed", text})
	case contract.ActSelect:
		out = append(out, kv{"Element", a.Selector}, kv{"Option", a.Value})
	case contract.ActScroll:
		out = append(out, kv{"Direction", string(a.Direction)}, kv{"Amount", strconv.Itoa(a.AmountPx) + " px"})
	case contract.ActWait:
		out = append(out, kv{"Duration", strconv.Itoa(a.DurationMs) + " ms"})
	case contract.ActExtract:
		out = append(out, kv{"Extract", string(a.Extract)})
		if a.Selector != "" {
			out = append(out, kv{"Element", a.Selector})
		}
	}
	return out
}

// EffectTitle names an effect in a few words: its method and destination
// (origin and path), such as "POST https://shop.example/pay", or what it
// is ("a peer-to-peer (WebRTC) connection", "a download from ...").
func EffectTitle(e contract.Effect) string {
	switch e.Kind {
	case contract.EffectPeer:
		if e.Origin != "" {
			return "a peer-to-peer (WebRTC) connection to " + e.Origin
		}
		return "a peer-to-peer (WebRTC) connection"
	case contract.EffectDownload:
		return "a download from " + e.Origin + e.Path
	}
	m := e.Method
	if m == "" {
		m = "GET"
	}
	return m + " " + e.Origin + e.Path
}

// effectFacts lists an effect's facts (never values: the bundle holds
// none) and its decisions.
func effectFacts(e *StepEffect) effectView {
	final := e.Final()
	ev := effectView{Title: EffectTitle(e.Effect), Outcome: string(final.Result)}
	switch {
	case final.Result == contract.ResultApproved:
		ev.Class = "warn"
	case final.Allow:
		ev.Class = "ok"
	default:
		ev.Class, ev.Outcome = "bad", "not done: "+string(final.Result)
	}
	kind := map[contract.EffectKind]string{
		contract.EffectNavigation: "navigation of the page",
		contract.EffectFrame:      "navigation of a frame in the page",
		contract.EffectRequest:    "request",
		contract.EffectDownload:   "download",
		contract.EffectPeer:       "peer-to-peer connection (WebRTC)",
	}[e.Effect.Kind]
	ev.Facts = []kv{{"Kind", orDash(kind)}}
	if e.Effect.Method != "" {
		ev.Facts = append(ev.Facts, kv{"Method", e.Effect.Method})
	}
	if e.Effect.Origin != "" || e.Effect.Path != "" {
		ev.Facts = append(ev.Facts, kv{"Destination", e.Effect.Origin + e.Effect.Path + " (origin and path; the query is not recorded)"})
	}
	if len(e.Effect.Fields) > 0 {
		ev.Facts = append(ev.Facts, kv{"Fields sent", strings.Join(e.Effect.Fields, ", ") + " (names only; values are never recorded)"})
	}
	if e.Effect.ResourceType != "" {
		ev.Facts = append(ev.Facts, kv{"Resource type", e.Effect.ResourceType})
	}
	if e.Effect.Refused != "" {
		ev.Facts = append(ev.Facts, kv{"Refused by the browser boundary", e.Effect.Refused})
	}
	for _, d := range e.Decisions {
		ev.Decisions = append(ev.Decisions, decisionFacts(d))
	}
	return ev
}

func reasonsKV(rs []contract.Reason) []kv {
	out := make([]kv, 0, len(rs))
	for _, r := range rs {
		out = append(out, kv{r.Rule, r.Message})
	}
	return out
}

func decisionFacts(d contract.DecisionRecord) decisionView {
	dv := decisionView{Result: string(d.Result), Risk: string(d.Risk), Reasons: reasonsKV(d.Reasons), RiskWhy: reasonsKV(d.RiskReasons), ApprovWhy: reasonsKV(d.ApprovalReasons)}
	switch d.Result {
	case contract.ResultAllowed:
		dv.Class = "ok"
	case contract.ResultApproved, contract.ResultPaused:
		dv.Class = "warn"
	default:
		dv.Class = "bad"
	}
	switch {
	case d.Effect != nil && len(d.Reasons) == 1 && d.Reasons[0].Rule == "effect_refused":
		dv.Result += " (by the session: the browser boundary refused it before any policy saw it)"
	case IsSessionDenial(d):
		dv.Result += " (by the session: the approval or secret was refused)"
	}
	switch {
	case d.Approval != nil && d.Result == contract.ResultApproved:
		dv.Approval = "approved by " + approverText(d.Approval) + " at " + d.Approval.ApprovedAt
	case d.Approval != nil:
		dv.Approval = "an approval by " + approverText(d.Approval) + " was presented and refused"
	case d.RequiresApproval:
		dv.Approval = "required"
	default:
		dv.Approval = "not required"
	}
	dv.Facts = []kv{
		{"Decision id", d.DecisionID},
		{"Evaluated at", d.EvaluatedAt},
		{"Took", strconv.FormatInt(d.DurationUs, 10) + " µs"},
		{"Policy", d.PolicyVersion + " (" + d.PolicySource + ")"},
		{"Permission level", orDash(d.Permission)},
		{"Action hash", d.ActionHash},
	}
	if d.FailClosed {
		dv.Facts = append(dv.Facts, kv{"Failed closed", d.Error})
	}
	for _, w := range d.Waived {
		dv.Facts = append(dv.Facts, kv{"Waived " + w.Rule, w.Message + " (exception " + w.ExceptionID + ")"})
	}
	for _, e := range d.Exceptions {
		dv.Facts = append(dv.Facts, kv{"Exception " + e.ID, string(e.Status) + ": " + e.Why})
	}
	return dv
}

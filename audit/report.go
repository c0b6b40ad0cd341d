package audit

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
)

// Bounds of what a report embeds.
const (
	// MaxReportImageBytes bounds the screenshots embedded in one report, in
	// all; those beyond it are named but not shown.
	MaxReportImageBytes = 24 << 20
	// MaxReportText bounds each excerpt of page text, in characters.
	MaxReportText = 2000
)

//go:embed report.html.tmpl
var reportTemplate string

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"short": func(s string) string {
		if len(s) > 12 {
			return s[:12] + "…"
		}
		return s
	},
	"orDash": orDash,
}).Parse(reportTemplate))

// Report writes the bundle at bundlePath as one self-contained HTML file:
// no script, no external asset (inline CSS, screenshots as data: URIs, a
// Content-Security-Policy that forbids everything else), readable offline
// by someone who has never seen aegis. At the top, whether the bundle
// verified: valid, tampered (with the place: only what precedes it is
// shown), or unsealed. Then the goal, the plan, each step (the action with
// typed secrets masked, every decision with its reasons, risk, approval and
// who gave it, the effects the action caused with their method,
// destination, field names and decisions, the result and its latencies,
// the observations with their DOM hash, the screenshots), and the final
// output. Everything taken from
// the bundle is escaped: pages and models are hostile.
//
// A bundle that cannot be read at all (not a bundle, no ledger) is an
// error; a tampered or unsealed one is reported, not refused.
func Report(ctx context.Context, bundlePath string, w io.Writer) error {
	b, err := Open(ctx, bundlePath, OpenOptions{AllowTampered: true, AllowUnsealed: true})
	if err != nil {
		return err
	}
	defer b.Close()
	return RenderReport(b, w)
}

// RenderReport writes the report of a bundle opened with Open (with
// AllowTampered and AllowUnsealed to show any bundle): see Report.
func RenderReport(b *Bundle, w io.Writer) error {
	v := buildReport(b)
	var buf bytes.Buffer
	if err := reportTmpl.Execute(&buf, v); err != nil {
		return fmt.Errorf("audit: report: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("audit: report: %w", err)
	}
	return nil
}

// The report's view model: strings only, escaped by html/template.

type reportView struct {
	Title        string
	Status       string // valid, tampered, unsealed
	Headline     string
	Details      []string
	Session      []kv
	Goal         string
	URLs         []string
	Plans        []planView
	Steps        []stepView
	Final        finalView
	Generated    string
	ImagesOmited int
}

type kv struct{ K, V string }

type planView struct {
	Revision int
	Steps    []contract.PlanStep
}

type stepView struct {
	Index     int
	Anchor    string
	Title     string
	Outcome   string // allowed, approved, denied, paused
	Class     string // ok, warn, bad
	Action    []kv
	Decisions []decisionView
	Effects   []effectView
	Result    []kv
	Observed  []obsView
	Images    []imageView
	Artifacts []kv
	Events    []string
}

type decisionView struct {
	Result    string
	Class     string
	Reasons   []kv
	Risk      string
	RiskWhy   []kv
	Approval  string
	ApprovWhy []kv
	Facts     []kv
}

// effectView is one effect of a step's action: what the page did, and
// the decisions about it.
type effectView struct {
	Title     string // "POST https://shop.example/pay"
	Outcome   string // "approved", "denied", ...
	Class     string
	Facts     []kv
	Decisions []decisionView
}

type obsView struct {
	Seq   int
	URL   string
	Title string
	Hash  string
	Text  string
	Cut   bool
}

type imageView struct {
	ID     string
	Src    template.URL
	Width  int
	Height int
	Note   string
}

type finalView struct {
	Status  string
	Summary string
	URL     string
	Ended   string
}

func buildReport(b *Bundle) reportView {
	m := b.Manifest
	v := reportView{
		Title:     "aegis evidence report: " + m.SessionID,
		Status:    b.Verification.Status,
		Goal:      m.Goal,
		URLs:      m.Task.URLs,
		Generated: time.Now().UTC().Format(time.RFC3339),
	}
	rep := b.Verification.Report
	switch b.Verification.Status {
	case StatusValid:
		v.Headline = "Verified: this evidence bundle is complete and unchanged since it was sealed."
		if rep != nil {
			v.Details = append(v.Details, fmt.Sprintf("%d ledger entries, hash-chained; Merkle root %s.", rep.Entries, rep.MerkleRoot))
			if rep.Signer != "" {
				v.Details = append(v.Details, "The seal is signed by "+rep.Signer+" and the signature verifies. Compare this key with the one you trust.")
			} else {
				v.Details = append(v.Details, "The seal is not signed: the bundle is internally consistent, but nothing proves who wrote it.")
			}
		}
	case StatusTampered:
		v.Headline = "TAMPERED: this evidence bundle does not verify. It was changed after it was written, or is damaged."
		var ve *evidence.VerifyError
		if errors.As(b.Verification.Err, &ve) {
			v.Details = append(v.Details, "The first place that fails: "+b.Verification.Place()+", check "+ve.Check+".")
		}
		v.Details = append(v.Details, "Verifier: "+b.Verification.Err.Error())
		v.Details = append(v.Details, fmt.Sprintf("Only the %d records before that place are shown below; nothing after it can be trusted.", b.Entries))
	case StatusUnsealed:
		v.Headline = "UNSEALED: this evidence bundle was never sealed. The session was still running, or stopped before it could finish writing."
		if rep != nil {
			v.Details = append(v.Details, fmt.Sprintf("Its %d complete records verify and are shown below; records may be missing at the end.", rep.Entries))
			if rep.Incomplete != "" {
				v.Details = append(v.Details, "Left incomplete: "+rep.Incomplete)
			}
		}
	}
	status := string(m.Status)
	ended := ""
	if b.End != nil {
		status, ended = string(b.End.Status), b.End.EndedAt
	}
	v.Session = []kv{
		{"Session", m.SessionID},
		{"Outcome", status},
		{"Started", m.StartedAt},
		{"Ended", orDash(ended)},
		{"Duration", duration(m.StartedAt, ended)},
		{"Browser driver", string(m.Driver)},
		{"aegis version", m.Versions.Aegis},
		{"Policy version", m.Versions.Policy},
		{"Model", orDash(m.Versions.Model)},
		{"Action budget", budgetText(m.Task)},
	}
	if rep != nil {
		c := rep.Counts
		v.Session = append(v.Session, kv{"Records", fmt.Sprintf("%d decisions, %d actions executed, %d observations, %d events, %d artifacts", c.Decisions, c.Actions, c.Observations, c.Events, c.Artifacts)})
	}
	for i, p := range b.Plans {
		rev := i + 1
		if p.Revision != nil {
			rev = *p.Revision
		}
		v.Plans = append(v.Plans, planView{Revision: rev, Steps: p.Steps})
	}
	budget := MaxReportImageBytes
	for _, s := range b.Steps {
		v.Steps = append(v.Steps, buildStep(b, s, &budget, &v.ImagesOmited))
	}
	v.Final = finalView{Status: status, Ended: ended}
	for _, ev := range b.Events {
		if ev.Type == contract.EventSessionEnded {
			v.Final.Summary = ev.Summary
			v.Final.Status = string(ev.Status)
		}
	}
	if n := len(b.Steps); n > 0 {
		last := b.Steps[n-1]
		v.Final.URL = last.ActiveURL
		if last.Result != nil && last.Result.URL != "" {
			v.Final.URL = last.Result.URL
		}
		if k := len(last.After); k > 0 {
			v.Final.URL = last.After[k-1].Observation.State.ActiveURL
		}
	}
	return v
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func duration(start, end string) string {
	a, err1 := time.Parse(time.RFC3339Nano, start)
	z, err2 := time.Parse(time.RFC3339Nano, end)
	if err1 != nil || err2 != nil {
		return "—"
	}
	return z.Sub(a).Round(time.Millisecond).String()
}

func budgetText(t contract.Input) string {
	var parts []string
	if t.MaxActions != nil {
		parts = append(parts, strconv.Itoa(*t.MaxActions)+" actions")
	}
	if t.MaxDurationMs != nil {
		parts = append(parts, (time.Duration(*t.MaxDurationMs) * time.Millisecond).String())
	}
	if len(parts) == 0 {
		return "the defaults"
	}
	return strings.Join(parts, ", ")
}

func buildStep(b *Bundle, s *Step, budget, omitted *int) stepView {
	final := s.Final()
	sv := stepView{Index: s.Index, Anchor: "step-" + strconv.Itoa(s.Index), Outcome: string(final.Result)}
	switch {
	case s.Executed() && s.Result != nil && !s.Result.OK:
		sv.Outcome, sv.Class = string(final.Result)+", but the action failed", "warn"
	case s.Executed():
		sv.Class = "ok"
		if final.Result == contract.ResultApproved {
			sv.Class = "warn"
		}
	default:
		sv.Outcome, sv.Class = "not executed: "+string(final.Result), "bad"
	}
	name := final.ActionName
	if s.Action != nil {
		name = s.Action.PolicyName()
		sv.Action = actionFacts(*s.Action)
	} else {
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
	sv.Title = actionTitle(name, s.Action)
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
		sv.Result = []kv{{"Outcome", res}, {"Page after", orDash(r.URL)}, {"Started", r.StartedAt}, {"Took", duration(r.StartedAt, r.EndedAt)}}
		if r.InputLatencyMs != nil {
			sv.Result = append(sv.Result, kv{"Input latency", strconv.FormatFloat(*r.InputLatencyMs, 'f', 1, 64) + " ms"})
		}
		if r.CaptureLatencyMs != nil {
			sv.Result = append(sv.Result, kv{"Capture latency", strconv.FormatFloat(*r.CaptureLatencyMs, 'f', 1, 64) + " ms"})
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
	for _, im := range s.Images {
		iv := imageView{ID: im.ID, Width: im.Width, Height: im.Height}
		data, err := os.ReadFile(b.ImagePath(im.URI))
		switch {
		case err != nil:
			iv.Note = "the image could not be read"
		case len(data) > *budget:
			iv.Note = "not embedded: the report's image budget is used up"
			*omitted++
		case !safeImageType(im.MIMEType):
			iv.Note = "not embedded: unknown image type"
		default:
			*budget -= len(data)
			iv.Src = template.URL("data:" + im.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(data))
		}
		sv.Images = append(sv.Images, iv)
	}
	for _, a := range s.Artifacts {
		if a.Type == contract.ArtifactScreenshot {
			continue
		}
		val := a.Value
		if len([]rune(val)) > MaxReportText {
			val = clip(val, MaxReportText)
		}
		sv.Artifacts = append(sv.Artifacts, kv{string(a.Type) + " " + a.ID, val})
	}
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
		dv.Approval = "approved by " + d.Approval.Approver + approvalChannel(d.Approval) + " at " + d.Approval.ApprovedAt
	case d.Approval != nil:
		dv.Approval = "an approval by " + d.Approval.Approver + approvalChannel(d.Approval) + " was presented and refused"
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

// approvalChannel says where an approval was given, as its channel names
// it (evidence/FORMAT.md, section 8, rule 16): such as " in the live
// console"; "" for an approval of a bundle that names no channel.
func approvalChannel(a *contract.ApprovalRef) string {
	switch a.Channel {
	case contract.ApprovalChannelTerminal:
		return " at the terminal"
	case contract.ApprovalChannelPopup:
		return " in the extension's popup"
	case contract.ApprovalChannelLive:
		return " in the live console"
	case contract.ApprovalChannelRule:
		return " (a rule: no person was asked)"
	case contract.ApprovalChannelProgram:
		return " (through the program that embeds aegis)"
	case "":
		return ""
	}
	return " (channel " + string(a.Channel) + ")"
}

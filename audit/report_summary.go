package audit

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// The summary at the top of a report: how the session ended and why, one
// line per step, what was extracted, the denials, the approvals; and the
// timeline. All of it is about what the session did; whether the record
// of it is intact is the verification banner's business alone.

// outcomeView is how the session ended.
type outcomeView struct {
	Status  string   // the status as recorded: completed, failed, ...
	Label   string   // the status in words
	Class   string   // ok, bad, wait
	Reasons []string // why it ended so
	Message string   // the agent's final message (session.ended's summary)
}

// lineView is one line of the summary about a step.
type lineView struct {
	Number int
	Anchor string
	Title  string
	Result string // the final decision's result
	Risk   string
	Note   string // reasons, approver, failure
}

// timelineView is one step in the timeline.
type timelineView struct {
	Number    int
	Anchor    string
	Title     string
	Result    string
	Risk      string
	Failed    bool
	Thumb     *imageView
	ThumbNote string // why it has no thumbnail, when it has a screenshot
}

// extractView is one extracted artifact, rendered by its type.
type extractView struct {
	Number int    // the step that extracted it
	Anchor string // its anchor
	ID     string
	Type   string
	Source string // the element, "" for the whole page
	URL    string // the page
	Head   []string
	Rows   [][]string
	More   int // table rows not shown
	Links  []linkView
	Text   string
	Cut    bool
}

type linkView struct{ Text, Href string }

// outcomeWords names each session status for a person.
var outcomeWords = map[string]struct{ label, class string }{
	string(contract.SessionCompleted):           {"Completed", "ok"},
	string(contract.SessionFailed):              {"Failed", "bad"},
	string(contract.SessionAborted):             {"Aborted", "bad"},
	string(contract.SessionDurationExceeded):    {"Stopped: the time budget ran out", "bad"},
	string(contract.SessionActionLimitExceeded): {"Stopped: the action budget ran out", "bad"},
}

// summarize fills the summary, the timeline and the final output of v
// from the bundle and the step views built from it.
func summarize(b *Bundle, v *reportView, ended string) {
	v.Outcome = outcome(b, v.Steps)
	extracted := 0
	for i, s := range b.Steps {
		sv := v.Steps[i]
		line := lineView{Number: sv.Number, Anchor: sv.Anchor, Title: sv.Title, Result: sv.Result, Risk: sv.Risk}
		if s.Executed() {
			if s.Result != nil && !s.Result.OK {
				line.Note = "the action failed"
				if s.Result.Error != nil {
					line.Note += ": " + s.Result.Error.Message
				}
			}
		} else {
			line.Note = reasonText(s.Final())
			v.Denials = append(v.Denials, line)
		}
		for _, d := range s.Decisions {
			if a, ok := approvalLine(d); ok {
				v.Approvals = append(v.Approvals, lineView{Number: sv.Number, Anchor: sv.Anchor, Title: sv.Title, Result: string(d.Result), Risk: string(d.Risk), Note: a})
			}
		}
		for _, e := range s.Effects {
			title := "effect of step " + strconv.Itoa(sv.Number) + ": " + EffectTitle(e.Effect)
			final := e.Final()
			if !final.Allow {
				v.Denials = append(v.Denials, lineView{Number: sv.Number, Anchor: sv.Anchor, Title: title, Result: string(final.Result), Risk: string(final.Risk), Note: reasonText(final)})
			}
			for _, d := range e.Decisions {
				if a, ok := approvalLine(d); ok {
					v.Approvals = append(v.Approvals, lineView{Number: sv.Number, Anchor: sv.Anchor, Title: title, Result: string(d.Result), Risk: string(d.Risk), Note: a})
				}
			}
		}
		v.Done = append(v.Done, line)
		v.Timeline = append(v.Timeline, timelineView{Number: sv.Number, Anchor: sv.Anchor, Title: sv.Title, Result: sv.Result, Risk: sv.Risk, Failed: line.Note != "" && s.Executed(), Thumb: sv.Thumb, ThumbNote: sv.ThumbNote})
		v.AnyThumb = v.AnyThumb || sv.Thumb != nil || sv.ThumbNote != ""
		v.Extracted = append(v.Extracted, sv.Extracted...)
		if len(sv.Extracted) > 0 {
			extracted += len(sv.Extracted)
			v.Final.Extracted = sv.Extracted
		}
	}
	t := b.Tally()
	v.Counts = fmt.Sprintf("%s proposed: %d executed, %d not executed (denied); %d approved; %s extracted.",
		plural(t.Proposed, "action"), t.Executed, t.Denied, t.Approved, plural(extracted, "result"))
	if d := duration(b.Manifest.StartedAt, ended); d != "—" {
		v.Counts += " Took " + d + "."
	}
	v.Counts += tokensLine(b) + modelLine(b.Manifest.Versions)
	v.Final.Outcome = v.Outcome
	v.Final.Ended = ended
	if n := len(b.Steps); n > 0 {
		last, sv := b.Steps[n-1], v.Steps[n-1]
		v.Final.LastStep = "Step " + strconv.Itoa(sv.Number) + ": " + sv.Title + " (" + sv.Outcome + ")"
		v.Final.LastAnchor = sv.Anchor
		v.Final.URL = last.ActiveURL
		if last.Result != nil && last.Result.URL != "" {
			v.Final.URL = last.Result.URL
		}
		if k := len(last.After); k > 0 {
			v.Final.URL = last.After[k-1].Observation.State.ActiveURL
		}
	}
}

// tokensLine says what the model calls used, in tokens, and the task's
// token budget (hints.maxTokens) if any: " 3 model calls: 12,345 tokens of
// a budget of 50,000."; then, when the calls were priced (costUsd) or the
// task has a cost budget (hints.maxCostUsd), what they cost: " 3 model
// calls: 12,345 tokens, cost $0.0042 of a budget of $0.10."; "" for a
// session without model calls or budget.
func tokensLine(b *Bundle) string {
	total, cost, priced := 0, 0.0, false
	for _, mc := range b.ModelCalls {
		total = min(total+mc.Tokens(), 1<<53-1) // record counts are at most 2^53 - 1
		if mc.CostUSD != nil {
			cost += *mc.CostUSD
			priced = true
		}
	}
	budget, _ := b.Manifest.Task.MaxTokens()
	maxCost, _ := b.Manifest.Task.MaxCostUSD()
	if len(b.ModelCalls) == 0 && budget == 0 && maxCost == 0 {
		return ""
	}
	s := " " + plural(len(b.ModelCalls), "model call") + ": " + text.Thousands(total) + " tokens"
	if budget > 0 {
		s += " of a budget of " + text.Thousands(budget)
	}
	if priced || maxCost > 0 {
		s += ", cost " + text.USD(cost)
		if maxCost > 0 {
			s += " of a budget of " + text.USD(maxCost)
		}
	}
	return s + "."
}

// modelLine names the model and the identity its endpoint reported when a
// model registry checked it (manifest versions.modelId, modelDigest, a
// llama.cpp server's modelPath), and the registry's prices
// (versions.modelPrices): " Model llama3.1:8b: the endpoint reported id
// llama3.1:8b, digest sha256:46e0..., checked against the model registry;
// priced at $0.00 and $0.00 per million prompt and completion tokens.";
// "" without a model.
func modelLine(v contract.Versions) string {
	s := ""
	switch {
	case v.Model == "":
		return ""
	case v.ModelID == "":
		return " Model " + v.Model + " (identity not checked: no model registry)."
	case v.ModelDigest == "":
		s = " Model " + v.Model + ": the endpoint reported id " + v.ModelID + ", checked against the model registry"
	default:
		s = " Model " + v.Model + ": the endpoint reported id " + v.ModelID + ", digest " + v.ModelDigest + ", checked against the model registry"
	}
	if v.ModelPath != "" {
		s += " (model file " + v.ModelPath + ", as the llama.cpp server reported it: it reports no digest)"
	}
	if p := v.ModelPrices; p != nil {
		s += "; priced at " + text.USD(p.InputPerMTok) + " and " + text.USD(p.OutputPerMTok) + " per million prompt and completion tokens"
	}
	return s + "."
}

// outcome is how the session ended, from the sealed manifest or the
// session.ended event, with the errors the session reported and, for a
// session that did not complete, the last denial.
func outcome(b *Bundle, steps []stepView) outcomeView {
	o := outcomeView{}
	if b.End != nil {
		o.Status = string(b.End.Status)
	}
	for _, ev := range b.Events {
		switch {
		case ev.Type == contract.EventSessionEnded:
			if o.Status == "" {
				o.Status = string(ev.Status)
			}
			if ev.Summary != "" && ev.Summary != string(ev.Status) {
				o.Message = ev.Summary
			}
		case ev.Type == contract.EventError && strings.HasPrefix(ev.Code, "session."):
			o.Reasons = append(o.Reasons, ev.Message+" ("+ev.Code+")")
		}
	}
	if w, ok := outcomeWords[o.Status]; ok {
		o.Label, o.Class = w.label, w.class
	} else {
		o.Label, o.Class = "Unknown: the record does not say how the session ended", "wait"
		if o.Status == "" || o.Status == string(contract.SessionRunning) {
			o.Status = "unknown"
		}
	}
	switch b.Verification.Status {
	case StatusTampered:
		o.Reasons = append(o.Reasons, "The record is read only up to the place that fails verification (at the top): what it holds after that place is not shown, here or below.")
	case StatusUnsealed:
		o.Reasons = append(o.Reasons, "The bundle was never sealed: the session may have been still running, or stopped before it finished writing.")
	}
	if o.Status != string(contract.SessionCompleted) {
		for i := len(b.Steps) - 1; i >= 0; i-- {
			if s := b.Steps[i]; !s.Executed() {
				o.Reasons = append(o.Reasons, fmt.Sprintf("The last action refused: step %d, %s: %s.", steps[i].Number, steps[i].Title, reasonText(s.Final())))
				break
			}
		}
	}
	return o
}

// reasonText says why a decision denied, in one line.
func reasonText(d contract.DecisionRecord) string {
	var parts []string
	for _, r := range d.Reasons {
		parts = append(parts, r.Rule+": "+r.Message)
	}
	who := "denied by the policy"
	switch {
	case d.Result == contract.ResultPaused:
		who = "waiting for an approval that never came"
	case IsSessionDenial(d):
		who = "refused by the session (the approval or secret was refused)"
	case d.FailClosed:
		who = "denied: the policy could not answer (failed closed)"
	}
	if len(parts) == 0 {
		return who
	}
	return who + " (" + strings.Join(parts, "; ") + ")"
}

// approvalLine describes the approval decision d used or refused; ok is
// false when d involved none.
func approvalLine(d contract.DecisionRecord) (string, bool) {
	switch {
	case approves(d):
		return "approved by " + approverText(d.Approval) + " at " + d.Approval.ApprovedAt, true
	case d.Approval != nil:
		return "an approval by " + approverText(d.Approval) + " was presented and refused: " + reasonText(d), true
	case d.RequiresApproval && IsSessionDenial(d):
		return "asked, and not approved: " + reasonText(d), true
	}
	return "", false
}

// approverText names who approved and, when the record says, through
// which channel: "alice in the live console".
func approverText(a *contract.ApprovalRef) string {
	return a.Approver + approvalChannel(a)
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
		return " (given by the program that ran the session, not through an aegis channel)"
	case "":
		return ""
	}
	return " (channel " + string(a.Channel) + ")"
}

// extracted renders what step s extracted (its screenshots are shown as
// images, not here).
func extracted(s *Step, n int, anchor string) []extractView {
	var out []extractView
	for _, a := range s.Artifacts {
		if a.Type == contract.ArtifactScreenshot {
			continue
		}
		x := extractView{Number: n, Anchor: anchor, ID: a.ID, Type: string(a.Type), Source: a.SourceSelector, URL: a.SourceURL}
		ok := false
		switch a.Type {
		case contract.ArtifactTable:
			ok = x.table(a.Value)
		case contract.ArtifactLink:
			ok = x.links(a.Value)
		}
		if !ok {
			x.Head, x.Rows, x.Links = nil, nil, nil
			x.Text = a.Value
			if len([]rune(x.Text)) > MaxReportText {
				x.Text, x.Cut = clip(x.Text, MaxReportText), true
			}
		}
		out = append(out, x)
	}
	return out
}

// table reads a table's rows (a JSON array of rows of cells); the first
// row is its header. false when value is not one.
func (x *extractView) table(value string) bool {
	var rows [][]any
	if json.Unmarshal([]byte(value), &rows) != nil || len(rows) == 0 {
		return false
	}
	cells := func(r []any) []string {
		out := make([]string, len(r))
		for i, c := range r {
			switch c := c.(type) {
			case string:
				out[i] = clip(c, MaxReportText)
			case nil:
			default:
				b, _ := json.Marshal(c)
				out[i] = clip(string(b), MaxReportText)
			}
		}
		return out
	}
	x.Head = cells(rows[0])
	rows = rows[1:]
	if len(rows) > MaxReportTableRows {
		x.More = len(rows) - MaxReportTableRows
		rows = rows[:MaxReportTableRows]
	}
	for _, r := range rows {
		x.Rows = append(x.Rows, cells(r))
	}
	return true
}

// links reads a list of links (a JSON array of {text, href}); false when
// value is not one. They are shown as text, never as links: a page chose
// them.
func (x *extractView) links(value string) bool {
	var ls []struct {
		Text string `json:"text"`
		Href string `json:"href"`
	}
	if json.Unmarshal([]byte(value), &ls) != nil {
		return false
	}
	for i, l := range ls {
		if i == MaxReportTableRows {
			x.More = len(ls) - i
			break
		}
		x.Links = append(x.Links, linkView{Text: clip(l.Text, 200), Href: clip(l.Href, 2048)})
	}
	return true
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

package audit

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/palette"
)

// Bounds of what a report embeds.
const (
	// MaxReportImageBytes bounds the screenshots embedded in one report, in
	// all (their timeline thumbnails included); those beyond it are named
	// but not shown.
	MaxReportImageBytes = 24 << 20
	// MaxReportThumbPixels bounds the pixels decoded for the timeline's
	// thumbnails, in all: decoding costs by the pixel, whatever the
	// file's size. Steps past it show no thumbnail and say why.
	MaxReportThumbPixels = 64 << 20
	// MaxReportText bounds each excerpt of page text, in characters.
	MaxReportText = 2000
	// MaxReportTableRows bounds the rows of an extracted table the report
	// shows; the rest are counted.
	MaxReportTableRows = 200
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
	"orDash":      orDash,
	"palette":     func() template.CSS { return template.CSS(palette.CSS) },
	"riskClass":   riskClass,
	"resultClass": resultClass,
}).Parse(reportTemplate))

// Report writes the bundle at bundlePath as one self-contained HTML file:
// no script, no external asset (inline CSS with the palette of package
// palette, screenshots as data: URIs, a Content-Security-Policy that
// forbids everything else), readable offline by someone who has never
// seen aegis, in a light and a dark scheme. At the top, whether the bundle
// is intact (valid, tampered with the place: only what precedes it is
// shown, or unsealed): integrity only. Then the summary: the session's
// outcome with its reason, kept apart from integrity; one line per step;
// what was extracted, rendered (tables as tables, links as a list); the
// denials; the approvals with who gave them. Then a timeline of the steps
// with screenshot thumbnails linking to each step's details, the session's
// facts, the plan, and each step, collapsed (the action with typed secrets
// masked, every decision with its reasons, risk, approval and who gave
// it, the effects the action caused with their method, destination, field
// names and decisions, the result and its latencies, the observations
// with their DOM hash, the screenshots, what was extracted), and the final
// output. Steps are numbered as the CLI and the live console number them:
// by the decisions' stepIndex. Everything taken from the bundle is
// escaped: pages and models are hostile.
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
	Title      string
	Status     string // valid, tampered, unsealed
	Headline   string
	Details    []string
	Session    []kv
	Goal       string
	URLs       []string
	Outcome    outcomeView
	Counts     string
	Done       []lineView
	Extracted  []extractView
	Denials    []lineView
	Approvals  []lineView
	Timeline   []timelineView
	AnyThumb   bool // some step has a screenshot thumbnail
	Plans      []planView
	Steps      []stepView
	Final      finalView
	Generated  string
	ImagesOmit int
}

type kv struct{ K, V string }

type planView struct {
	Revision int
	Steps    []contract.PlanStep
}

type stepView struct {
	Number    int    // the decisions' stepIndex: the number the CLI and the console show
	Anchor    string // "step-N", "step-N-2" for the second proposal of step N
	Title     string
	Outcome   string // allowed, approved, denied, paused, with what happened
	Result    string // the final decision's result
	Risk      string
	Class     string // ok, warn, bad
	Action    []kv
	Decisions []decisionView
	Effects   []effectView
	Facts     []kv // the action's result
	Observed  []obsView
	Images    []imageView
	Extracted []extractView
	Events    []string
	Thumb     *imageView // the timeline's thumbnail of the step's last screenshot
	ThumbNote string     // why a step with a screenshot has no thumbnail
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
	Outcome    outcomeView
	URL        string
	Ended      string
	LastStep   string // "Step 12: extract table of #orders"
	LastAnchor string
	Extracted  []extractView // what the last step that extracted anything extracted
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
	v.Headline, v.Details = integrity(b)
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
	if rep := b.Verification.Report; rep != nil {
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
	budget := imageBudget{bytes: MaxReportImageBytes, pixels: MaxReportThumbPixels}
	seen := map[int]int{} // proposals per step number
	for _, s := range b.Steps {
		n := stepNumber(s)
		seen[n]++
		anchor := "step-" + strconv.Itoa(n)
		if k := seen[n]; k > 1 {
			anchor += "-" + strconv.Itoa(k)
		}
		v.Steps = append(v.Steps, buildStep(b, s, n, anchor, &budget))
	}
	v.ImagesOmit = budget.omitted
	summarize(b, &v, ended)
	return v
}

// integrity says whether the bundle is intact: the headline and its
// details. It says nothing about how the session went.
func integrity(b *Bundle) (string, []string) {
	var details []string
	rep := b.Verification.Report
	switch b.Verification.Status {
	case StatusValid:
		if rep != nil {
			details = append(details, fmt.Sprintf("%d ledger entries, hash-chained; Merkle root %s.", rep.Entries, rep.MerkleRoot))
			if rep.Signer != "" {
				details = append(details, "The seal is signed by "+rep.Signer+" and the signature verifies. Compare this key with the one you trust.")
			} else {
				details = append(details, "The seal is not signed: the bundle is internally consistent, but nothing proves who wrote it.")
			}
		}
		details = append(details, "This is about the record only, not about whether the task succeeded: the outcome is in the summary below.")
		return "Verified: this evidence bundle is intact, complete and unchanged since it was sealed.", details
	case StatusTampered:
		var ve *evidence.VerifyError
		if errors.As(b.Verification.Err, &ve) {
			details = append(details, "The first place that fails: "+b.Verification.Place()+", check "+ve.Check+".")
		}
		details = append(details, "Verifier: "+b.Verification.Err.Error())
		details = append(details, fmt.Sprintf("Only the %d records before that place are shown below; nothing after it can be trusted.", b.Entries))
		return "TAMPERED: this evidence bundle is INVALID. It was changed after it was written, or is damaged.", details
	case StatusUnsealed:
		if rep != nil {
			details = append(details, fmt.Sprintf("Its %d complete records verify and are shown below; records may be missing at the end.", rep.Entries))
			if rep.Incomplete != "" {
				details = append(details, "Left incomplete: "+rep.Incomplete)
			}
		}
		return "UNSEALED: this evidence bundle was never sealed. The session was still running, or stopped before it could finish writing.", details
	}
	return "Unknown verification status " + b.Verification.Status, nil
}

// stepNumber is the number a person sees for step s: its decisions'
// stepIndex (the actions executed before it, plus one), the number the
// CLI's progress and the live console show; a denied action and the next
// proposal share it. s.Index when no decision records one.
func stepNumber(s *Step) int {
	for _, d := range s.Decisions {
		if d.StepIndex > 0 {
			return d.StepIndex
		}
	}
	return s.Index
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

// riskClass is the palette's class of a risk level.
func riskClass(risk string) string {
	switch risk {
	case "low", "medium", "high":
		return "risk-" + risk
	}
	return "ae-muted"
}

// resultClass is the colour of a decision's result: ok (allowed,
// approved), warn (paused, or allowed but the action failed), bad
// (denied).
func resultClass(result string, failed bool) string {
	switch {
	case result == string(contract.ResultPaused) || failed && result != string(contract.ResultDenied):
		return "warn"
	case result == string(contract.ResultAllowed) || result == string(contract.ResultApproved):
		return "ok"
	}
	return "bad"
}

package session

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
	"github.com/aegis-run/aegis/navigator"
)

// StepReport describes one action the session handled, for progress
// lines.
type StepReport struct {
	// Index is the action's position in the action budget (executed
	// actions so far plus one) and Budget the budget.
	Index, Budget int
	// Step is the Navigator call that proposed the action (0 for the first
	// navigation).
	Step int
	// Action is the action as proposed (placeholders, never values).
	Action contract.Action
	// Target is the element the action addressed; nil when none.
	Target *contract.Element
	// Decision is the gate's final result: allowed, approved or denied;
	// "" when the action never reached the gate (target not found).
	Decision contract.DecisionResult
	// Risk is the gate's risk.
	Risk contract.RiskTag
	// Reasons are the deny rules, for a denial.
	Reasons []contract.Reason
	// Effect, when set, makes the report one about an effect of Action (a
	// request or navigation the page made, see session effects): Decision,
	// Risk and Reasons are the effect's, Index and Step the action's, and
	// Executed is false.
	Effect *contract.Effect
	// Executed says the driver ran the action; OK that it succeeded.
	Executed, OK bool
	// Error is the driver's error code and message, when it failed.
	Error string
	// Duration is how long the action took in the driver.
	Duration time.Duration
	// Tokens is what the session's model calls used so far (Config.Budget)
	// and MaxTokens the task's token budget (0 when none).
	Tokens, MaxTokens int
	// CostUSD is what they cost so far and MaxCostUSD the task's cost
	// budget (0 when none); Priced says whether the budget costs calls
	// (it has prices).
	CostUSD, MaxCostUSD float64
	Priced              bool
	// Plan is, for an offline navigator (navigator.Planned), which item of
	// its plan the action carries out: "script 3/5"; zero for the LLM
	// navigator, an effect, the first URL and an expect step's wait.
	Plan navigator.PlanItem
	// Vision says the action is the session's own vision escalation (an
	// extract screenshot shown to the model; see "Vision escalation").
	Vision bool
}

// Timings splits a session's wall-clock time. Harness is everything but
// the model, the browser and the human: gate, evidence, validation, bus and
// bookkeeping.
type Timings struct {
	// Total is the session's wall-clock time.
	Total time.Duration
	// Agents is the time spent in the Planner and the Navigator (model
	// calls, prompt building, answer validation).
	Agents time.Duration
	// Driver is the time spent in the driver (open, observe, describe,
	// act, close).
	Driver time.Duration
	// Approval is the time spent waiting for approvers.
	Approval time.Duration
	// Gate is the time spent in gate decisions.
	Gate time.Duration
	// Evidence is the time spent writing the bundle (sealing included),
	// mostly in the background, overlapping the rest.
	Evidence time.Duration
	// EvidenceWait is the part of it the session waited for: before an
	// action runs (its decision must be in the bundle first), and at the
	// seal.
	EvidenceWait time.Duration
	// Seal is the time the seal took (fsync of every file included), a
	// cost per session rather than per step.
	Seal time.Duration
	// Bus is the time spent publishing events.
	Bus time.Duration
	// Steps counts the Navigator calls.
	Steps int
}

// Harness returns Total less Agents, Driver and Approval.
func (t Timings) Harness() time.Duration { return t.Total - t.Agents - t.Driver - t.Approval }

// EvidenceInfo says where the bundle is and whether it was sealed.
type EvidenceInfo struct {
	// Dir is the bundle directory; "" when it could not be created.
	Dir string `json:"dir,omitempty"`
	// Sealed says the seal was written.
	Sealed bool `json:"sealed"`
	// HeadHash and MerkleRoot are the seal's; Entries the ledger's length.
	HeadHash   string `json:"headHash,omitempty"`
	MerkleRoot string `json:"merkleRoot,omitempty"`
	Entries    int    `json:"entries,omitempty"`
	// Signer is the seal signature's key id, when signed.
	Signer string `json:"signer,omitempty"`
	// Error says why the bundle is not sealed.
	Error string `json:"error,omitempty"`
}

// Result is the outcome of a session.
type Result struct {
	// Output is the ComputerUseOutput (seed 003), valid under the output
	// schema. Its status is the seed's: a failed session reports
	// "aborted" there, and its Extra members say the truth: "endStatus"
	// (always: the session's status, failed included) and, for a failed
	// session, "error" {code, message}. "evidence" holds EvidenceInfo and
	// "artifacts" the extracted artifacts (values cut to 16 KiB).
	Output contract.Output
	// Status is how the session ended, failed included.
	Status contract.SessionStatus
	// Evidence says where the bundle is.
	Evidence EvidenceInfo
	// Denied counts the denied actions; Approved the approved ones.
	Denied, Approved int
	// Tokens is what the model calls used (Config.Budget) and MaxTokens
	// the task's token budget (0 when none).
	Tokens, MaxTokens int
	// CostUSD is what they cost and MaxCostUSD the task's cost budget (0
	// when none); Priced says whether the budget costs calls (it has
	// prices).
	CostUSD, MaxCostUSD float64
	Priced              bool
	// Budget names the model budget that ended the session
	// (llm.BudgetTokens, llm.BudgetCost: its error event is
	// CodeBudgetExceeded), whether passed by the calls so far or a call
	// refused before it was sent because it would have passed it; "" when
	// no model budget ended it.
	Budget string
	// Plan is, for an offline navigator (navigator.Planned), how many of
	// its plan's items ran, of how many: "script 3/5"; zero for the LLM
	// navigator.
	Plan navigator.PlanItem
	// Artifacts are the artifacts extracted, in order.
	Artifacts []contract.Artifact
	// Timings splits the session's time.
	Timings Timings
}

// finish ends the session: closes the driver, emits session.ended, seals
// the bundle, closes the bus, and builds the result.
func (r *run) finish(end ending) (Result, error) {
	if end.status == "" {
		end = r.fail("internal", "the session ended without a status", nil)
	}
	end = r.refusedEnding(end)
	if end.summary == "" {
		end.summary = r.lastSummary
	}
	if end.summary == "" {
		end.summary = string(end.status)
	}
	bg := context.WithoutCancel(r.ctx)
	if r.eff != nil {
		r.eff.end() // no more approvals: paused effects are refused
	}
	if r.drv != nil && !r.fresh && r.ctx.Err() == nil && r.rec != nil {
		// The page as the session left it, and the records of what was
		// extracted last, belong in the evidence.
		octx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
		saved := r.ctx
		r.ctx = octx
		err := r.observe()
		r.ctx = saved
		cancel()
		if err != nil && end.err == nil && end.status == contract.SessionCompleted {
			_ = r.emitError("session.final_observation", "the final page could not be observed: "+bound(err.Error(), 500))
		}
	}
	if r.drv != nil {
		cctx, cancel := context.WithTimeout(bg, 15*time.Second)
		t0 := time.Now()
		_ = r.drv.Close(cctx)
		r.t.Driver += time.Since(t0)
		cancel()
	}
	if r.eff != nil && r.rec != nil {
		// What the page did until it closed (beacons on pagehide) belongs
		// to the last action.
		r.eff.close()
		if err := r.drainEffects(); err != nil && end.err == nil {
			end = r.fail("evidence", "the evidence bundle cannot be written", err)
		}
	} else if r.eff != nil {
		r.eff.close()
	}
	res := Result{Status: end.status, Denied: r.denied, Approved: r.approved, Artifacts: r.artifacts, Plan: r.plannedRan(end.status),
		Tokens: r.cfg.Budget.Tokens(), MaxTokens: r.cfg.Budget.Limits().MaxTokens,
		CostUSD: r.cfg.Budget.CostUSD(), MaxCostUSD: r.cfg.Budget.Limits().MaxCostUSD, Priced: r.cfg.Budget.Priced(), Budget: end.budget}
	if r.rec != nil {
		t0 := time.Now()
		spent, err := r.rec.stop()
		r.t.EvidenceWait += time.Since(t0)
		r.t.Evidence += spent
		r.rec = nil // from here on, records are written in line
		if err != nil && end.err == nil {
			end = r.fail("evidence", "the evidence bundle cannot be written", err)
		}
	}
	if r.w != nil {
		if end.err != nil {
			_ = r.emitError("session."+end.err.Code, end.err.Error())
		}
		_ = r.emit(contract.StreamEvent{Type: contract.EventSessionEnded, Status: end.status, Summary: bound(end.summary, 4000)})
		res.Evidence.Dir = r.w.Dir()
		sctx, cancel := context.WithTimeout(bg, 60*time.Second)
		t0 := time.Now()
		m, err := r.w.Seal(sctx, end.status, r.now(), r.cfg.Signer)
		r.t.Seal = time.Since(t0)
		r.t.Evidence += r.t.Seal
		r.t.EvidenceWait += r.t.Seal
		cancel()
		if err != nil {
			res.Evidence.Error = err.Error()
		} else if m.Seal != nil {
			res.Evidence.Sealed = true
			res.Evidence.HeadHash, res.Evidence.MerkleRoot, res.Evidence.Entries = m.Seal.HeadHash, m.Seal.MerkleRoot, m.Seal.Entries
			res.Evidence.Signer = m.Signer
		}
	} else if end.err != nil {
		res.Evidence.Error = end.err.Error()
	}
	r.s.bus.Close()
	r.t.Bus = time.Duration(r.busTime.Load())
	r.t.Total = time.Since(r.wall)
	res.Timings = r.t
	res.Output = r.output(end, res)
	if end.err != nil {
		return res, end.err
	}
	return res, nil
}

// maxArtifactValue bounds an artifact's value in the output.
const maxArtifactValue = 16 << 10

func (r *run) output(end ending, res Result) contract.Output {
	wire := end.status
	if wire == contract.SessionFailed {
		wire = contract.SessionAborted
	}
	// The output goes to stdout, the popup and CI logs, which the evidence
	// writer does not mask: every page- or model-made string is redacted.
	set := r.cfg.Secrets
	out := contract.Output{
		ComputerUseSessionID: r.id,
		Status:               wire,
		Summary:              set.Redact(end.summary),
		ActionsExecuted:      r.executed,
		DurationMs:           int(res.Timings.Total.Milliseconds()),
	}
	if r.curURL != "" && r.curURL != "about:blank" {
		u := set.Redact(r.curURL)
		out.LastURL = &u
	}
	out.Evidence, _ = json.Marshal(res.Evidence)
	out.Extra = map[string]json.RawMessage{}
	out.Extra["endStatus"], _ = json.Marshal(end.status)
	if end.err != nil {
		out.Extra["error"], _ = json.Marshal(map[string]string{"code": end.err.Code, "message": set.Redact(end.err.Error())})
	}
	type artOut struct {
		ID        string                `json:"id"`
		Type      contract.ArtifactType `json:"type"`
		SourceURL string                `json:"sourceUrl"`
		Selector  string                `json:"sourceSelector,omitempty"`
		Value     string                `json:"value"`
		Truncated bool                  `json:"truncated,omitempty"`
	}
	arts := []artOut{}
	for _, a := range r.artifacts {
		v := bound(a.Value, maxArtifactValue)
		arts = append(arts, artOut{ID: a.ID, Type: a.Type, SourceURL: set.Redact(a.SourceURL), Selector: set.Redact(a.SourceSelector), Value: set.Redact(v), Truncated: v != a.Value})
	}
	out.Extra["artifacts"], _ = json.Marshal(arts)
	out.Extra["denied"], _ = json.Marshal(r.denied)
	out.Extra["approved"], _ = json.Marshal(r.approved)
	return out
}

// --- helpers ------------------------------------------------------------

// bound makes s valid UTF-8 and cuts it to at most n bytes, marking the
// cut.
func bound(s string, n int) string {
	return text.Ellipsize(strings.ToValidUTF8(s, "\uFFFD"), n)
}

// actionSummary says what an executed action did, for the action event.
func actionSummary(a contract.Action, target *contract.Element, res contract.ToolResult) string {
	s := DescribeAction(a, target)
	if res.OK {
		s += ": ok"
	} else if res.Error != nil {
		s += ": failed (" + string(res.Error.Code) + ")"
	}
	return bound(s, 2000)
}

// okDetail is the progress detail of a successful action.
func okDetail(a contract.Action, res contract.ToolResult, url string) string {
	d := "now on " + bound(url, 500)
	if res.Note != "" {
		d += "; " + bound(res.Note, 500)
	}
	if len(res.ArtifactIDs) > 0 {
		d += "; extracted " + strings.Join(res.ArtifactIDs, ", ") + " (in the next observation's extractedArtifacts)"
	}
	return d
}

// plannedRan is how much of an offline navigator's plan ran: the furthest
// item that ran (the items run in order), of how many; all of them when
// the session completed (it can only complete when the plan is exhausted:
// a trailing expect step makes no action).
func (r *run) plannedRan(status contract.SessionStatus) navigator.PlanItem {
	p, ok := r.cfg.Navigator.(navigator.Planned)
	if !ok {
		return navigator.PlanItem{}
	}
	it := p.Item(-1)
	it.N = r.planRan.N
	if status == contract.SessionCompleted {
		it.N = it.Total
	}
	return it
}

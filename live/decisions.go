package live

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/session"
)

// DecisionFrame is the type of the frames that carry a session's gate
// decisions to a client that asked for them (?decisions=1). They are not
// seed 003 events and not in events.jsonl: a client that does not ask
// never receives one.
const DecisionFrame = "aegis.decision"

// MaxDecisions bounds the decisions a session's frames carry; later ones
// are not sent (the bundle holds them all).
const MaxDecisions = 16384

// Decision is one frame of type DecisionFrame: what the gate decided about
// one action or effect, taken from the decision record the bundle holds
// (decisions.jsonl). StepIndex is the record's stepIndex: the step the CLI
// prints as "step N/BUDGET" and the report as "step N".
type Decision struct {
	// Type is DecisionFrame.
	Type string `json:"type"`
	// ActionID is the action's id, as in the session's events.
	ActionID string `json:"actionId,omitempty"`
	// ActionType is the action's type; "" when the record holds no
	// action (an invalid one).
	ActionType contract.ActionType `json:"actionType,omitempty"`
	// StepIndex is the step the action was proposed at.
	StepIndex int `json:"stepIndex"`
	// Effect is true for the decision on an effect of the action (a
	// request or navigation the page made while it ran).
	Effect bool `json:"effect,omitempty"`
	// Result is allowed, denied, paused or approved.
	Result contract.DecisionResult `json:"result"`
	// Risk is low, medium or high.
	Risk contract.RiskTag `json:"risk"`
	// Rules are the deny rules that fired, for a denial.
	Rules []string `json:"rules,omitempty"`
}

// decisionLog follows a session's bundle as it is written: the ledger
// (provenance/ledger.json) gives the order in which decision records and
// events were appended, decisions.jsonl the decisions. For the k-th event
// of the session it knows which decisions were recorded before it, so a
// client receives each decision just before the first event recorded
// after it, in the bundle's order, whether it watches live or joins late.
//
// The writer appends a record before its ledger entry, and an event
// reaches the bus only after both: when the k-th event is on the bus, the
// ledger on disk already says what preceded it.
//
// A client replays the session from its first event (the bus keeps
// session.DefaultHistory events, far more than a session of at most 200
// actions emits), so the k-th event it is sent is the bundle's k-th.
type decisionLog struct {
	dir string

	mu        sync.Mutex
	ledger    tail
	decFile   tail
	decisions []Decision // in the order the ledger records them
	read      int        // decision lines taken
	unread    [][]byte   // decision lines read ahead of the ledger
	before    []int      // before[k]: decisions recorded before event k
	broken    bool       // the bundle could not be read: no more frames
}

func newDecisionLog(dir string) *decisionLog {
	return &decisionLog{
		dir:     dir,
		ledger:  tail{path: filepath.Join(dir, filepath.FromSlash(evidence.FileLedger))},
		decFile: tail{path: filepath.Join(dir, filepath.FromSlash(evidence.FileDecisions))},
	}
}

// upTo returns the decisions recorded before the session's k-th event
// (from 0); ok is false when the bundle does not say (not there, or not
// readable), and the event goes out without decisions.
func (d *decisionLog) upTo(k int) (out []Decision, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.broken {
		return nil, false
	}
	if k >= len(d.before) {
		if err := d.refresh(); err != nil {
			d.broken = true
			return nil, false
		}
	}
	if k >= len(d.before) {
		return nil, false
	}
	return d.decisions[:d.before[k]], true
}

// ledgerEntry is what the log needs of a ledger entry.
type ledgerEntry struct {
	Kind contract.LedgerKind `json:"kind"`
	Line int                 `json:"line"`
}

// decisionRecord is what a frame needs of a decision record.
type decisionRecord struct {
	ActionID  string                  `json:"actionId"`
	StepIndex int                     `json:"stepIndex"`
	Action    *struct{ Type string }  `json:"action"`
	Effect    json.RawMessage         `json:"effect"`
	Result    contract.DecisionResult `json:"result"`
	Risk      contract.RiskTag        `json:"risk"`
	Reasons   []struct{ Rule string } `json:"reasons"`
}

// refresh reads what the ledger gained since the last call, and the
// decision lines it names.
func (d *decisionLog) refresh() error {
	lines, err := d.ledger.read()
	if err != nil {
		return err
	}
	for _, l := range lines {
		var e ledgerEntry
		if err := json.Unmarshal(l, &e); err != nil {
			return err
		}
		switch e.Kind {
		case contract.LedgerDecision:
			if err := d.decision(e.Line); err != nil {
				return err
			}
		case contract.LedgerEvent:
			d.before = append(d.before, len(d.decisions))
		}
	}
	return nil
}

// decision reads the decision on line n of decisions.jsonl. The
// ledger names a JSON Lines file's lines 1, 2, 3, ... in turn (FORMAT.md,
// section 5, rule 5), and each after it is written.
func (d *decisionLog) decision(n int) error {
	if n != d.read+1 {
		return fmt.Errorf("live: the ledger names decision line %d after line %d", n, d.read)
	}
	if len(d.unread) == 0 {
		lines, err := d.decFile.read()
		if err != nil {
			return err
		}
		if len(lines) == 0 {
			return fmt.Errorf("live: the ledger names decision line %d, which is not there", n)
		}
		d.unread = lines
	}
	l := d.unread[0]
	d.unread = d.unread[1:]
	d.read++
	if len(d.decisions) >= MaxDecisions {
		return nil
	}
	var r decisionRecord
	if err := json.Unmarshal(l, &r); err != nil {
		return fmt.Errorf("live: decision line %d: %w", n, err)
	}
	switch r.Result {
	case contract.ResultAllowed, contract.ResultDenied, contract.ResultPaused, contract.ResultApproved:
	default:
		return fmt.Errorf("live: decision line %d: result %q", n, session.Sanitize(string(r.Result), 32))
	}
	switch r.Risk {
	case contract.RiskLow, contract.RiskMedium, contract.RiskHigh:
	default:
		return fmt.Errorf("live: decision line %d: risk %q", n, session.Sanitize(string(r.Risk), 32))
	}
	f := Decision{
		Type: DecisionFrame, ActionID: session.Sanitize(r.ActionID, 128), StepIndex: r.StepIndex,
		Effect: len(r.Effect) > 0 && string(r.Effect) != "null", Result: r.Result, Risk: r.Risk,
	}
	if r.Action != nil {
		f.ActionType = contract.ActionType(session.Sanitize(r.Action.Type, 32))
	}
	for _, rs := range r.Reasons {
		f.Rules = append(f.Rules, session.Sanitize(rs.Rule, 128))
	}
	d.decisions = append(d.decisions, f)
	return nil
}

// tail reads the complete lines a file being appended to gained.
type tail struct {
	path string
	off  int64 // bytes consumed: complete lines only
}

// read returns the complete lines added since the last read; a file that
// does not exist yet has none.
func (t *tail) read() ([][]byte, error) {
	f, err := os.Open(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, t.off, 1<<40))
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return out, nil
		}
		out = append(out, b[:i])
		t.off += int64(i + 1)
		b = b[i+1:]
	}
}

package navigator

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

// randomDocText returns a string drawn to exercise every escaping rule.
func randomDocText(r *rand.Rand) string {
	pieces := []string{"", "a", "Sign in", "\"", "\\", "<", ">", "&", "\n", "\t", "\x00", "\x1f", "é", "日本", "\u2028", "\xff", "{{secret:PW}}"}
	var b []byte
	for range r.IntN(5) {
		b = append(b, pieces[r.IntN(len(pieces))]...)
	}
	return string(b)
}

// randomTaskDoc draws a task document with every member now set, now
// empty, now nil.
func randomTaskDoc(r *rand.Rand) taskDoc {
	strs := func() []string {
		switch r.IntN(3) {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		var out []string
		for range 1 + r.IntN(3) {
			out = append(out, randomDocText(r))
		}
		return out
	}
	d := taskDoc{Goal: randomDocText(r), Step: r.IntN(200) - 1, Omitted: r.IntN(3) * r.IntN(50), Secrets: strs()}
	if r.IntN(4) != 0 {
		p := &contract.Plan{Goal: randomDocText(r)}
		if r.IntN(5) != 0 {
			p.Steps = []contract.PlanStep{}
			for range r.IntN(4) {
				p.Steps = append(p.Steps, contract.PlanStep{ID: randomDocText(r), Description: randomDocText(r), SuccessCriteria: randomDocText(r)})
			}
		}
		if r.IntN(2) == 0 {
			rev := r.IntN(9) - 1
			p.Revision = &rev
		}
		d.Plan = p
	}
	if r.IntN(6) != 0 {
		d.Progress = []progressDoc{}
		for range r.IntN(5) {
			a := contract.Action{ID: randomDocText(r), Type: contract.ActClick, Reason: randomDocText(r), Selector: randomDocText(r)}
			raw, _ := a.MarshalJSON()
			if r.IntN(10) == 0 {
				raw = nil
			}
			d.Progress = append(d.Progress, progressDoc{Step: r.IntN(50), Action: raw, Outcome: Outcome(randomDocText(r)), Detail: randomDocText(r)})
		}
	}
	if r.IntN(6) != 0 {
		d.Feedback = []Feedback{}
		for range r.IntN(4) {
			d.Feedback = append(d.Feedback, Feedback{ActionID: randomDocText(r), Kind: FeedbackKind(randomDocText(r)), Code: randomDocText(r), Message: randomDocText(r), Reasons: strs()})
		}
	}
	if r.IntN(2) == 0 {
		d.Trimmed = &observationTrims{Snapshot: r.IntN(2) == 0, Text: r.IntN(2) == 0, Artifacts: r.IntN(2) == 0}
	}
	return d
}

func TestTaskDocAgreesWithEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for i := range 5000 {
		d := randomTaskDoc(r)
		want, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		got := d.appendJSON([]byte("prefix"))
		if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
			t.Fatalf("#%d %+v:\n got %s\nwant prefix%s", i, d, got, want)
		}
	}
}

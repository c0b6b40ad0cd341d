package navigator

import (
	"strconv"

	"github.com/aegis-run/aegis/contract"
)

// The task document is rebuilt every step with up to DefaultMaxProgress
// actions in it; it is written here directly, as encoding/json would
// write it (tests hold the two together), without reflection.

// appendJSON appends the task document's JSON to b.
func (d *taskDoc) appendJSON(b []byte) []byte {
	b = append(b, `{"goal":`...)
	b = contract.AppendJSONString(b, d.Goal)
	if d.Plan != nil {
		b = append(b, `,"plan":`...)
		b = appendPlan(b, d.Plan)
	}
	b = append(b, `,"step":`...)
	b = strconv.AppendInt(b, int64(d.Step), 10)
	b = append(b, `,"progress":`...)
	b = appendList(b, d.Progress, (*progressDoc).appendJSON)
	if d.Omitted != 0 {
		b = append(b, `,"omittedEarlierProgress":`...)
		b = strconv.AppendInt(b, int64(d.Omitted), 10)
	}
	b = append(b, `,"feedback":`...)
	b = appendList(b, d.Feedback, (*Feedback).appendJSON)
	b = append(b, `,"secrets":`...)
	b = appendStrings(b, d.Secrets)
	if t := d.Trimmed; t != nil {
		b = append(b, `,"observationTrimmed":{`...)
		n := len(b)
		for _, m := range []struct {
			name string
			on   bool
		}{{"domSnapshot", t.Snapshot}, {"domText", t.Text}, {"extractedArtifacts", t.Artifacts}} {
			if !m.on {
				continue
			}
			if len(b) > n {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, m.name...)
			b = append(b, `":true`...)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// sizeHint is about the length of the task document's JSON.
func (d *taskDoc) sizeHint() int {
	n := 256 + len(d.Goal)
	if d.Plan != nil {
		n += len(d.Plan.Goal)
		for _, s := range d.Plan.Steps {
			n += 64 + len(s.ID) + len(s.Description) + len(s.SuccessCriteria)
		}
	}
	for _, p := range d.Progress {
		n += 64 + len(p.Action) + len(p.Outcome) + len(p.Detail)
	}
	for _, f := range d.Feedback {
		n += 64 + len(f.ActionID) + len(f.Code) + len(f.Message)
		for _, r := range f.Reasons {
			n += 4 + len(r)
		}
	}
	for _, s := range d.Secrets {
		n += 4 + len(s)
	}
	return n + n/8
}

// appendJSON appends a progress entry; its action is already JSON.
func (p *progressDoc) appendJSON(b []byte) []byte {
	b = append(b, `{"step":`...)
	b = strconv.AppendInt(b, int64(p.Step), 10)
	b = append(b, `,"action":`...)
	if p.Action == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, p.Action...)
	}
	b = append(b, `,"outcome":`...)
	b = contract.AppendJSONString(b, string(p.Outcome))
	if p.Detail != "" {
		b = append(b, `,"detail":`...)
		b = contract.AppendJSONString(b, p.Detail)
	}
	return append(b, '}')
}

// appendJSON appends one feedback entry.
func (f *Feedback) appendJSON(b []byte) []byte {
	b = append(b, `{"actionId":`...)
	b = contract.AppendJSONString(b, f.ActionID)
	b = append(b, `,"kind":`...)
	b = contract.AppendJSONString(b, string(f.Kind))
	if f.Code != "" {
		b = append(b, `,"code":`...)
		b = contract.AppendJSONString(b, f.Code)
	}
	if f.Message != "" {
		b = append(b, `,"message":`...)
		b = contract.AppendJSONString(b, f.Message)
	}
	if len(f.Reasons) > 0 {
		b = append(b, `,"reasons":`...)
		b = appendStrings(b, f.Reasons)
	}
	return append(b, '}')
}

// appendPlan appends a plan.
func appendPlan(b []byte, p *contract.Plan) []byte {
	b = append(b, `{"goal":`...)
	b = contract.AppendJSONString(b, p.Goal)
	b = append(b, `,"steps":`...)
	b = appendList(b, p.Steps, func(s *contract.PlanStep, b []byte) []byte {
		b = append(b, `{"id":`...)
		b = contract.AppendJSONString(b, s.ID)
		b = append(b, `,"description":`...)
		b = contract.AppendJSONString(b, s.Description)
		b = append(b, `,"successCriteria":`...)
		b = contract.AppendJSONString(b, s.SuccessCriteria)
		return append(b, '}')
	})
	if p.Revision != nil {
		b = append(b, `,"revision":`...)
		b = strconv.AppendInt(b, int64(*p.Revision), 10)
	}
	return append(b, '}')
}

// appendStrings appends a list of strings; nil is null, as encoding/json
// writes it.
func appendStrings(b []byte, ss []string) []byte {
	return appendList(b, ss, func(s *string, b []byte) []byte { return contract.AppendJSONString(b, *s) })
}

// appendList appends a JSON array of xs, each item written by item; a
// nil slice is null, as encoding/json writes it.
func appendList[T any](b []byte, xs []T, item func(*T, []byte) []byte) []byte {
	if xs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = item(&xs[i], b)
	}
	return append(b, ']')
}

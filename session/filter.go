package session

import (
	"errors"
	"fmt"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/secrets"
)

// The session passes what the page gives it through the egress filter of
// its secrets (secrets.Set.Mask) as it arrives: every observation
// (navigator.FilterObservation) and every element the driver describes,
// before either is recorded, judged, reported or shown to the Navigator.
// What it sends out passes the filter again on the way: events before the
// writer records them and when the bus publishes them, step reports
// (redactReport), approval requests, and the output (buildOutput). An
// extracted artifact is a structured value: one that holds a secret is
// refused whole (takeExtracted).

// filterTarget returns el with the secret values in its page-controlled
// words masked; nil stays nil.
func filterTarget(set *secrets.Set, el *contract.Element) *contract.Element {
	if el == nil || set.Len() == 0 {
		return el
	}
	t := *el
	t.Name, t.ID, t.Label, t.Text = set.Redact(t.Name), set.Redact(t.ID), set.Redact(t.Label), set.Redact(t.Text)
	return &t
}

// driverMessage returns a driver error's message without its code,
// filtered (the driver may quote page text or a selector holding a
// value) and then bounded: filtered first, so that the bound does not cut
// a value short of what the filter recognises.
func driverMessage(set *secrets.Set, err error) string {
	msg := err.Error()
	var de *driver.Error
	if errors.As(err, &de) {
		msg = de.ToolError().Message
	}
	return bound(set.Redact(msg), 1000)
}

// filterEvent returns ev with the secret values in its free text (URL,
// summary, message) masked.
func filterEvent(set *secrets.Set, ev contract.StreamEvent) contract.StreamEvent {
	if set.Len() == 0 {
		return ev
	}
	if ev.URL != nil {
		u := set.Redact(*ev.URL)
		ev.URL = &u
	}
	ev.Summary, ev.Message = set.Redact(ev.Summary), set.Redact(ev.Message)
	return ev
}

// filterRequest returns an approval request with the secret values in
// what the page controls masked: an approver shows it to a person, on a
// terminal or over the live channel. The action hash the approval binds to
// is the session's, not recomputed from the request.
func filterRequest(set *secrets.Set, req ApprovalRequest) ApprovalRequest {
	if set.Len() == 0 {
		return req
	}
	rep := redactReport(set, StepReport{Action: req.Action, Target: req.Target, Reasons: req.Reasons, Effect: req.Effect})
	req.Action, req.Target, req.Reasons, req.Effect = rep.Action, rep.Target, rep.Reasons, rep.Effect
	req.URL = set.Redact(req.URL)
	return req
}

// takeExtracted takes what an extract action produced from the driver and
// refuses every artifact whose value holds a secret (secrets.Set.Refuse):
// it is dropped, its id taken out of res.ArtifactIDs, and the returned
// error (a *secrets.HeldError) says which secret, never the value. Images
// are not values a program reads; they are kept (the driver masks
// sensitive fields in screenshots).
func (r *run) takeExtracted(res *contract.ToolResult) ([]driver.Extracted, error) {
	exs := r.drv.TakeArtifacts()
	set := r.cfg.Secrets
	if set.Len() == 0 {
		return exs, nil
	}
	var kept []driver.Extracted
	var held error
	refused := map[string]bool{}
	for _, ex := range exs {
		a := ex.Artifact
		if ex.Image == nil {
			what := fmt.Sprintf("the extracted %s of %s", a.Type, bound(a.SourceSelector, 128))
			if a.SourceSelector == "" {
				what = fmt.Sprintf("the extracted %s of the page", a.Type)
			}
			if err := set.Refuse(set.Redact(what), a.Value); err != nil {
				refused[a.ID] = true
				if held == nil {
					held = err
				}
				continue
			}
		}
		a.SourceURL, a.SourceSelector = set.Redact(a.SourceURL), set.Redact(a.SourceSelector)
		ex.Artifact = a
		kept = append(kept, ex)
	}
	if len(refused) > 0 {
		var ids []string
		for _, id := range res.ArtifactIDs {
			if !refused[id] {
				ids = append(ids, id)
			}
		}
		res.ArtifactIDs = ids
	}
	return kept, held
}

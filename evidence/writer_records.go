package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// The records a Writer takes, one method each: each is encoded (canonical
// JSON, its free text masked), validated and checked as the verifier will,
// then written and committed.

// Plan records a plan: the first as plan.json, each revision after it as
// plans/{n}.json.
func (w *Writer) Plan(p contract.Plan) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	canon, _, masked, err := w.prepare(string(schemas.KindPlan), p)
	if err != nil {
		return fmt.Errorf("evidence: plan: %w", err)
	}
	file := planFile(w.plans + 1)
	if err := w.appendFile(contract.LedgerPlan, file, canon, true); err != nil {
		return err
	}
	w.plans++
	return w.noteMasked(masked, file)
}

// Decision records a policy decision record as a line of decisions.jsonl.
// Its sessionId, when present, must be the bundle's. An approval it
// carries names its channel and carries a MAC that checks under
// Options.ApprovalKey when the writer has one, and neither when it has
// none (FORMAT.md, section 8, rule 16).
func (w *Writer) Decision(rec contract.DecisionRecord) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if a := rec.Action; a != nil && a.Type == contract.ActType && a.Redact {
		// Stored as the action line will store it (rule 15), and masked
		// from now on.
		w.mask.addRedacted(a.Text)
		c := a.Recorded()
		rec.Action = &c
	}
	canon, r, masked, err := w.prepare(string(schemas.KindDecision), rec)
	if err != nil {
		return fmt.Errorf("evidence: decision: %w", err)
	}
	d, err := decisionOf(r, requiresAction(w.start.FormatVersion))
	if err != nil {
		return fmt.Errorf("evidence: decision: %w", err)
	}
	if err := d.check(w.sid, w.apprv, w.ran); err != nil {
		return fmt.Errorf("evidence: decision: %w", err)
	}
	mark, err := checkApproval(r, w.opts.ApprovalKey != nil)
	if err == nil && mark != nil {
		err = mark.check(w.opts.ApprovalKey)
	}
	if err != nil {
		return fmt.Errorf("evidence: decision: %w", err)
	}
	if err := w.appendLine(contract.LedgerDecision, FileDecisions, canon); err != nil {
		return err
	}
	d.apply(w.allow, w.apprv)
	w.counts.Decisions++
	if w.cps != nil && rec.Approval != nil {
		// Anchored now, while only the session holds the approval key.
		w.cps.now(w.sid, w.hashes)
	}
	return w.noteMasked(masked, FileDecisions)
}

// Action records an executed action with its result as a line of
// actions.jsonl. The text of a type action with Redact true is stored as
// RedactedText (and masked from then on wherever it appears). The result
// must be the action's (same id and action name) and carry the bundle's
// session id. An action that no allow decision preceded is recorded all
// the same, and the error wraps ErrNotAllowed.
func (w *Writer) Action(a contract.Action, r contract.ToolResult) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if a.Type == contract.ActType && a.Redact {
		w.mask.addRedacted(a.Text)
	}
	a = a.Recorded()
	canon, lr, masked, err := w.prepare("", actionLine{Action: a, Result: r})
	if err != nil {
		return fmt.Errorf("evidence: action: %w", err)
	}
	if err := validateActionLine(lr); err != nil {
		return fmt.Errorf("evidence: action: %w", err)
	}
	facts, err := checkActionLine(lr, w.sid)
	if err != nil {
		return fmt.Errorf("evidence: action: %w", err)
	}
	if err := w.appendLine(contract.LedgerAction, FileActions, canon); err != nil {
		return err
	}
	w.counts.Actions++
	dec := w.allow[facts.id]
	delete(w.allow, facts.id)
	w.ran[facts.id] = true
	w.vision[facts.id] = dec.allow && isVisionEscalation(lr)
	owed := w.owed
	w.owed = &pendingAction{id: facts.id, typ: string(a.Type), line: w.lines[FileActions], entry: len(w.hashes) - 1}
	if err := w.noteMasked(masked, FileActions); err != nil {
		return err
	}
	var errs []error
	if !dec.allow {
		errs = append(errs, fmt.Errorf("%w: %s (actions.jsonl line %d)", ErrNotAllowed, facts.id, w.lines[FileActions]))
	} else if _, err := checkDecided(lr, dec); err != nil {
		errs = append(errs, fmt.Errorf("%w (actions.jsonl line %d)", err, w.lines[FileActions]))
	}
	if owed != nil {
		errs = append(errs, owed.owed(fmt.Sprintf("the next action line (%s line %d)", FileActions, w.lines[FileActions])))
	}
	return errors.Join(errs...)
}

// Event records a stream event as a line of events.jsonl.
func (w *Writer) Event(ev contract.StreamEvent) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	return w.event(ev)
}

func (w *Writer) event(ev contract.StreamEvent) error {
	canon, r, masked, err := w.prepare(string(schemas.KindEvent), ev)
	if err != nil {
		return fmt.Errorf("evidence: event: %w", err)
	}
	if err := checkEvent(r, w.sid); err != nil {
		return fmt.Errorf("evidence: event: %w", err)
	}
	paid, err := checkActionEvent(r, w.owed)
	if err != nil {
		return fmt.Errorf("evidence: event: %w", err)
	}
	if err := w.appendLine(contract.LedgerEvent, FileEvents, canon); err != nil {
		return err
	}
	if paid {
		w.owed = nil
	}
	w.counts.Events++
	if w.opts.OnEvent != nil {
		written := ev
		if masked {
			// Hand on what was written, not what was given.
			if err := json.Unmarshal(canon, &written); err != nil {
				return w.fail(fmt.Errorf("evidence: event: re-reading a masked event: %w", err))
			}
		}
		w.opts.OnEvent(written)
	}
	return w.noteMasked(masked, FileEvents)
}

// ModelCall records a model call as a line of model-calls.jsonl. Its
// sessionId must be the bundle's; llm.CallRecord.ModelCall builds one. The
// record holds the prompt's hash, never the prompt; secret values in it
// (in an error message, say) are masked like anywhere else.
func (w *Writer) ModelCall(rec contract.ModelCall) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	canon, r, masked, err := w.prepare(string(schemas.KindModelCall), rec)
	if err != nil {
		return fmt.Errorf("evidence: model call: %w", err)
	}
	if err := checkModelCall(r, w.sid); err != nil {
		return fmt.Errorf("evidence: model call: %w", err)
	}
	if err := checkModelImages(r, w.images, w.artDigest, w.shown); err != nil {
		return fmt.Errorf("evidence: model call (FORMAT.md, section 8, rule 17): %w", err)
	}
	if err := w.raiseFloor(r.at("time").str()); err != nil {
		return fmt.Errorf("evidence: model call: %w", err)
	}
	if err := w.appendLine(contract.LedgerModelCall, FileModelCalls, canon); err != nil {
		return err
	}
	w.counts.ModelCalls++
	return w.noteMasked(masked, FileModelCalls)
}

// errorEvent appends an error event of the writer's own.
func (w *Writer) errorEvent(code, msg string) error {
	return w.event(contract.StreamEvent{Type: contract.EventError, Code: code, Message: msg, Timestamp: formatTime(w.clock())})
}

// noteMasked records, after a record whose secrets were masked, an error
// event that says so (without the values).
func (w *Writer) noteMasked(masked bool, file string) error {
	if !masked {
		return nil
	}
	return w.errorEvent(CodeSecretMasked, fmt.Sprintf("secret values were masked in %s (entry %d)", file, len(w.hashes)-1))
}

// Observation records the observation of a step: its DOM snapshot verbatim
// as dom/{step}.html, then the observation, its domSnapshot emptied, as
// dom/{step}.json. state.domHash must be the SHA-256 of the snapshot's
// UTF-8 bytes, or "" to have it set; it must carry the bundle's session id.
// Each step is recorded once.
func (w *Writer) Observation(step int, obs contract.Observation) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if step < 0 || step > 9999999999 {
		return fmt.Errorf("evidence: observation: step %d out of range", step)
	}
	htmlFile, obsFile := domFiles(step)
	if w.taken(htmlFile) || w.taken(obsFile) {
		return fmt.Errorf("evidence: observation: step %d already recorded", step)
	}
	snap := obs.DOMSnapshot
	if !utf8.ValidString(snap) {
		return errors.New("evidence: observation: DOM snapshot is not valid UTF-8")
	}
	snapBytes := []byte(snap) // one copy for the digests, the checks and the file
	digest := Hash(sha256.Sum256(snapBytes))
	switch obs.State.DOMHash {
	case "":
	case digest.String():
	default:
		return fmt.Errorf("evidence: observation: state.domHash %s is not the SHA-256 of the DOM snapshot (%s)", obs.State.DOMHash, digest)
	}
	snap, maskedSnap := w.mask.maskString(snap)
	if maskedSnap {
		snapBytes = []byte(snap)
		digest = sha256.Sum256(snapBytes)
	}
	if err := w.mask.check("the DOM snapshot", snapBytes); err != nil {
		return fmt.Errorf("evidence: observation: %w", err)
	}
	obs.State.DOMHash = digest.String()
	obs.DOMSnapshot = ""
	obs.ExtractedArtifacts = w.storedCopies(obs.ExtractedArtifacts)
	canon, r, masked, err := w.prepare(string(schemas.KindObservation), obs)
	if err != nil {
		return fmt.Errorf("evidence: observation: %w", err)
	}
	if keep := w.equalCopies(r); keep != nil {
		// A copy masked since its file was written: left out, the file
		// holds the artifact.
		obs.ExtractedArtifacts = keep
		was := masked
		if canon, r, masked, err = w.prepare(string(schemas.KindObservation), obs); err != nil {
			return fmt.Errorf("evidence: observation: %w", err)
		}
		masked = masked || was
	}
	if err := checkObservation(r, w.sid, digest, snapBytes, true); err != nil {
		return fmt.Errorf("evidence: observation: %w", err)
	}
	ids, sums, err := embeddedArtifacts(r)
	if err != nil {
		return fmt.Errorf("evidence: observation: %w", err)
	}
	if err := w.appendFile(contract.LedgerDOMSnapshot, htmlFile, snapBytes, false); err != nil {
		return err
	}
	if err := w.appendFile(contract.LedgerObservation, obsFile, canon, true); err != nil {
		return err
	}
	for i, id := range ids {
		file := artifactFile(id)
		_, stored := w.artDigest[file]
		_, seen := w.embedded[file]
		if !stored && !seen {
			w.embedded[file] = embeddedArtifact{digest: sums[i], obs: obsFile, index: i}
		}
	}
	w.counts.Observations++
	return w.noteMasked(masked || maskedSnap, obsFile)
}

// Artifact records an extracted artifact as artifacts/{id}.json. An empty
// Hash is set: the SHA-256 of Value, or for a screenshot (whose Value is
// the uri of an image stored before) the image's. A refused artifact (bad
// hash, unknown image, invalid record, id taken, write error) is recorded
// as an error event instead, and the error wraps ErrQuarantined: the
// session may go on.
func (w *Writer) Artifact(a contract.Artifact) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.artifact(a); err != nil {
		return w.quarantine(a.ID, err)
	}
	return nil
}

func (w *Writer) artifact(a contract.Artifact) error {
	want, err := w.artifactHash(a)
	if err != nil {
		return err
	}
	if a.Hash == "" {
		a.Hash = want
	}
	if a.Hash != want {
		what := "the value"
		if a.Type == contract.ArtifactScreenshot {
			what = "its image"
		}
		return fmt.Errorf("hash %s, want the SHA-256 of %s %s", a.Hash, what, want)
	}
	canon, r, masked, err := w.prepare(shapeArtifact, a)
	if err != nil {
		return err
	}
	if masked {
		// The value changed, and its hash with it.
		a.Value = r.at("value").str()
		if a.Type != contract.ArtifactScreenshot {
			h := sha256.Sum256([]byte(a.Value))
			a.Hash = hex.EncodeToString(h[:])
		}
		if canon, r, _, err = w.prepare(shapeArtifact, a); err != nil {
			return err
		}
	}
	if err := checkArtifact(r, w.images); err != nil {
		return err
	}
	file := artifactFile(a.ID)
	if w.taken(file) {
		return fmt.Errorf("%s already recorded", file)
	}
	d := Hash(sha256.Sum256(canon))
	if e, ok := w.embedded[file]; ok && e.digest != d {
		return artifactMismatch(file, e)
	}
	var stored contract.Artifact
	if err := json.Unmarshal(canon, &stored); err != nil {
		return err
	}
	if err := w.appendFile(contract.LedgerArtifact, file, canon, true); err != nil {
		return err
	}
	w.artDigest[file], w.arts[stored.ID] = d, stored
	w.counts.Artifacts++
	return w.noteMasked(masked, file)
}

func (w *Writer) artifactHash(a contract.Artifact) (string, error) {
	if a.Type == contract.ArtifactScreenshot {
		h, ok := w.images[a.Value]
		if !ok {
			return "", fmt.Errorf("screenshot value %q is not the uri of an image stored in the bundle", a.Value)
		}
		return h.String(), nil
	}
	h := sha256.Sum256([]byte(a.Value))
	return hex.EncodeToString(h[:]), nil
}

// quarantine records a refused artifact as an error event and returns the
// error to hand the caller. A failure to record the event is sticky.
func (w *Writer) quarantine(id string, cause error) error {
	if w.err != nil { // the cause stopped the writer: nothing more can be recorded
		return w.err
	}
	id, _ = w.mask.maskString(id) // an id that holds a secret value was refused for it: do not repeat it
	qe := &QuarantineError{ID: id, Reason: "refused", Err: cause}
	msg := fmt.Sprintf("artifact %q not stored: %v", id, cause)
	if len(msg) > 4000 {
		msg = msg[:4000]
	}
	if !utf8.ValidString(msg) {
		msg = fmt.Sprintf("artifact not stored: %v", cause)
	}
	if err := w.errorEvent(CodeArtifactQuarantined, msg); err != nil {
		return errors.Join(qe, w.fail(err))
	}
	return qe
}

// Image stores an image as artifacts/{id}.png, .jpg or .webp (the type
// recognized from the bytes, never from a name or claim) and its record,
// which it returns, as artifacts/{id}.json. An image that is empty, too
// large (Options.MaxImageBytes), not PNG, JPEG or WebP, holds a secret
// value, or cannot be written is not stored: the refusal is recorded as an
// error event, and the error wraps ErrQuarantined: the session may go on.
func (w *Writer) Image(id string, data []byte, meta ImageMeta) (contract.ImageArtifact, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return contract.ImageArtifact{}, err
	}
	rec, err := w.image(id, data, meta)
	if err != nil {
		return contract.ImageArtifact{}, w.quarantine(id, err)
	}
	return rec, nil
}

func (w *Writer) image(id string, data []byte, meta ImageMeta) (contract.ImageArtifact, error) {
	var rec contract.ImageArtifact
	switch {
	case len(data) == 0:
		return rec, errors.New("empty image")
	case int64(len(data)) > w.opts.MaxImageBytes:
		return rec, fmt.Errorf("image of %d bytes exceeds the limit of %d", len(data), w.opts.MaxImageBytes)
	}
	info, ok := sniffImage(data)
	if !ok {
		return rec, errors.New("not a PNG, JPEG or WebP image (by its bytes)")
	}
	if p, found := w.mask.findIn(data); found {
		return rec, fmt.Errorf("image holds the value of %s", p)
	}
	file := "artifacts/" + id + imageExt[info.mime]
	digest := Hash(sha256.Sum256(data))
	rec = contract.ImageArtifact{
		ID: id, URI: file, MIMEType: info.mime, ByteSize: int64(len(data)), ContentHash: digest.String(),
		Width: info.width, Height: info.height, SourceURL: meta.SourceURL, ActionID: meta.ActionID,
	}
	canon, r, masked, err := w.prepare(string(schemas.KindImageArtifact), rec)
	if err != nil {
		return contract.ImageArtifact{}, err
	}
	if masked {
		return contract.ImageArtifact{}, errors.New("image record holds a secret value")
	}
	recFile := artifactFile(id)
	if !reArtifact.MatchString(file) {
		return contract.ImageArtifact{}, fmt.Errorf("id %q cannot name a file", id)
	}
	if w.taken(file) || w.taken(recFile) {
		return contract.ImageArtifact{}, fmt.Errorf("id %q already recorded", id)
	}
	if err := checkImageRecord(r, file, len(data), info, digest); err != nil {
		return contract.ImageArtifact{}, err
	}
	recDigest := Hash(sha256.Sum256(canon))
	if e, ok := w.embedded[recFile]; ok && e.digest != recDigest {
		return contract.ImageArtifact{}, artifactMismatch(recFile, e)
	}
	if err := w.appendFile(contract.LedgerImage, file, data, false); err != nil {
		return contract.ImageArtifact{}, err
	}
	w.images[file] = digest
	if err := w.appendFile(contract.LedgerImageArtifact, recFile, canon, true); err != nil {
		return contract.ImageArtifact{}, err
	}
	w.artDigest[recFile] = recDigest
	visionImage(w.shown, w.vision, file, r)
	w.counts.Artifacts++
	return rec, nil
}

// storedCopies returns the extracted artifacts an observation embeds, each
// whose record is stored replaced by that record: the observation embeds
// an artifact as its file holds it (the session's screenshot uri, hashes
// and masking included), FORMAT.md section 8, rule 13.
func (w *Writer) storedCopies(arts []contract.Artifact) []contract.Artifact {
	if len(arts) == 0 {
		return arts
	}
	out := make([]contract.Artifact, len(arts))
	for i, a := range arts {
		if stored, ok := w.arts[a.ID]; ok {
			a = stored
		}
		out[i] = a
	}
	return out
}

// equalCopies returns nil when every artifact the prepared observation r
// embeds equals its file (or the copy an earlier observation embeds);
// otherwise the embedded artifacts that do, as the observation holds
// them. A copy differs when masking changed it after its file was written
// (a redacted text typed since).
func (w *Writer) equalCopies(r rec) []contract.Artifact {
	ids, sums, err := embeddedArtifacts(r)
	if err != nil {
		return nil
	}
	var keep []contract.Artifact
	differs := false
	list, _ := r.at("extractedArtifacts").value().([]any)
	for i, id := range ids {
		file := artifactFile(id)
		want, ok := w.artDigest[file]
		if !ok {
			if e, seen := w.embedded[file]; seen {
				want, ok = e.digest, true
			}
		}
		if ok && want != sums[i] {
			differs = true
			continue
		}
		var a contract.Artifact
		if err := decodeTree(list[i], &a); err != nil {
			differs = true
			continue
		}
		keep = append(keep, a)
	}
	if !differs {
		return nil
	}
	if keep == nil {
		keep = []contract.Artifact{}
	}
	return keep
}

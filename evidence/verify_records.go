package evidence

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// What the records say, checked against the records before them: the
// session, decisions before actions, the order of snapshots and
// observations, images and their records, the manifests.

// record checks what a well-formed record says against the records before
// it, by kind.
func (v *verifier) record(p *prepared) error {
	e, r := p.e, p.rec
	bad := func(check string, err error) error { return fault(e.File, e.Line, e.Index, check, err) }
	v.next, v.nextKind = "", ""
	switch e.Kind {
	case contract.LedgerImage:
		v.images[e.File] = p.digest
		v.next, v.nextKind = artifactFile(artifactID(e.File)), contract.LedgerImageArtifact
	case contract.LedgerDOMSnapshot:
		_, v.next = domFiles(stepOf(e.File))
		v.nextKind = contract.LedgerObservation
	case contract.LedgerManifestStart:
		if err := checkStartManifest(r); err != nil {
			return bad("manifest", err)
		}
		if err := notBefore("the entry's time", e.Time, "startedAt", r.at("startedAt").str()); err != nil {
			return bad("time", err)
		}
		v.sid = r.at("sessionId").str()
		v.keyHash = r.at("approvalKeyHash").str()
		v.report.SessionID = v.sid
		v.format = r.at("formatVersion").str()
		v.strict = requiresAction(v.format)
		v.report.FormatVersion = v.format
		canon, err := canonjson.EncodeValue(r.value())
		if err != nil {
			return bad("manifest", err)
		}
		v.startCanon, v.startTree = canon, r.value()
	case contract.LedgerPlan:
		if want := planFile(v.plans + 1); e.File != want {
			return bad("order", fmt.Errorf("plan revision %d must be %s", v.plans+1, want))
		}
		v.plans++
	case contract.LedgerDecision:
		d, err := decisionOf(r, v.strict)
		if err != nil {
			return bad("decision", err)
		}
		if err := d.check(v.sid, v.consumed, v.ran); err != nil {
			return bad("decision", err)
		}
		mark, err := checkApproval(r, v.keyHash != "")
		if err != nil {
			return bad("approval", err)
		}
		if mark != nil {
			mark.line, mark.entry = e.Line, e.Index
			v.approvals = append(v.approvals, mark)
		}
		if a := r.at("approval"); a.present() {
			v.report.Approvals.add(a.at("channel").str())
		}
		d.apply(v.allow, v.consumed)
		v.counts.Decisions++
		if d.Effect {
			v.report.Effects.add(d)
		}
	case contract.LedgerAction:
		facts, err := checkActionLine(r, v.sid)
		if err != nil {
			return bad("action line", err)
		}
		dec := v.allow[facts.id]
		if !dec.allow {
			return bad("authorization", fmt.Errorf("action %q executed without an allow decision before it", facts.id))
		}
		compared, err := checkDecided(r, dec)
		if err != nil {
			return bad("decided action", err)
		}
		if !compared {
			v.uncompared++
		}
		if v.owed != nil {
			return v.owedError(fmt.Sprintf("the next action line (%s line %d)", FileActions, e.Line))
		}
		delete(v.allow, facts.id)
		v.ran[facts.id] = true
		v.vision[facts.id] = isVisionEscalation(r)
		v.owed = &pendingAction{id: facts.id, typ: r.at("action").at("type").str(), line: e.Line, entry: e.Index}
		v.counts.Actions++
	case contract.LedgerEvent:
		if err := checkEvent(r, v.sid); err != nil {
			return bad("event", err)
		}
		paid, err := checkActionEvent(r, v.owed)
		if err != nil {
			return bad("action event", err)
		}
		if paid {
			v.owed = nil
		}
		v.counts.Events++
	case contract.LedgerModelCall:
		if err := checkModelCall(r, v.sid); err != nil {
			return bad("model call", err)
		}
		if err := notBefore("the entry's time", e.Time, "the call's time", r.at("time").str()); err != nil {
			return bad("time", err)
		}
		if err := checkModelImages(r, v.images, v.artDigest, v.shown); err != nil {
			return bad("model images", err)
		}
		v.counts.ModelCalls++
	case contract.LedgerObservation:
		if html, _ := domFiles(stepOf(e.File)); v.lastKind != contract.LedgerDOMSnapshot || !v.used[html] {
			return bad("order", fmt.Errorf("not recorded right after its snapshot %s", html))
		}
		if err := checkObservation(r, v.sid, v.prevDigest, nil, false); err != nil {
			return bad("observation", err)
		}
		if err := v.embeddedCopies(e.File, r); err != nil {
			return bad("artifact copy", err)
		}
		v.counts.Observations++
	case contract.LedgerArtifact:
		if id := r.at("id").str(); artifactFile(id) != e.File {
			return bad("artifact", fmt.Errorf("id %q does not match the file name", id))
		}
		if err := checkArtifact(r, v.images); err != nil {
			return bad("artifact", err)
		}
		if err := v.artifactCopy(e.File, p.digest); err != nil {
			return bad("artifact copy", err)
		}
		v.counts.Artifacts++
	case contract.LedgerImageArtifact:
		if v.lastKind != contract.LedgerImage {
			return bad("order", errors.New("an image record follows its image"))
		}
		img := strings.TrimSuffix(e.File, ".json") + imageExt[v.prevImg.mime]
		if err := checkImageRecord(r, img, v.prevSize, v.prevImg, v.prevDigest); err != nil {
			return bad("image record", err)
		}
		visionImage(v.shown, v.vision, img, r)
		if err := v.artifactCopy(e.File, p.digest); err != nil {
			return bad("artifact copy", err)
		}
		v.counts.Artifacts++
	case contract.LedgerManifestEnd:
		if v.owed != nil {
			return v.owedError("the seal (" + FileManifestEnd + ")")
		}
		if err := notBefore("endedAt", r.at("endedAt").str(), "the previous entry's time", v.lastTime); err != nil {
			return bad("time", err)
		}
		tree := r.value()
		if err := v.checkEndManifest(tree); err != nil {
			return bad("manifest", err)
		}
		key, err := checkApprovalKey(r, v.keyHash)
		if err != nil {
			return bad("manifest", err)
		}
		if err := v.checkApprovalMACs(key); err != nil {
			return err
		}
		v.endTree = tree
	}
	return nil
}

// owedError names the action line that has no action event, found at
// next.
func (v *verifier) owedError(next string) error {
	return fault(FileActions, v.owed.line, v.owed.entry, "action event", v.owed.owed(next))
}

// embeddedCopies checks the extracted artifacts an observation embeds
// against the files of their ids recorded before it, and keeps the others
// for the files recorded after it.
func (v *verifier) embeddedCopies(obsFile string, r rec) error {
	ids, sums, err := embeddedArtifacts(r)
	if err != nil {
		return err
	}
	for i, id := range ids {
		file := artifactFile(id)
		if d, ok := v.artDigest[file]; ok {
			if d != sums[i] {
				return fmt.Errorf("extractedArtifacts[%d] (id %q) differs from %s: want the record of SHA-256 %s, got one of %s", i, id, file, d, sums[i])
			}
			continue
		}
		if prev, ok := v.embedded[file]; ok {
			if prev.digest != sums[i] {
				return fmt.Errorf("extractedArtifacts[%d] (id %q) differs from the copy %s embeds", i, id, prev.obs)
			}
			continue
		}
		v.embedded[file] = embeddedArtifact{digest: sums[i], obs: obsFile, index: i}
	}
	return nil
}

// artifactCopy records the digest of an artifact's or image's record and
// checks it against a copy an observation embedded before it.
func (v *verifier) artifactCopy(file string, digest Hash) error {
	v.artDigest[file] = digest
	if e, ok := v.embedded[file]; ok && e.digest != digest {
		return artifactMismatch(file, e)
	}
	return nil
}

// stepOf returns the step of dom/{step}.ext.
func stepOf(file string) int {
	m := reDOM.FindStringSubmatch(file)
	n := 0
	for _, c := range m[1] {
		n = n*10 + int(c-'0')
	}
	return n
}

// checkEndManifest: the manifest as the session ended is the manifest as
// it started but for its status, endedAt, counts (which must be the
// records counted) and signer.
func (v *verifier) checkEndManifest(tree any) error {
	end, _ := tree.(map[string]any)
	start, _ := v.startTree.(map[string]any)
	if s := strMember(end, "status"); s == string(contract.SessionRunning) {
		return errors.New("status running in the manifest-end record")
	}
	if end["seal"] != nil {
		return errors.New("seal in the manifest-end record")
	}
	keys := map[string]bool{}
	for k := range end {
		keys[k] = true
	}
	for k := range start {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		switch k {
		case "status", "endedAt", "counts", "signer", "approvalKey":
			continue
		}
		if !schemas.Equal(end[k], start[k]) {
			return fmt.Errorf("%s differs from the manifest as the session started", k)
		}
	}
	var counts contract.Counts
	if err := decodeTree(end["counts"], &counts); err != nil {
		return err
	}
	if counts != v.counts {
		return fmt.Errorf("counts %+v, but the bundle holds %+v", counts, v.counts)
	}
	return nil
}

// checkApprovalMACs checks, at the manifest-end record, every approval's
// MAC under the approval key it reveals (rule 16); a MAC that does not
// check is reported at its decision.
func (v *verifier) checkApprovalMACs(key []byte) error {
	for _, m := range v.approvals {
		if err := m.check(key); err != nil {
			return fault(FileDecisions, m.line, m.entry, "approval", err)
		}
		v.report.Approvals.MACs++
	}
	return nil
}

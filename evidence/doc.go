// Package evidence writes, verifies, seals, signs, packs and proves the
// evidence bundle of an aegis session: a directory, written append-only
// as the session runs, in which every record (plan, observation and DOM
// snapshot, policy decision, executed action with its result, model call,
// stream event, extracted artifact, image) is committed by a ledger entry
// hash-chained to the one before it, and which is sealed when the session
// ends with the head of the chain and an RFC 6962 Merkle root over all
// entries, optionally signed as a DSSE envelope with Ed25519.
//
// An auditor who was not there verifies a bundle offline with Verify (or
// aegis verify): that nothing was changed, added, removed or reordered,
// that every executed action was allowed by a decision before it and has
// its action event after it, that times never go backwards, that the
// artifacts observations embed are their files, that every approval names
// the channel it came on and carries a MAC under the session's approval
// key (committed at the start, revealed at the seal: Options.ApprovalKey,
// ApprovalMAC), and, with the signer's public key, who sealed it. A bundle left by a writer that was
// killed verifies as unsealed, with the number of intact entries. Prove and
// VerifyProof prove one entry without the rest of the bundle; Pack and
// Unpack move a bundle as one deterministic .tar.zst file. With
// Options.Checkpoint, the writer also hands the ledger's head (size,
// Merkle root, head hash) to a Checkpointer after entry 0, after every
// decision that carries an approval, every few entries and at the seal,
// so that a witness outside the bundle holds it (package witness,
// FORMAT.md section 14); ConsistencyProof and VerifyConsistency are the
// RFC 6962 proofs a witness checks.
//
// The format is specified in FORMAT.md, precisely enough for an independent
// verifier without Go source: with the schema files its Appendix A lists by
// path and SHA-256. A VerifyError names the rule of FORMAT.md its check
// enforces (RuleRef). The session loop writes through a Writer:
//
//	key, err := evidence.NewApprovalKey()
//	w, err := evidence.Create(root, manifest, evidence.Options{Secrets: secrets, ApprovalKey: key})
//	w.Plan(plan)
//	w.Observation(step, obs)
//	w.Decision(record)         // every evaluated action, allowed or not
//	w.Action(action, result)   // every executed action, then its action event
//	w.Event(event)
//	w.ModelCall(call.ModelCall(sessionID, step, time.Now())) // each llm.CallRecord
//	w.Image(id, png, meta)     // refused images are quarantined: log and go on
//	w.Artifact(artifact)
//	w.Seal(ctx, contract.SessionCompleted, time.Now(), signer)
package evidence

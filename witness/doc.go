// Package witness anchors evidence bundles outside themselves: while a
// session runs, the bundle's writer sends signed checkpoints of its ledger
// (size, Merkle root and head hash; evidence.Checkpointer) to a witness,
// which keeps them append-only and refuses any that does not extend the
// last one it holds; `aegis verify --witness` then checks the bundle
// against the witness's copy, so that whoever holds the bundle's signing
// key can no longer truncate or rewrite it and re-sign it unnoticed.
//
// A checkpoint is a C2SP tlog-checkpoint (origin, tree size, base64 root
// hash, and one extension line with the head hash) signed as a C2SP signed
// note with an Ed25519 key: evidence/FORMAT.md, section 14, specifies the
// bytes. A witness is a file (file:PATH, an append-only log of
// checkpoints, Log with a file store) or an HTTP endpoint (Server, the
// `aegis witness serve` command) that speaks the small API of FORMAT.md,
// section 14: POST /checkpoint with a consistency proof, GET
// /checkpoint?origin=ORIGIN. A witness others reach takes only the keys
// it is given and keeps a bounded number of origins (Admission).
package witness

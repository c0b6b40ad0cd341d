package contract

// The Go side of the evidence bundle's manifest and ledger (schemas
// evidence-manifest.schema.json and ledger-entry.schema.json, kinds
// "manifest" and "ledger-entry"). The bundle format itself (files, hashing,
// chain, seal, signature, packing) is specified in evidence/FORMAT.md and
// implemented by package evidence. Times stay strings (RFC 3339) and hashes
// are 64 lowercase hex digits, as everywhere in the contract.

// ManifestFormatVersion is the formatVersion of the manifests this version
// of aegis writes: in an aegis-evidence/2 bundle every decision that lets
// an action run records the action it judged and the page it judged it on
// (evidence/FORMAT.md, section 8, rule 15).
const ManifestFormatVersion = "aegis-evidence/2"

// ManifestFormatVersion1 is the formatVersion of bundles written before
// decisions had to record their action. aegis still reads and verifies
// them, under the rules of their time: an executed action is compared with
// the decided one only where the decision recorded it, and aegis verify
// says so.
const ManifestFormatVersion1 = "aegis-evidence/1"

// GenesisPrevHash is the prevHash of the ledger's first entry (index 0),
// and of no other.
const GenesisPrevHash = "0000000000000000000000000000000000000000000000000000000000000000"

// Manifest is the manifest.json of an evidence bundle (schema kind
// "manifest"). While Status is SessionRunning it has neither EndedAt, Signer
// nor Seal. The same shape is recorded twice in the ledger: as first
// written (provenance/manifest-start.json, status running) and as last
// written before the seal (provenance/manifest-end.json, final status, no
// seal); the sealed manifest.json is the latter plus Seal.
type Manifest struct {
	// FormatVersion is ManifestFormatVersion (ManifestFormatVersion1 in
	// older bundles).
	FormatVersion string `json:"formatVersion"`
	// SessionID identifies the session the bundle records.
	SessionID string `json:"sessionId"`
	// Goal is the session's goal, a copy of Task.Goal.
	Goal string `json:"goal"`
	// Task is the task exactly as the session received it.
	Task Input `json:"task"`
	// Driver is the driver that ran the session.
	Driver DriverMode `json:"driver"`
	// StartedAt is when the session started.
	StartedAt string `json:"startedAt"`
	// EndedAt is when the session ended; "" (absent) while it runs.
	EndedAt string `json:"endedAt,omitempty"`
	// Status is SessionRunning, then how the session ended.
	Status SessionStatus `json:"status"`
	// Versions names the versions of everything that decided or acted.
	Versions Versions `json:"versions"`
	// Counts counts the records of the bundle (all zero while running).
	Counts Counts `json:"counts"`
	// Signer is the key id ("ed25519:" and the public key in 64 lowercase
	// hex digits) of the DSSE signature over the sealed manifest
	// (provenance/seal.dsse.json); "" (absent) for an unsigned bundle and
	// while running. It is a hint naming the key, never a trust anchor.
	Signer string `json:"signer,omitempty"`
	// ApprovalKeyHash is the commitment to the session's approval key:
	// the SHA-256 (hex) of its 32 bytes; "" (absent) when the session has
	// none (evidence/FORMAT.md, section 8, rule 16).
	ApprovalKeyHash string `json:"approvalKeyHash,omitempty"`
	// ApprovalKey is the session's approval key in 64 lowercase hex
	// digits, revealed in the manifest as the session ended (never while
	// it runs), so that a verifier can check every approval's MAC; ""
	// (absent) when the session has none.
	ApprovalKey string `json:"approvalKey,omitempty"`
	// Seal seals the ledger; nil until the session is over and sealed.
	Seal *Seal `json:"seal,omitempty"`
}

// Versions names the versions of everything that decided or acted in a
// session.
type Versions struct {
	// Aegis is the aegis version, such as v0.3.1 or (devel).
	Aegis string `json:"aegis"`
	// Policy is the SHA-256 (hex) over the policy files and data.
	Policy string `json:"policy"`
	// Extension is the Chrome extension's version; "" (absent) unless the
	// extension drove the session.
	Extension string `json:"extension,omitempty"`
	// Model is the model the Planner and Navigator used; "" when absent.
	Model string `json:"model,omitempty"`
	// ModelID is the id the model's endpoint reported for it (GET
	// /v1/models) when a model registry checked it; "" otherwise.
	ModelID string `json:"modelId,omitempty"`
	// ModelDigest is the digest the endpoint reported for the model
	// (Ollama's /api/tags) when a model registry checked it; "" when the
	// endpoint reports none or no registry checked it.
	ModelDigest string `json:"modelDigest,omitempty"`
	// ModelPath is the model file a llama.cpp server reported (GET /props
	// model_path) when a model registry checked the model: its identity
	// where the server reports no digest; "" otherwise.
	ModelPath string `json:"modelPath,omitempty"`
	// ModelPrices are the prices the model registry lists for the model,
	// which priced the run (ModelCall.CostUSD, hints.maxCostUsd); nil when
	// no registry checked it.
	ModelPrices *ModelPrices `json:"modelPrices,omitempty"`
}

// Counts counts the records an evidence bundle holds.
type Counts struct {
	// Actions counts the executed actions: the lines of actions.jsonl.
	Actions int `json:"actions"`
	// Decisions counts the policy decision records: the lines of
	// decisions.jsonl.
	Decisions int `json:"decisions"`
	// Events counts the stream events: the lines of events.jsonl.
	Events int `json:"events"`
	// Observations counts the observations (dom/{step}.json, each with its
	// dom/{step}.html snapshot).
	Observations int `json:"observations"`
	// Artifacts counts the artifact records under artifacts/: extracted
	// artifacts and image records (not the image files themselves).
	Artifacts int `json:"artifacts"`
	// ModelCalls counts the model-call records: the lines of
	// model-calls.jsonl. 0 is written as absent (the schema refuses an
	// explicit 0).
	ModelCalls int `json:"modelCalls,omitempty"`
}

// Seal seals an evidence bundle's ledger once the session is over.
type Seal struct {
	// Entries is how many entries the ledger holds (at least 2: the
	// genesis entry and the manifest-end entry).
	Entries int `json:"entries"`
	// HeadHash is the EntryHash of the ledger's last entry.
	HeadHash string `json:"headHash"`
	// MerkleRoot is the RFC 6962 Merkle tree hash over the entries'
	// EntryHash values (32 bytes each), in index order.
	MerkleRoot string `json:"merkleRoot"`
	// SealedAt is when the seal was written: the Time of the last entry.
	SealedAt string `json:"sealedAt"`
}

// LedgerKind is what a ledger entry records. Each kind lives at its own
// place in the bundle (see evidence/FORMAT.md).
type LedgerKind string

// The ledger entry kinds.
const (
	LedgerManifestStart LedgerKind = "manifest-start" // provenance/manifest-start.json: the genesis entry, the manifest as first written
	LedgerPlan          LedgerKind = "plan"           // plan.json, then plans/{n}.json: a BrowserPlan and its revisions
	LedgerAction        LedgerKind = "action"         // a line of actions.jsonl: an executed action with its ToolResult
	LedgerDecision      LedgerKind = "decision"       // a line of decisions.jsonl: a policy decision record
	LedgerEvent         LedgerKind = "event"          // a line of events.jsonl: a stream event
	LedgerModelCall     LedgerKind = "model-call"     // a line of model-calls.jsonl: the record of one model call
	LedgerDOMSnapshot   LedgerKind = "dom-snapshot"   // dom/{step}.html: an observation's DOM snapshot, verbatim
	LedgerObservation   LedgerKind = "observation"    // dom/{step}.json: a BrowserObservation, its snapshot moved to the .html
	LedgerArtifact      LedgerKind = "artifact"       // artifacts/{id}.json: an extracted artifact
	LedgerImage         LedgerKind = "image"          // artifacts/{id}.png|jpg|webp: an image's bytes
	LedgerImageArtifact LedgerKind = "image-artifact" // artifacts/{id}.json: the ImageArtifact record of an image
	LedgerManifestEnd   LedgerKind = "manifest-end"   // provenance/manifest-end.json: the last entry, the manifest as the session ended
)

// LedgerKinds returns every ledger kind, in the order of the constants.
func LedgerKinds() []LedgerKind {
	return []LedgerKind{
		LedgerManifestStart, LedgerPlan, LedgerAction, LedgerDecision, LedgerEvent, LedgerModelCall,
		LedgerDOMSnapshot, LedgerObservation, LedgerArtifact, LedgerImage, LedgerImageArtifact, LedgerManifestEnd,
	}
}

// LedgerEntry is one line of provenance/ledger.json, which is kept as JSON
// Lines (schema kind "ledger-entry"): one record of the bundle, hash-chained
// to the entry before it.
type LedgerEntry struct {
	// Index is the entry's position, from 0 without gaps.
	Index int `json:"index"`
	// Kind is what the recorded record is.
	Kind LedgerKind `json:"kind"`
	// File is the record's path relative to the bundle root.
	File string `json:"file"`
	// Line is the record's line (from 1) in a .jsonl File; 0 (absent) for
	// other files.
	Line int `json:"line,omitempty"`
	// ContentHash commits to the record's bytes and kind:
	// SHA-256("aegis.evidence.v1.content:" || kind || ":" || SHA-256(record)),
	// in hex (evidence/FORMAT.md).
	ContentHash string `json:"contentHash"`
	// PrevHash is the previous entry's EntryHash; GenesisPrevHash for the
	// entry at index 0.
	PrevHash string `json:"prevHash"`
	// EntryHash is SHA-256("aegis.evidence.v1.entry:" || the canonical
	// bytes (RFC 8785) of the entry without its entryHash member), in hex.
	EntryHash string `json:"entryHash"`
	// Time is when the record was appended, an RFC 3339 date-time.
	Time string `json:"time"`
}

package contract

// The Go side of the evidence bundle's manifest and ledger (schemas
// evidence-manifest.schema.json and ledger-entry.schema.json, kinds
// "manifest" and "ledger-entry"). Both shapes are PRELIMINARY: a later issue
// settles the details. Times stay strings (RFC 3339) and hashes are 64
// lowercase hex digits, as everywhere in the contract.

// ManifestFormatVersion is the formatVersion of the manifests this version
// of aegis writes and reads.
const ManifestFormatVersion = "aegis-evidence/1"

// GenesisPrevHash is the prevHash of the ledger's first entry (index 0),
// and of no other.
const GenesisPrevHash = "0000000000000000000000000000000000000000000000000000000000000000"

// Manifest is the manifest.json of an evidence bundle (schema kind
// "manifest"). While Status is SessionRunning it has neither EndedAt nor
// Seal; a sealed manifest has both.
type Manifest struct {
	// FormatVersion is ManifestFormatVersion.
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
	// Counts counts the records of the bundle.
	Counts Counts `json:"counts"`
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
}

// Counts counts the records an evidence bundle holds.
type Counts struct {
	// Actions counts the actions in actions.jsonl.
	Actions int `json:"actions"`
	// Decisions counts the policy decision records.
	Decisions int `json:"decisions"`
	// Events counts the stream events.
	Events int `json:"events"`
	// Observations counts the observations (each with a DOM snapshot).
	Observations int `json:"observations"`
	// Artifacts counts the artifacts.
	Artifacts int `json:"artifacts"`
}

// Seal seals an evidence bundle's ledger once the session is over.
type Seal struct {
	// Entries is how many entries the ledger holds (at least 1).
	Entries int `json:"entries"`
	// HeadHash is the EntryHash of the ledger's last entry.
	HeadHash string `json:"headHash"`
	// MerkleRoot is the RFC 6962 Merkle tree hash over the entries'
	// EntryHash values, in index order.
	MerkleRoot string `json:"merkleRoot"`
	// SealedAt is when the seal was written.
	SealedAt string `json:"sealedAt"`
}

// LedgerKind is what a ledger entry records.
type LedgerKind string

// The ledger entry kinds.
const (
	LedgerManifestStart     LedgerKind = "manifest-start"     // the genesis entry: the manifest as first written
	LedgerPlan              LedgerKind = "plan"               // a BrowserPlan
	LedgerNavigatorResponse LedgerKind = "navigator-response" // the model's answer, as received
	LedgerAction            LedgerKind = "action"             // a line of actions.jsonl
	LedgerDecision          LedgerKind = "decision"           // a policy decision record
	LedgerControl           LedgerKind = "control"            // an operator's abort or approval decision
	LedgerEvent             LedgerKind = "event"              // a stream event
	LedgerObservation       LedgerKind = "observation"        // a BrowserObservation
	LedgerDOMSnapshot       LedgerKind = "dom-snapshot"       // dom/{step}.json
	LedgerArtifact          LedgerKind = "artifact"           // artifacts/{id}.json
	LedgerImageArtifact     LedgerKind = "image-artifact"     // an image stored in the bundle
	LedgerToolResult        LedgerKind = "tool-result"        // an executed action's result
)

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
	// ContentHash is the SHA-256 (hex) of the record's canonical bytes
	// (RFC 8785, package canonjson).
	ContentHash string `json:"contentHash"`
	// PrevHash is the previous entry's EntryHash; GenesisPrevHash for the
	// entry at index 0.
	PrevHash string `json:"prevHash"`
	// EntryHash is the SHA-256 (hex) of the canonical bytes of the entry
	// without its entryHash member.
	EntryHash string `json:"entryHash"`
	// Time is when the record was appended, an RFC 3339 date-time.
	Time string `json:"time"`
}

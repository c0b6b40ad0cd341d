package evidence

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/aegis-run/aegis/contract"
)

// The files of a bundle, relative to its root (see FORMAT.md).
const (
	// FileManifest is the manifest: running, then sealed.
	FileManifest = "manifest.json"
	// FileLedger is the hash chain, one entry per line.
	FileLedger = "provenance/ledger.json"
	// FileManifestStart is the manifest as first written (entry 0).
	FileManifestStart = "provenance/manifest-start.json"
	// FileManifestEnd is the manifest as the session ended (last entry).
	FileManifestEnd = "provenance/manifest-end.json"
	// FileSeal is the DSSE envelope that signs the sealed manifest.
	FileSeal = "provenance/seal.dsse.json"
	// FileActions holds the executed actions, one per line.
	FileActions = "actions.jsonl"
	// FileDecisions holds the decision records, one per line.
	FileDecisions = "decisions.jsonl"
	// FileEvents holds the stream events, one per line.
	FileEvents = "events.jsonl"
	// FileModelCalls holds the model-call records, one per line.
	FileModelCalls = "model-calls.jsonl"
	// FilePlan is the first plan; revision n >= 2 is plans/{n}.json.
	FilePlan = "plan.json"

	// tmpSuffix names the temporary file a file is written to before it
	// is renamed into place (manifest.json and the seal envelope only).
	tmpSuffix = ".tmp"
)

// RedactedText replaces the text of a type action with redact true.
const RedactedText = contract.RedactedText

// secretPlaceholder returns what a secret's value is replaced with.
func secretPlaceholder(name string) string { return "{{secret:" + name + "}}" }

// planFile returns the file of plan revision rev (from 1).
func planFile(rev int) string {
	if rev == 1 {
		return FilePlan
	}
	return "plans/" + strconv.Itoa(rev) + ".json"
}

// domFiles returns the snapshot and observation files of a step.
func domFiles(step int) (html, obs string) {
	s := strconv.Itoa(step)
	return "dom/" + s + ".html", "dom/" + s + ".json"
}

// artifactFile returns the record file of an artifact or image id.
func artifactFile(id string) string { return "artifacts/" + id + ".json" }

// imageExt maps an image media type to its file extension.
var imageExt = map[string]string{contract.MIMEPNG: ".png", contract.MIMEJPEG: ".jpg", contract.MIMEWebP: ".webp"}

// jsonlKinds maps each JSON Lines file to its kind.
var jsonlKinds = map[string]contract.LedgerKind{
	FileActions:    contract.LedgerAction,
	FileDecisions:  contract.LedgerDecision,
	FileEvents:     contract.LedgerEvent,
	FileModelCalls: contract.LedgerModelCall,
}

var (
	rePlanRev  = regexp.MustCompile(`^plans/([1-9][0-9]{0,8})\.json$`)
	reDOM      = regexp.MustCompile(`^dom/(0|[1-9][0-9]{0,9})\.(html|json)$`)
	reArtifact = regexp.MustCompile(`^artifacts/([A-Za-z0-9][A-Za-z0-9._-]{0,127})\.(json|png|jpg|webp)$`)
	// reBundlePath is the schemas' bundlePath: '/'-separated segments of
	// letters, digits, '.', '_' and '-', none starting with '.'.
	reBundlePath = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$`)
)

// isRecordPath reports whether a record of some kind may live at path: the
// places an uncommitted record can be found after a crash.
func isRecordPath(path string) bool {
	switch path {
	case FileManifestStart, FileManifestEnd, FilePlan:
		return true
	}
	return rePlanRev.MatchString(path) || reDOM.MatchString(path) || reArtifact.MatchString(path)
}

// artifactID returns the id in artifacts/{id}.ext.
func artifactID(path string) string {
	m := reArtifact.FindStringSubmatch(path)
	if m == nil {
		return ""
	}
	return m[1]
}

// validBundlePath reports whether path is a safe path inside a bundle (at
// most 512 characters, the schemas' bundlePath).
func validBundlePath(path string) bool {
	return len(path) <= 512 && reBundlePath.MatchString(path)
}

// foldPath is the key under which paths collide on a case-insensitive
// file system.
func foldPath(path string) string { return strings.ToLower(path) }

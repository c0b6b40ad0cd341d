package contract_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// evidenceKinds maps the evidence kinds to a constructor of their Go type.
var evidenceKinds = map[schemas.Kind]func() any{
	schemas.KindManifest:    func() any { return new(contract.Manifest) },
	schemas.KindLedgerEntry: func() any { return new(contract.LedgerEntry) },
}

func ledgerKinds() []contract.LedgerKind {
	return []contract.LedgerKind{
		contract.LedgerManifestStart, contract.LedgerPlan, contract.LedgerNavigatorResponse, contract.LedgerAction,
		contract.LedgerDecision, contract.LedgerControl, contract.LedgerEvent, contract.LedgerObservation,
		contract.LedgerDOMSnapshot, contract.LedgerArtifact, contract.LedgerImageArtifact, contract.LedgerToolResult,
	}
}

func ledgerKindsAny() []any {
	var out []any
	for _, k := range ledgerKinds() {
		out = append(out, k)
	}
	return out
}

func TestEvidenceVectors(t *testing.T) {
	for _, kind := range []schemas.Kind{schemas.KindManifest, schemas.KindLedgerEntry} {
		t.Run(string(kind), func(t *testing.T) { checkVectorsBothWays(t, kind, evidenceKinds[kind]) })
	}
}

func handManifest() contract.Manifest {
	return contract.Manifest{
		FormatVersion: contract.ManifestFormatVersion,
		SessionID:     "cus_01HZX4K9",
		Goal:          "Find the price",
		Task:          contract.Input{Goal: "Find the price", URLs: []string{"https://example.com/pricing"}},
		Driver:        contract.ModePlaywright,
		StartedAt:     "2026-01-23T10:15:00Z",
		Status:        contract.SessionRunning,
		Versions:      contract.Versions{Aegis: "(devel)", Policy: hex64(0x11)},
		Counts:        contract.Counts{Events: 1},
	}
}

func TestEvidenceGoValuesRoundTrip(t *testing.T) {
	type tc struct {
		kind schemas.Kind
		name string
		v    any
	}
	sealed := handManifest()
	sealed.Status, sealed.EndedAt = contract.SessionCompleted, "2026-01-23T10:16:10.5Z"
	sealed.Versions.Extension, sealed.Versions.Model = "0.1.0.3", "gpt-4o-2024-08-06"
	sealed.Counts = contract.Counts{Actions: 6, Decisions: 6, Events: 9, Observations: 6, Artifacts: 2}
	sealed.Seal = &contract.Seal{Entries: 30, HeadHash: hex64(0xaa), MerkleRoot: hex64(0xbb), SealedAt: "2026-01-23T10:16:11Z"}
	cases := []tc{
		{schemas.KindManifest, "hand/running", handManifest()},
		{schemas.KindManifest, "hand/sealed", sealed},
		{schemas.KindLedgerEntry, "hand/genesis", contract.LedgerEntry{Index: 0, Kind: contract.LedgerManifestStart, File: "provenance/manifest-start.json", ContentHash: hex64(1), PrevHash: contract.GenesisPrevHash, EntryHash: hex64(2), Time: "2026-01-23T10:15:00Z"}},
		{schemas.KindLedgerEntry, "hand/action", contract.LedgerEntry{Index: 1, Kind: contract.LedgerAction, File: "actions.jsonl", Line: 1, ContentHash: hex64(3), PrevHash: hex64(2), EntryHash: hex64(4), Time: "2026-01-23T10:15:01Z"}},
	}
	g := newGen(1001)
	for i := range 150 {
		cases = append(cases,
			tc{schemas.KindManifest, fmt.Sprintf("random/manifest/%d", i), g.evManifest()},
			tc{schemas.KindLedgerEntry, fmt.Sprintf("random/ledger-entry/%d", i), g.evLedgerEntry()},
		)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkGoRoundTrip(t, c.kind, c.v, evidenceKinds[c.kind]) })
	}
}

// TestManifestLifecycle checks the rules that tie status, endedAt and seal.
func TestManifestLifecycle(t *testing.T) {
	seal := &contract.Seal{Entries: 1, HeadHash: hex64(1), MerkleRoot: hex64(1), SealedAt: "2026-01-23T10:16:11Z"}
	tests := []struct {
		name    string
		status  contract.SessionStatus
		endedAt string
		seal    *contract.Seal
		wantErr string // "" = valid
	}{
		{"running", contract.SessionRunning, "", nil, ""},
		{"running with endedAt", contract.SessionRunning, "2026-01-23T10:16:10Z", nil, "/endedAt: not allowed"},
		{"running with a seal", contract.SessionRunning, "", seal, "/seal: not allowed"},
		{"ended, not sealed", contract.SessionFailed, "2026-01-23T10:16:10Z", nil, ""},
		{"ended and sealed", contract.SessionAborted, "2026-01-23T10:16:10Z", seal, ""},
		{"sealed without endedAt", contract.SessionCompleted, "", seal, "missing properties: 'endedAt'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := handManifest()
			m.Status, m.EndedAt, m.Seal = tt.status, tt.endedAt, tt.seal
			_, err := contract.Encode(schemas.KindManifest, m)
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("got %v, want valid", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestLedgerGenesisRules checks that index 0, manifest-start and the zero
// prevHash go together, and that line goes with .jsonl files.
func TestLedgerGenesisRules(t *testing.T) {
	entry := func(index int, kind contract.LedgerKind, file string, line int, prev string) contract.LedgerEntry {
		return contract.LedgerEntry{Index: index, Kind: kind, File: file, Line: line, ContentHash: hex64(1), PrevHash: prev, EntryHash: hex64(2), Time: "2026-01-23T10:15:00Z"}
	}
	tests := []struct {
		name    string
		e       contract.LedgerEntry
		wantErr bool
	}{
		{"genesis", entry(0, contract.LedgerManifestStart, "provenance/manifest-start.json", 0, contract.GenesisPrevHash), false},
		{"genesis with a predecessor", entry(0, contract.LedgerManifestStart, "provenance/manifest-start.json", 0, hex64(9)), true},
		{"genesis of another kind", entry(0, contract.LedgerPlan, "plan.json", 0, contract.GenesisPrevHash), true},
		{"manifest-start later", entry(1, contract.LedgerManifestStart, "provenance/manifest-start.json", 0, hex64(9)), true},
		{"zero prevHash later", entry(1, contract.LedgerPlan, "plan.json", 0, contract.GenesisPrevHash), true},
		{"jsonl with line", entry(1, contract.LedgerEvent, "events.jsonl", 3, hex64(9)), false},
		{"jsonl without line", entry(1, contract.LedgerEvent, "events.jsonl", 0, hex64(9)), true},
		{"line on json", entry(1, contract.LedgerObservation, "dom/1.json", 3, hex64(9)), true},
		{"dot-dot segment", entry(1, contract.LedgerArtifact, "artifacts/../../etc/passwd", 0, hex64(9)), true},
		{"hidden file", entry(1, contract.LedgerArtifact, "artifacts/.hidden", 0, hex64(9)), true},
		{"drive letter", entry(1, contract.LedgerArtifact, "C:/artifacts/a.json", 0, hex64(9)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := contract.Encode(schemas.KindLedgerEntry, tt.e)
			if got, want := err != nil, tt.wantErr; got != want {
				t.Errorf("got error %v, want error: %v", err, want)
			}
		})
	}
}

const printable = "!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"

// pathSegment draws one segment of a safe bundle path.
func (g *gen) pathSegment() string {
	return g.word(alnum+"_-", alnum+"._-", 1, 40)
}

func (g *gen) evManifest() contract.Manifest {
	task := g.cuInput()
	m := contract.Manifest{
		FormatVersion: contract.ManifestFormatVersion,
		SessionID:     g.id(),
		Goal:          task.Goal,
		Task:          task,
		Driver:        oneOf(g, contract.ModeExtension, contract.ModePlaywright, contract.ModeSandbox),
		StartedAt:     g.timestamp(),
		Status: oneOf(g, contract.SessionRunning, contract.SessionCompleted, contract.SessionAborted,
			contract.SessionDurationExceeded, contract.SessionActionLimitExceeded, contract.SessionFailed),
		Versions: contract.Versions{Aegis: g.word(printable, printable, 1, 128), Policy: g.hash()},
		Counts: contract.Counts{
			Actions: g.between(0, 200), Decisions: g.between(0, 400), Events: g.between(0, 1<<20),
			Observations: g.between(0, 1<<20), Artifacts: g.between(0, 1<<53-1),
		},
	}
	if g.chance(0.5) {
		m.Versions.Extension = g.word(printable, printable, 1, 64)
	}
	if g.chance(0.5) {
		m.Versions.Model = g.word(printable, printable, 1, 256)
	}
	if m.Status != contract.SessionRunning {
		m.EndedAt = g.timestamp()
		if g.chance(0.6) {
			m.Seal = &contract.Seal{Entries: g.between(1, 1<<53-1), HeadHash: g.hash(), MerkleRoot: g.hash(), SealedAt: g.timestamp()}
		}
	}
	return m
}

func (g *gen) evLedgerEntry() contract.LedgerEntry {
	e := contract.LedgerEntry{ContentHash: g.hash(), EntryHash: g.hash(), Time: g.timestamp()}
	if g.chance(0.1) {
		e.Kind, e.PrevHash = contract.LedgerManifestStart, contract.GenesisPrevHash
		e.File = "provenance/manifest-start.json"
		return e
	}
	e.Index = g.between(1, 1<<53-1)
	e.Kind = oneOf(g, ledgerKinds()[1:]...)
	e.PrevHash = g.hash()
	for e.PrevHash == contract.GenesisPrevHash {
		e.PrevHash = g.hash()
	}
	segs := make([]string, g.between(1, 6))
	for i := range segs {
		segs[i] = g.pathSegment()
	}
	e.File = strings.Join(segs, "/")
	if g.chance(0.4) {
		e.File += ".jsonl"
	}
	if strings.HasSuffix(e.File, ".jsonl") {
		e.Line = g.between(1, 1<<53-1)
	}
	return e
}

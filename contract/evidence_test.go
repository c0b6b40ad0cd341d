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

func ledgerKinds() []contract.LedgerKind { return contract.LedgerKinds() }

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
	sealed.Counts = contract.Counts{Actions: 6, Decisions: 6, Events: 9, Observations: 6, Artifacts: 2, ModelCalls: 14}
	sealed.Signer = "ed25519:" + hex64(0x3b)
	sealed.Seal = &contract.Seal{Entries: 30, HeadHash: hex64(0xaa), MerkleRoot: hex64(0xbb), SealedAt: "2026-01-23T10:16:11Z"}
	cases := []tc{
		{schemas.KindManifest, "hand/running", handManifest()},
		{schemas.KindManifest, "hand/sealed", sealed},
		{schemas.KindLedgerEntry, "hand/genesis", contract.LedgerEntry{Index: 0, Kind: contract.LedgerManifestStart, File: "provenance/manifest-start.json", ContentHash: hex64(1), PrevHash: contract.GenesisPrevHash, EntryHash: hex64(2), Time: "2026-01-23T10:15:00Z"}},
		{schemas.KindLedgerEntry, "hand/action", contract.LedgerEntry{Index: 1, Kind: contract.LedgerAction, File: "actions.jsonl", Line: 1, ContentHash: hex64(3), PrevHash: hex64(2), EntryHash: hex64(4), Time: "2026-01-23T10:15:01Z"}},
		{schemas.KindLedgerEntry, "hand/model-call", contract.LedgerEntry{Index: 2, Kind: contract.LedgerModelCall, File: "model-calls.jsonl", Line: 1, ContentHash: hex64(3), PrevHash: hex64(4), EntryHash: hex64(5), Time: "2026-01-23T10:15:02Z"}},
		{schemas.KindLedgerEntry, "hand/manifest-end", contract.LedgerEntry{Index: 9, Kind: contract.LedgerManifestEnd, File: "provenance/manifest-end.json", ContentHash: hex64(5), PrevHash: hex64(4), EntryHash: hex64(6), Time: "2026-01-23T10:16:11Z"}},
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
	seal := &contract.Seal{Entries: 2, HeadHash: hex64(1), MerkleRoot: hex64(1), SealedAt: "2026-01-23T10:16:11Z"}
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
	signed := []struct {
		name    string
		status  contract.SessionStatus
		endedAt string
		signer  string
		wantErr string
	}{
		{"signed and ended", contract.SessionCompleted, "2026-01-23T10:16:10Z", "ed25519:" + hex64(0x3b), ""},
		{"signed while running", contract.SessionRunning, "", "ed25519:" + hex64(0x3b), "/signer: not allowed"},
		{"signed without endedAt", contract.SessionCompleted, "", "ed25519:" + hex64(0x3b), "missing properties: 'endedAt'"},
		{"signer without algorithm", contract.SessionCompleted, "2026-01-23T10:16:10Z", hex64(0x3b), "/signer: does not match pattern"},
	}
	for _, tt := range signed {
		t.Run(tt.name, func(t *testing.T) {
			m := handManifest()
			m.Status, m.EndedAt, m.Signer = tt.status, tt.endedAt, tt.signer
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
		{"action in its file", entry(1, contract.LedgerAction, "actions.jsonl", 1, hex64(9)), false},
		{"action in another file", entry(1, contract.LedgerAction, "decisions.jsonl", 1, hex64(9)), true},
		{"snapshot as html", entry(1, contract.LedgerDOMSnapshot, "dom/0.html", 0, hex64(9)), false},
		{"snapshot as json", entry(1, contract.LedgerDOMSnapshot, "dom/0.json", 0, hex64(9)), true},
		{"step with a leading zero", entry(1, contract.LedgerObservation, "dom/01.json", 0, hex64(9)), true},
		{"first plan", entry(1, contract.LedgerPlan, "plan.json", 0, hex64(9)), false},
		{"plan revision", entry(1, contract.LedgerPlan, "plans/2.json", 0, hex64(9)), false},
		{"webp image", entry(1, contract.LedgerImage, "artifacts/shot_1.webp", 0, hex64(9)), false},
		{"image record beside it", entry(1, contract.LedgerImageArtifact, "artifacts/shot_1.json", 0, hex64(9)), false},
		{"gif image", entry(1, contract.LedgerImage, "artifacts/shot_1.gif", 0, hex64(9)), true},
		{"manifest-end elsewhere", entry(5, contract.LedgerManifestEnd, "manifest.json", 0, hex64(9)), true},
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
		m.Counts.ModelCalls = g.between(1, 1<<53-1)
	}
	if g.chance(0.5) {
		m.Versions.Extension = g.word(printable, printable, 1, 64)
	}
	if g.chance(0.5) {
		m.Versions.Model = g.word(printable, printable, 1, 256)
	}
	if m.Status != contract.SessionRunning {
		m.EndedAt = g.timestamp()
		if g.chance(0.3) {
			m.Signer = "ed25519:" + g.hash()
		}
		if g.chance(0.6) {
			m.Seal = &contract.Seal{Entries: g.between(2, 1<<53-1), HeadHash: g.hash(), MerkleRoot: g.hash(), SealedAt: g.timestamp()}
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
	id := g.word(alnum, alnum+"._-", 1, 128)
	step := fmt.Sprint(g.between(0, 1<<31))
	switch e.Kind {
	case contract.LedgerPlan:
		e.File = "plan.json"
		if g.chance(0.5) {
			e.File = fmt.Sprintf("plans/%d.json", g.between(2, 999999999))
		}
	case contract.LedgerAction, contract.LedgerDecision, contract.LedgerEvent, contract.LedgerModelCall:
		e.File = map[contract.LedgerKind]string{contract.LedgerAction: "actions.jsonl", contract.LedgerDecision: "decisions.jsonl", contract.LedgerEvent: "events.jsonl", contract.LedgerModelCall: "model-calls.jsonl"}[e.Kind]
		e.Line = g.between(1, 1<<53-1)
	case contract.LedgerDOMSnapshot:
		e.File = "dom/" + step + ".html"
	case contract.LedgerObservation:
		e.File = "dom/" + step + ".json"
	case contract.LedgerArtifact, contract.LedgerImageArtifact:
		e.File = "artifacts/" + id + ".json"
	case contract.LedgerImage:
		e.File = "artifacts/" + id + oneOf(g, ".png", ".jpg", ".webp")
	case contract.LedgerManifestEnd:
		e.File = "provenance/manifest-end.json"
	}
	return e
}

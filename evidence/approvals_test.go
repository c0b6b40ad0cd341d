package evidence

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
)

// The vectors of rule 16 (FORMAT.md, section 8: approvals that name their
// channel), run by TestCrossRecordVectors with the forger: an approval
// forged, copied or changed, a commitment or key changed, with every hash,
// the seal and the signature recomputed. The fixture's approved decision
// is decisions.jsonl line 4 (entry 16): approval by alice in the live
// console.

// editApproval edits the approval of decisions.jsonl line.
func editApproval(f *forgery, line int, change func(a map[string]any)) {
	f.edit(f.find(FileDecisions, line), func(m map[string]any) { change(m["approval"].(map[string]any)) })
}

// otherKey is an approval key that is not the session's: a forger's.
func otherKey() []byte {
	k := testApprovalKey()
	k[0] ^= 0xff
	return k
}

// macUnder sets the MAC of the approval of decisions.jsonl line to its MAC
// under key, as someone holding key would.
func macUnder(f *forgery, line int, key []byte) {
	f.edit(f.find(FileDecisions, line), func(m map[string]any) {
		mac, err := approvalMAC(key, m["decisionId"].(string), m["approval"])
		if err != nil {
			f.t.Fatal(err)
		}
		m["approval"].(map[string]any)["mac"] = mac
	})
}

// setKey sets the commitment of both manifests (when hash is not "") and
// the revealed key (when key is not "").
func setKey(f *forgery, hash, key string) {
	if hash != "" {
		setMember(f, FileManifestStart, 0, "approvalKeyHash", hash)
		setMember(f, FileManifestEnd, 0, "approvalKeyHash", hash)
	}
	if key != "" {
		setMember(f, FileManifestEnd, 0, "approvalKey", key)
	}
}

const (
	approvedLine  = 4  // decisions.jsonl line of the fixture's approved decision
	approvedEntry = 16 // and its ledger entry
	endEntry      = 26 // the manifest-end entry
)

func approvalVectors() []crossVector {
	notChecked := "its MAC does not check under the session's approval key"
	return []crossVector{
		{name: "an approval forged without the key", change: func(f *forgery) {
			// Another approver and id, MAC'd under a key the forger made up.
			editApproval(f, approvedLine, func(a map[string]any) {
				a["approver"], a["id"] = "mallory", "apr-"+sha("forged")[:32]
			})
			macUnder(f, approvedLine, otherKey())
		}, file: FileDecisions, line: approvedLine, entry: approvedEntry, check: "approval", says: notChecked},
		{name: "an approval added to a decision, its MAC copied from another action's", change: func(f *forgery) {
			// a1's allow becomes an approval by alice: the approval of a3
			// with a1's hash and a fresh id, its MAC kept.
			f.edit(f.find(FileDecisions, 1), func(m map[string]any) {
				src, err := parseRec(f.entries[f.find(FileDecisions, approvedLine)].content)
				if err != nil {
					f.t.Fatal(err)
				}
				a := map[string]any{}
				for k, v := range src.at("approval").value().(map[string]any) {
					a[k] = v
				}
				a["id"], a["actionHash"] = "apr-"+sha("copied")[:32], m["actionHash"]
				m["approval"], m["result"], m["requiresApproval"] = a, "approved", true
			})
		}, file: FileDecisions, line: 1, entry: 7, check: "approval", says: notChecked},
		{name: "an approval's channel changed from live to popup", change: func(f *forgery) {
			editApproval(f, approvedLine, func(a map[string]any) { a["channel"] = "popup" })
		}, file: FileDecisions, line: approvedLine, entry: approvedEntry, check: "approval", says: "(channel popup): " + notChecked},
		{name: "an approval's approver changed", change: func(f *forgery) {
			editApproval(f, approvedLine, func(a map[string]any) { a["approver"] = "bob" })
		}, file: FileDecisions, line: approvedLine, entry: approvedEntry, check: "approval", says: notChecked},
		{name: "a person's approval claimed by the rule channel", change: func(f *forgery) {
			editApproval(f, approvedLine, func(a map[string]any) { a["channel"] = "rule" })
		}, file: FileDecisions, line: approvedLine, entry: approvedEntry, check: "approval", says: `names approver "alice": a rule is named "policy:"`},
		{name: "a person's approval named like a rule's", change: func(f *forgery) {
			// Still the live console's, its MAC under the session's key:
			// only the name poses as the rule.
			editApproval(f, approvedLine, func(a map[string]any) { a["approver"] = "policy:low-and-medium-only" })
			macUnder(f, approvedLine, testApprovalKey())
		}, file: FileDecisions, line: approvedLine, entry: approvedEntry, check: "approval", says: `on the live channel names approver "policy:low-and-medium-only": only a rule is named "policy:"`},
		{name: "a rule's approval of a high-risk action", change: func(f *forgery) {
			setMember(f, FileDecisions, approvedLine, "risk", "high")
			editApproval(f, approvedLine, func(a map[string]any) { a["channel"], a["approver"] = "rule", "policy:low-and-medium-only" })
			macUnder(f, approvedLine, testApprovalKey())
		}, file: FileDecisions, line: approvedLine, entry: approvedEntry, check: "approval", says: "no rule approves a high-risk action"},
		{name: "an approval's channel and MAC removed", change: func(f *forgery) {
			editApproval(f, approvedLine, func(a map[string]any) { delete(a, "channel"); delete(a, "mac") })
		}, file: FileDecisions, line: approvedLine, entry: approvedEntry, check: "approval", says: "names no channel or carries no MAC"},
		{name: "the commitment removed, the approvals kept", change: func(f *forgery) {
			for _, file := range []string{FileManifestStart, FileManifestEnd} {
				f.edit(f.find(file, 0), func(m map[string]any) { delete(m, "approvalKeyHash"); delete(m, "approvalKey") })
			}
		}, file: FileDecisions, line: approvedLine, entry: approvedEntry, check: "approval", says: "commits to no approval key"},
		{name: "the commitment changed", change: func(f *forgery) {
			setKey(f, ApprovalKeyHash(otherKey()), "")
		}, file: FileManifestEnd, entry: endEntry, check: "manifest", says: "not to the commitment approvalKeyHash " + ApprovalKeyHash(otherKey())},
		{name: "the revealed key changed", change: func(f *forgery) {
			setKey(f, "", hex.EncodeToString(otherKey()))
		}, file: FileManifestEnd, entry: endEntry, check: "manifest", says: "approvalKey hashes to " + ApprovalKeyHash(otherKey())},
		{name: "the key not revealed", change: func(f *forgery) {
			f.edit(f.find(FileManifestEnd, 0), func(m map[string]any) { delete(m, "approvalKey") })
		}, file: FileManifestEnd, entry: endEntry, check: "manifest", says: "approvalKey absent"},
		{name: "the commitment and the key changed alike to a forger's key", change: func(f *forgery) {
			setKey(f, ApprovalKeyHash(otherKey()), hex.EncodeToString(otherKey()))
		}, file: FileDecisions, line: approvedLine, entry: approvedEntry, check: "approval", says: notChecked},
	}
}

// TestApprovalForgeriesThatHold: what rule 16 does not catch, on purpose
// (FORMAT.md says so): whoever rewrites the whole bundle after the seal,
// when the key is public, or drops the commitment with every channel and
// MAC (a bundle as written without an approval key), and re-signs it.
// Only a trusted signing key held elsewhere, or a witness, catches those.
func TestApprovalForgeriesThatHold(t *testing.T) {
	_, files := bundleFiles(t, buildBundle(t, t.TempDir(), fixture{sign: true}))
	for _, tt := range []struct {
		name   string
		change func(f *forgery)
	}{
		{"an approval rewritten and MAC'd again under the revealed key", func(f *forgery) {
			editApproval(f, approvedLine, func(a map[string]any) { a["approver"], a["channel"] = "bob", "terminal" })
			macUnder(f, approvedLine, testApprovalKey())
		}},
		{"a forger's own key, committed, revealed and used", func(f *forgery) {
			setKey(f, ApprovalKeyHash(otherKey()), hex.EncodeToString(otherKey()))
			macUnder(f, approvedLine, otherKey())
		}},
		{"the commitment and every channel and MAC removed", func(f *forgery) {
			for _, file := range []string{FileManifestStart, FileManifestEnd} {
				f.edit(f.find(file, 0), func(m map[string]any) { delete(m, "approvalKeyHash"); delete(m, "approvalKey") })
			}
			editApproval(f, approvedLine, func(a map[string]any) { delete(a, "channel"); delete(a, "mac") })
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := forge(t, files)
			tt.change(f)
			if _, err := VerifyFS(context.Background(), f.files(), VerifyOptions{PubKey: testPub()}); err != nil {
				t.Errorf("got %v, want it to verify (re-signed by the key holder)", err)
			}
		})
	}
}

// TestApprovalMAC: the MAC of an approval is over the approval (mac left
// out) and its decision id, and changes with each.
func TestApprovalMAC(t *testing.T) {
	key := testApprovalKey()
	a := contract.ApprovalRef{ID: "apr-" + sha("a")[:32], Approver: "alice", ApprovedAt: "2026-01-23T10:15:02Z", ExpiresAt: "2026-01-23T10:20:02Z", ActionHash: sha("act"), Channel: contract.ApprovalChannelPopup}
	base, err := ApprovalMAC(key, "dec-1", a)
	if err != nil {
		t.Fatal(err)
	}
	withMAC := a
	withMAC.MAC = sha("anything")
	if got, _ := ApprovalMAC(key, "dec-1", withMAC); got != base {
		t.Errorf("the MAC covers the mac member: %s, want %s", got, base)
	}
	other := func(change func(a *contract.ApprovalRef)) contract.ApprovalRef { c := a; change(&c); return c }
	for name, got := range map[string]func() (string, error){
		"another decision": func() (string, error) { return ApprovalMAC(key, "dec-2", a) },
		"another key":      func() (string, error) { return ApprovalMAC(otherKey(), "dec-1", a) },
		"another channel": func() (string, error) {
			return ApprovalMAC(key, "dec-1", other(func(a *contract.ApprovalRef) { a.Channel = contract.ApprovalChannelLive }))
		},
		"another action": func() (string, error) {
			return ApprovalMAC(key, "dec-1", other(func(a *contract.ApprovalRef) { a.ActionHash = sha("other") }))
		},
		"another approver": func() (string, error) {
			return ApprovalMAC(key, "dec-1", other(func(a *contract.ApprovalRef) { a.Approver = "bob" }))
		},
	} {
		if mac, err := got(); err != nil || mac == base {
			t.Errorf("%s: MAC %s (err %v), want another than %s", name, mac, err, base)
		}
	}
	if _, err := ApprovalMAC(key[:16], "dec-1", a); err == nil {
		t.Error("a 16-byte key made a MAC")
	}
}

// TestWriterApprovals: the writer applies rule 16 before it writes, and
// commits to the key at the start and reveals it at the seal.
func TestWriterApprovals(t *testing.T) {
	click := contract.Action{ID: "a3", Type: contract.ActClick, Reason: "buy", PolicyTags: []string{}, Selector: "#buy"}
	approved := func(ch contract.ApprovalChannel, key []byte) contract.DecisionRecord {
		return withChannel(t, decision("click-approved", click, contract.ResultApproved), ch, key)
	}
	open := func(t *testing.T, key []byte) *Writer {
		w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock(), ApprovalKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	for _, tt := range []struct {
		name string
		key  []byte // the writer's
		rec  contract.DecisionRecord
		says string // "" when it is written
	}{
		{"a MAC'd approval", testApprovalKey(), approved(contract.ApprovalChannelPopup, testApprovalKey()), ""},
		{"an approval without a channel, in a bundle with a key", testApprovalKey(), decision("click-approved", click, contract.ResultApproved), "names no channel"},
		{"an approval MAC'd under another key", testApprovalKey(), approved(contract.ApprovalChannelPopup, otherKey()), "does not check"},
		{"an approval with a channel, in a bundle without a key", nil, approved(contract.ApprovalChannelPopup, testApprovalKey()), "commits to no approval key"},
		{"an approval without a channel, in a bundle without a key", nil, decision("click-approved", click, contract.ResultApproved), ""},
		{"a person's approval on the rule channel", testApprovalKey(), approved(contract.ApprovalChannelRule, testApprovalKey()), "is not a person"},
		{"a person's approval named like a rule's", testApprovalKey(), func() contract.DecisionRecord {
			d := decision("click-approved", click, contract.ResultApproved)
			d.Approval.Approver = RulePrefix + "low-and-medium-only"
			return withChannel(t, d, contract.ApprovalChannelPopup, testApprovalKey())
		}(), "only a rule is named"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := open(t, tt.key)
			defer w.Close()
			err := w.Decision(tt.rec)
			switch {
			case tt.says == "" && err != nil:
				t.Errorf("got %v, want it written", err)
			case tt.says != "" && (err == nil || !strings.Contains(err.Error(), tt.says)):
				t.Errorf("got %v, want an error that says %q", err, tt.says)
			}
		})
	}
	// The commitment at the start, the key at the seal; unsealed, the MACs
	// cannot be checked yet and the bundle verifies all the same.
	root := t.TempDir()
	w, err := Create(root, testManifest(), Options{Clock: fixedClock(), ApprovalKey: testApprovalKey()})
	if err != nil {
		t.Fatal(err)
	}
	if w.start.ApprovalKeyHash != ApprovalKeyHash(testApprovalKey()) || w.start.ApprovalKey != "" {
		t.Errorf("manifest-start: approvalKeyHash %q, approvalKey %q", w.start.ApprovalKeyHash, w.start.ApprovalKey)
	}
	if err := w.Decision(approved(contract.ApprovalChannelLive, testApprovalKey())); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(context.Background(), w.Dir(), VerifyOptions{AllowUnsealed: true})
	if err != nil || rep.Approvals.MACs != 0 || rep.Approvals.Channels[contract.ApprovalChannelLive] != 1 {
		t.Errorf("unsealed: %+v, %v; want it to verify, 1 live approval, no MAC checked", rep.Approvals, err)
	}
	m, err := w.Seal(context.Background(), contract.SessionCompleted, time.Date(2026, 1, 23, 10, 16, 0, 0, time.UTC), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.ApprovalKey != hex.EncodeToString(testApprovalKey()) {
		t.Errorf("sealed manifest: approvalKey %q, want the key", m.ApprovalKey)
	}
	rep, err = Verify(context.Background(), w.Dir(), VerifyOptions{})
	if err != nil || rep.Approvals.MACs != 1 {
		t.Errorf("sealed: %+v, %v; want it to verify with 1 MAC checked", rep.Approvals, err)
	}
}

// TestCreateApprovalKey: Create takes a key of the right size, and a
// commitment only with its key.
func TestCreateApprovalKey(t *testing.T) {
	withHash := func(h string) contract.Manifest { m := testManifest(); m.ApprovalKeyHash = h; return m }
	revealed := testManifest()
	revealed.ApprovalKey = hex.EncodeToString(testApprovalKey())
	for _, tt := range []struct {
		name string
		m    contract.Manifest
		key  []byte
		ok   bool
	}{
		{"a key", testManifest(), testApprovalKey(), true},
		{"a key and its commitment", withHash(ApprovalKeyHash(testApprovalKey())), testApprovalKey(), true},
		{"a key of 16 bytes", testManifest(), testApprovalKey()[:16], false},
		{"a key and another commitment", withHash(ApprovalKeyHash(otherKey())), testApprovalKey(), false},
		{"a commitment without its key", withHash(ApprovalKeyHash(testApprovalKey())), nil, false},
		{"the key revealed at the start", revealed, testApprovalKey(), false},
	} {
		w, err := Create(t.TempDir(), tt.m, Options{ApprovalKey: tt.key})
		if got := err == nil; got != tt.ok {
			t.Errorf("%s: err %v, want ok %v", tt.name, err, tt.ok)
		}
		if w != nil {
			w.Close()
		}
	}
}

// TestVerifyUnsealedKeyRevealed: a running manifest never reveals the key
// (the schema refuses it).
func TestVerifyUnsealedKeyRevealed(t *testing.T) {
	_, files := bundleFiles(t, buildBundle(t, t.TempDir(), fixture{sign: true}))
	f := forge(t, files)
	setMember(f, FileManifestStart, 0, "approvalKey", hex.EncodeToString(testApprovalKey()))
	_, err := VerifyFS(context.Background(), f.files(), VerifyOptions{})
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.File != FileManifestStart {
		t.Errorf("got %v, want a VerifyError at %s", err, FileManifestStart)
	}
}

// TestVerifyNotesApprovalsWithoutKey: a bundle whose approvals name no
// channel (no approval key) verifies, and the report says what was not
// checked; with a key, no note.
func TestVerifyNotesApprovalsWithoutKey(t *testing.T) {
	click := buyClick()
	for _, tt := range []struct {
		name string
		key  []byte
		want string
	}{
		{"without an approval key", nil, "approval channels not checked: the manifest commits to no approval key (approvalKeyHash), so the bundle's 1 approval(s) name no channel"},
		{"with one", testApprovalKey(), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Create(t.TempDir(), testManifest(), Options{Clock: fixedClock(), ApprovalKey: tt.key})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Decision(withChannel(t, decision("ap", click, contract.ResultApproved), contract.ApprovalChannelLive, tt.key)); err != nil {
				t.Fatal(err)
			}
			sealTest(t, w)
			rep, err := Verify(context.Background(), w.Dir(), VerifyOptions{PubKey: testPub()})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(rep.Unchecked, "\n"); !strings.HasPrefix(got, tt.want) || (tt.want == "") != (got == "") {
				t.Errorf("unchecked %q, want %q", got, tt.want)
			}
		})
	}
}

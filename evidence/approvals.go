package evidence

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
)

// Approvals that name their channel (FORMAT.md, section 8, rule 16). A
// session draws an approval key at its start and keeps it in its process;
// the manifest as the session starts commits to it (approvalKeyHash), each
// approval a decision carries names the channel it was given on and holds
// a MAC under the key, and the manifest as the session ended reveals the
// key (approvalKey), so that a verifier can check every MAC. The writer
// applies the rule before it writes (it holds the key) and the verifier
// once the key is revealed.

// ApprovalKeySize is the size of an approval key in bytes.
const ApprovalKeySize = 32

// ApprovalMACPrefix starts the message an approval's MAC is computed
// over: the domain of the MAC, so that it is never the MAC of anything
// else under the same key.
const ApprovalMACPrefix = "aegis.evidence.v1.approval:"

// RulePrefix starts the approver of an approval given on the rule channel:
// "policy:" and the approve mode, such as "policy:low-and-medium-only";
// the approver of an approval on any other channel never starts with it.
const RulePrefix = "policy:"

// NewApprovalKey returns a new random approval key (crypto/rand).
func NewApprovalKey() ([]byte, error) {
	key := make([]byte, ApprovalKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("evidence: approval key: %w", err)
	}
	return key, nil
}

// ApprovalKeyHash returns the commitment to an approval key that the
// manifest records: the SHA-256 of its bytes, in hex.
func ApprovalKeyHash(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:])
}

// ApprovalMAC returns the MAC of approval a (its MAC member left out) as
// the decision decisionID carries it, under key: the HMAC-SHA-256, in hex,
// of ApprovalMACPrefix and the canonical JSON of {"approval": a,
// "decisionId": decisionID}. It covers every member of the approval (id,
// approver, times, action hash, channel) and binds it to its decision.
func ApprovalMAC(key []byte, decisionID string, a contract.ApprovalRef) (string, error) {
	a.MAC = ""
	b, err := canonjson.Marshal(a)
	if err != nil {
		return "", fmt.Errorf("evidence: approval mac: %w", err)
	}
	tree, err := canonjson.ParseCanonical(b)
	if err != nil {
		return "", fmt.Errorf("evidence: approval mac: %w", err)
	}
	return approvalMAC(key, decisionID, tree)
}

// approvalMAC computes the MAC of a parsed approval (its member mac left
// out) in decision decisionID.
func approvalMAC(key []byte, decisionID string, approval any) (string, error) {
	if len(key) != ApprovalKeySize {
		return "", fmt.Errorf("an approval key is %d bytes, not %d", ApprovalKeySize, len(key))
	}
	m, ok := approval.(map[string]any)
	if !ok {
		return "", errors.New("the approval is not an object")
	}
	bare := make(map[string]any, len(m))
	for k, v := range m {
		if k != "mac" {
			bare[k] = v
		}
	}
	msg, err := canonjson.EncodeValue(map[string]any{"approval": bare, "decisionId": decisionID})
	if err != nil {
		return "", err
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte(ApprovalMACPrefix))
	h.Write(msg)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// approvalMark is an approval whose MAC is to be checked, with the
// decision that carries it and its place.
type approvalMark struct {
	decisionID string
	id         string
	channel    string
	approval   any    // as parsed
	mac        string // as recorded
	line       int    // its line of decisions.jsonl (verifying)
	entry      int    // its ledger entry (verifying)
}

// checkApproval applies the rules of rule 16 that need no key to a
// decision record: an approval names its channel and carries a MAC exactly
// when the manifest commits to an approval key (committed); a rule
// approval names its rule as approver and approves no high-risk action;
// an approval on another channel is not named like a rule.
// It returns the approval whose MAC is to be checked, nil when there is
// none.
func checkApproval(r rec, committed bool) (*approvalMark, error) {
	a := r.at("approval")
	if !a.present() {
		return nil, nil
	}
	id, ch := a.at("id").str(), a.at("channel")
	if !committed {
		if ch.present() || a.at("mac").present() {
			return nil, fmt.Errorf("approval %s names a channel and carries a MAC, but the manifest commits to no approval key to check it", id)
		}
		return nil, nil
	}
	if !ch.present() || !a.at("mac").present() {
		return nil, fmt.Errorf("approval %s names no channel or carries no MAC, but the manifest commits to an approval key: every approval names its channel and carries its MAC", id)
	}
	who := a.at("approver").str()
	if !ch.is(string(contract.ApprovalChannelRule)) && strings.HasPrefix(who, RulePrefix) {
		return nil, fmt.Errorf("approval %s on the %s channel names approver %q: only a rule is named %q, and a person's approval does not pose as one", id, ch.str(), who, RulePrefix)
	}
	if ch.is(string(contract.ApprovalChannelRule)) {
		if !strings.HasPrefix(who, RulePrefix) {
			return nil, fmt.Errorf("approval %s on the rule channel names approver %q: a rule is named %q and its mode, and is not a person", id, who, RulePrefix)
		}
		if r.at("risk").is(string(contract.RiskHigh)) {
			return nil, fmt.Errorf("approval %s on the rule channel in a decision of risk high: no rule approves a high-risk action, only a person", id)
		}
	}
	return &approvalMark{
		decisionID: r.at("decisionId").str(), id: id, channel: ch.str(),
		approval: a.value(), mac: a.at("mac").str(),
	}, nil
}

// check checks the approval's MAC under key.
func (m *approvalMark) check(key []byte) error {
	want, err := approvalMAC(key, m.decisionID, m.approval)
	if err != nil {
		return fmt.Errorf("approval %s: %w", m.id, err)
	}
	if !hmac.Equal([]byte(want), []byte(m.mac)) {
		return fmt.Errorf("approval %s (channel %s): its MAC does not check under the session's approval key: it was not written by the session that held the key", m.id, m.channel)
	}
	return nil
}

// checkApprovalKey checks the manifest-end record's approvalKey against
// the commitment of the manifest as the session started (hash, "" when
// none) and returns the key (nil when none).
func checkApprovalKey(end rec, hash string) ([]byte, error) {
	k := end.at("approvalKey")
	if hash == "" {
		if k.present() {
			return nil, errors.New("approvalKey present, but the manifest as the session started commits to no approval key")
		}
		return nil, nil
	}
	if !k.present() {
		return nil, errors.New("approvalKey absent: the approval key the manifest as the session started commits to is not revealed")
	}
	key, err := hex.DecodeString(k.str())
	if err != nil || len(key) != ApprovalKeySize {
		return nil, fmt.Errorf("approvalKey %q is not %d bytes in hex", k.str(), ApprovalKeySize)
	}
	if got := ApprovalKeyHash(key); got != hash {
		return nil, fmt.Errorf("approvalKey hashes to %s, not to the commitment approvalKeyHash %s", got, hash)
	}
	return key, nil
}

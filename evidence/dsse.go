package evidence

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/aegis-run/aegis/canonjson"
)

// The seal's signature is a DSSE envelope (github.com/secure-systems-lab/
// dsse, protocol v1) over the sealed manifest: its payload is the
// canonical bytes of manifest.json, its payload type SealPayloadType, and
// its one signature an Ed25519 signature over PAE(type, payload).

// SealPayloadType is the DSSE payload type of a seal envelope.
const SealPayloadType = "application/vnd.aegis.evidence.manifest+json"

// KeyIDPrefix starts the key id of an Ed25519 key: the id is the prefix
// and the 32-byte public key in lowercase hex.
const KeyIDPrefix = "ed25519:"

// Signer signs the seal of a bundle.
type Signer interface {
	// KeyID names the key: "ed25519:" and the public key in hex.
	KeyID() string
	// Sign returns the signature of message (the DSSE PAE bytes).
	Sign(ctx context.Context, message []byte) ([]byte, error)
}

// Ed25519Signer signs with an Ed25519 private key held in memory.
type Ed25519Signer struct{ key ed25519.PrivateKey }

// NewEd25519Signer returns a signer for key.
func NewEd25519Signer(key ed25519.PrivateKey) *Ed25519Signer { return &Ed25519Signer{key: key} }

// KeyID returns the key id of the signer's public key.
func (s *Ed25519Signer) KeyID() string { return KeyID(s.key.Public().(ed25519.PublicKey)) }

// Sign signs message.
func (s *Ed25519Signer) Sign(ctx context.Context, message []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return ed25519.Sign(s.key, message), nil
}

// KeyID returns the key id of an Ed25519 public key.
func KeyID(pub ed25519.PublicKey) string { return KeyIDPrefix + hex.EncodeToString(pub) }

// ParseKeyID returns the Ed25519 public key a key id (KeyID) names.
func ParseKeyID(id string) (ed25519.PublicKey, error) {
	h, ok := strings.CutPrefix(id, KeyIDPrefix)
	if !ok || len(h) != 2*ed25519.PublicKeySize {
		return nil, fmt.Errorf("key id %q: want %s and 64 lowercase hex digits", id, KeyIDPrefix)
	}
	k, err := ParseHash(h)
	if err != nil {
		return nil, fmt.Errorf("key id %q: %w", id, err)
	}
	return ed25519.PublicKey(k[:]), nil
}

// PAE is DSSE's pre-authentication encoding, the bytes that are signed:
// "DSSEv1" SP len(type) SP type SP len(body) SP body, lengths in ASCII
// decimal. It signs the payload type with the payload.
func PAE(payloadType string, payload []byte) []byte {
	b := make([]byte, 0, 32+len(payloadType)+len(payload))
	b = append(b, "DSSEv1 "...)
	b = strconv.AppendInt(b, int64(len(payloadType)), 10)
	b = append(b, ' ')
	b = append(b, payloadType...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(payload)), 10)
	b = append(b, ' ')
	return append(b, payload...)
}

// Envelope is a DSSE envelope.
type Envelope struct {
	// Payload is the signed bytes, in standard base64 with padding.
	Payload string `json:"payload"`
	// PayloadType says what the payload is.
	PayloadType string `json:"payloadType"`
	// Signatures are the signatures over PAE(PayloadType, payload).
	Signatures []EnvelopeSignature `json:"signatures"`
}

// EnvelopeSignature is one signature of an envelope.
type EnvelopeSignature struct {
	// KeyID names the key; a hint, never trusted on its own.
	KeyID string `json:"keyid"`
	// Sig is the signature in standard base64 with padding.
	Sig string `json:"sig"`
}

// signEnvelope returns the canonical envelope (with its final line feed)
// that signs payload.
func signEnvelope(ctx context.Context, s Signer, payload []byte) ([]byte, error) {
	sig, err := s.Sign(ctx, PAE(SealPayloadType, payload))
	if err != nil {
		return nil, err
	}
	env := Envelope{
		Payload:     base64.StdEncoding.EncodeToString(payload),
		PayloadType: SealPayloadType,
		Signatures:  []EnvelopeSignature{{KeyID: s.KeyID(), Sig: base64.StdEncoding.EncodeToString(sig)}},
	}
	b, err := canonjson.Marshal(env)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// strictBase64 decodes standard padded base64 that is exactly what
// EncodeToString would write (Go's decoder skips line feeds and so would
// accept several spellings of one value).
func strictBase64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, err
	}
	if base64.StdEncoding.EncodeToString(b) != s {
		return nil, errors.New("not in the one standard base64 spelling")
	}
	return b, nil
}

// SignatureError says why the seal's signature does not hold.
type SignatureError struct {
	// Reason says what is wrong.
	Reason string
}

// Error says why the signature does not hold.
func (e *SignatureError) Error() string { return "signature: " + e.Reason }

// openEnvelope checks a parsed seal envelope against the signer named in
// the manifest and the manifest's canonical bytes, and against pub when
// given. It returns whether pub authenticated it.
func openEnvelope(tree any, signer string, manifest []byte, pub ed25519.PublicKey) (bool, error) {
	m, ok := tree.(map[string]any)
	if !ok || len(m) != 3 {
		return false, &SignatureError{"want an object of exactly payload, payloadType and signatures"}
	}
	if t, _ := m["payloadType"].(string); t != SealPayloadType {
		return false, &SignatureError{fmt.Sprintf("payloadType %q, want %q", t, SealPayloadType)}
	}
	ps, _ := m["payload"].(string)
	payload, err := strictBase64(ps)
	if err != nil {
		return false, &SignatureError{"payload: " + err.Error()}
	}
	if string(payload) != string(manifest) {
		return false, &SignatureError{"the payload is not the sealed manifest.json"}
	}
	sigs, _ := m["signatures"].([]any)
	if len(sigs) != 1 {
		return false, &SignatureError{fmt.Sprintf("%d signatures, want 1", len(sigs))}
	}
	sm, ok := sigs[0].(map[string]any)
	if !ok || len(sm) != 2 {
		return false, &SignatureError{"a signature is an object of exactly keyid and sig"}
	}
	keyID, _ := sm["keyid"].(string)
	if keyID != signer {
		return false, &SignatureError{fmt.Sprintf("keyid %q, but the manifest names signer %q", keyID, signer)}
	}
	sigText, _ := sm["sig"].(string)
	sig, err := strictBase64(sigText)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return false, &SignatureError{"sig: not a base64 Ed25519 signature"}
	}
	named, err := ParseKeyID(keyID)
	if err != nil {
		return false, &SignatureError{err.Error()}
	}
	msg := PAE(SealPayloadType, payload)
	if !ed25519.Verify(named, msg, sig) {
		return false, &SignatureError{"does not verify under the key it names (" + keyID + ")"}
	}
	if pub == nil {
		return false, nil
	}
	if KeyID(pub) != keyID {
		return false, &SignatureError{fmt.Sprintf("signed by %s, not by the trusted key %s", keyID, KeyID(pub))}
	}
	if !ed25519.Verify(pub, msg, sig) {
		return false, &SignatureError{"does not verify under the trusted key"}
	}
	return true, nil
}

// GenerateKey returns a new Ed25519 key pair read from rand (nil means
// crypto/rand).
func GenerateKey(rand io.Reader) (ed25519.PublicKey, ed25519.PrivateKey, error) {
	return ed25519.GenerateKey(rand)
}

// MarshalPrivateKey encodes a private key as PEM "PRIVATE KEY" (PKCS #8).
func MarshalPrivateKey(key ed25519.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// MarshalPublicKey encodes a public key as PEM "PUBLIC KEY" (PKIX).
func MarshalPublicKey(pub ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ParsePrivateKey decodes a PEM "PRIVATE KEY" holding an Ed25519 key.
func ParsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	b, rest := pem.Decode(data)
	if b == nil || b.Type != "PRIVATE KEY" || len(strings.TrimSpace(string(rest))) != 0 {
		return nil, errors.New("evidence: want one PEM PRIVATE KEY block")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("evidence: private key: %w", err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("evidence: private key is %T, want Ed25519", k)
	}
	return ek, nil
}

// ParsePublicKey decodes a PEM "PUBLIC KEY" holding an Ed25519 key, or a
// key id ("ed25519:" and 64 hex digits) on one line.
func ParsePublicKey(data []byte) (ed25519.PublicKey, error) {
	if s := strings.TrimSpace(string(data)); strings.HasPrefix(s, KeyIDPrefix) {
		return ParseKeyID(s)
	}
	b, rest := pem.Decode(data)
	if b == nil || b.Type != "PUBLIC KEY" || len(strings.TrimSpace(string(rest))) != 0 {
		return nil, errors.New("evidence: want one PEM PUBLIC KEY block or an ed25519: key id")
	}
	k, err := x509.ParsePKIXPublicKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("evidence: public key: %w", err)
	}
	ek, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("evidence: public key is %T, want Ed25519", k)
	}
	return ek, nil
}

// LoadSigner reads an Ed25519 private key written by aegis keygen (PEM,
// PKCS #8) and returns its signer. Like ssh, it refuses a key file that
// its group or others may read or write.
func LoadSigner(path string) (*Ed25519Signer, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("evidence: signing key: %w", err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("evidence: signing key %s: mode %v lets others read it; chmod 600 it", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("evidence: signing key: %w", err)
	}
	key, err := ParsePrivateKey(data)
	if err != nil {
		return nil, err
	}
	return NewEd25519Signer(key), nil
}

// LoadPublicKey reads a public key file (PEM "PUBLIC KEY", or a key id).
func LoadPublicKey(path string) (ed25519.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("evidence: public key: %w", err)
	}
	return ParsePublicKey(data)
}

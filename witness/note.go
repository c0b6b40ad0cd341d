package witness

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aegis-run/aegis/evidence"
)

// Signed notes (C2SP signed-note): the text, an empty line, then one line
// per signature, "— NAME BASE64", where BASE64 encodes the key hash (4
// bytes) followed by the signature. An aegis checkpoint's key name is the
// evidence key id of its Ed25519 key ("ed25519:" and the public key in
// hex), and its key hash is the first 4 bytes of SHA-256(NAME || 0x0A ||
// 0x01 || public key), 0x01 being the signed-note type of Ed25519.

// MaxNoteBytes bounds a signed note; a longer one is refused unread.
const MaxNoteBytes = 4096

// maxSignatures bounds the signature lines of a note.
const maxSignatures = 16

// sigPrefix starts a signature line: an em dash (U+2014) and a space.
const sigPrefix = "\u2014 "

// algEd25519 is the signed-note signature type of Ed25519.
const algEd25519 = 0x01

// ErrSignature is wrapped by the errors of a note whose signature does
// not verify, or that is not signed by the key expected.
var ErrSignature = errors.New("witness: signature")

// Signed is a checkpoint with the signed note that carries it.
type Signed struct {
	Checkpoint
	// KeyID is the evidence key id of the key that signed it.
	KeyID string
	// Note is the whole signed note, as read or written.
	Note []byte
}

// keyHash returns the signed-note key hash of an Ed25519 key of that name.
func keyHash(name string, pub ed25519.PublicKey) [4]byte {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{'\n', algEd25519})
	h.Write(pub)
	var kh [4]byte
	copy(kh[:], h.Sum(nil))
	return kh
}

// Sign returns the signed note of checkpoint c, signed by signer (whose
// KeyID must name an Ed25519 key, as evidence.Signer's do).
func Sign(ctx context.Context, c Checkpoint, signer evidence.Signer) (*Signed, error) {
	name := signer.KeyID()
	pub, err := publicKey(name)
	if err != nil {
		return nil, err
	}
	text := c.Text()
	sig, err := signer.Sign(ctx, text)
	if err != nil {
		return nil, fmt.Errorf("witness: sign checkpoint: %w", err)
	}
	if !ed25519.Verify(pub, text, sig) {
		return nil, fmt.Errorf("%w: the signer's signature does not verify under the key it names", ErrSignature)
	}
	kh := keyHash(name, pub)
	note := append(append([]byte{}, text...), '\n')
	note = fmt.Appendf(note, "%s%s %s\n", sigPrefix, name, base64.StdEncoding.EncodeToString(append(kh[:], sig...)))
	return &Signed{Checkpoint: c, KeyID: name, Note: note}, nil
}

// publicKey returns the Ed25519 key an evidence key id names
// (evidence.ParseKeyID).
func publicKey(keyID string) (ed25519.PublicKey, error) {
	k, err := evidence.ParseKeyID(keyID)
	if err != nil {
		return nil, fmt.Errorf("%w: key name %q is not an Ed25519 key id", ErrSignature, trim(keyID))
	}
	return k, nil
}

// OpenNote parses a signed note holding an aegis checkpoint and verifies its
// first signature under the key its name names: the note is well formed
// and signed by that key, which Open does not trust (the caller compares
// KeyID with the key it expects). Other signature lines must be well
// formed and are otherwise ignored.
func OpenNote(note []byte) (*Signed, error) {
	bad := func(why string) (*Signed, error) {
		return nil, fmt.Errorf("%w note: %s", ErrMalformed, why)
	}
	switch {
	case len(note) > MaxNoteBytes:
		return bad(fmt.Sprintf("longer than %d bytes", MaxNoteBytes))
	case !utf8.Valid(note):
		return bad("not UTF-8")
	case !bytes.HasSuffix(note, []byte("\n")):
		return bad("does not end with a line feed")
	}
	for _, r := range string(note) {
		if r < 0x20 && r != '\n' || r == 0x7f {
			return bad("holds a control character")
		}
	}
	split := bytes.LastIndex(note, []byte("\n\n"))
	if split < 0 {
		return bad("no empty line before the signatures")
	}
	text, sigs := note[:split+1], note[split+2:]
	c, err := ParseText(text)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(sigs), "\n"), "\n")
	if len(lines) > maxSignatures {
		return bad(fmt.Sprintf("more than %d signatures", maxSignatures))
	}
	type sigLine struct {
		name string
		blob []byte
	}
	parsed := make([]sigLine, 0, len(lines))
	for _, l := range lines {
		rest, ok := strings.CutPrefix(l, sigPrefix)
		if !ok {
			return bad("a signature line does not start with \"\u2014 \"")
		}
		name, b64, ok := strings.Cut(rest, " ")
		if !ok || name == "" || strings.ContainsAny(name, "+ ") {
			return bad("a signature line's key name is empty or holds a space or '+'")
		}
		blob, err := base64.StdEncoding.Strict().DecodeString(b64)
		if err != nil || len(blob) < 5 || base64.StdEncoding.EncodeToString(blob) != b64 {
			return bad("a signature is not a key hash and a signature in standard base64")
		}
		parsed = append(parsed, sigLine{name: name, blob: blob})
	}
	first := parsed[0]
	pub, err := publicKey(first.name)
	if err != nil {
		return nil, err
	}
	kh := keyHash(first.name, pub)
	switch {
	case !bytes.Equal(first.blob[:4], kh[:]):
		return nil, fmt.Errorf("%w: the key hash does not match the key %s", ErrSignature, first.name)
	case len(first.blob) != 4+ed25519.SignatureSize || !ed25519.Verify(pub, text, first.blob[4:]):
		return nil, fmt.Errorf("%w: the checkpoint's signature does not verify under %s", ErrSignature, first.name)
	}
	return &Signed{Checkpoint: c, KeyID: first.name, Note: note}, nil
}

// trim shortens a string from outside for a message.
func trim(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

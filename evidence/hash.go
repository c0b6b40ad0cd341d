package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/aegis-run/aegis/contract"
)

// Domain separation. Every hash aegis computes over bundle data starts with
// a prefix that says what is hashed, so that no value can be reinterpreted
// at another level: a record of one kind as a record of another, a record
// as a ledger entry, an entry as a Merkle node. The two ASCII prefixes
// start with 'a' (0x61), never with the RFC 6962 bytes 0x00 and 0x01.
const (
	// ContentPrefix starts a content hash; the kind and ':' follow.
	ContentPrefix = "aegis.evidence.v1.content:"
	// EntryPrefix starts an entry hash.
	EntryPrefix = "aegis.evidence.v1.entry:"
)

// RFC 6962 Merkle tree prefixes.
const (
	leafPrefix = 0x00
	nodePrefix = 0x01
)

// Hash is a SHA-256 digest.
type Hash [32]byte

// String returns the hash as 64 lowercase hex digits.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// ParseHash parses 64 lowercase hex digits.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 64 {
		return h, errors.New("not 64 hex digits")
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return h, errors.New("not 64 lowercase hex digits")
		}
	}
	_, err := hex.Decode(h[:], []byte(s))
	return h, err
}

// ContentHash returns the content hash of a record of the given kind whose
// plain SHA-256 is digest:
//
//	SHA-256("aegis.evidence.v1.content:" || kind || ":" || digest)
//
// digest is SHA-256 over the record's bytes (a JSON record's canonical
// bytes without its final line feed; an image's or DOM snapshot's bytes),
// so that each byte of a bundle is hashed once: the plain digest is also
// what an ImageArtifact's contentHash and an observation's domHash are.
func ContentHash(kind contract.LedgerKind, digest Hash) Hash {
	buf := make([]byte, 0, len(ContentPrefix)+len(kind)+1+len(digest))
	buf = append(buf, ContentPrefix...)
	buf = append(buf, kind...)
	buf = append(buf, ':')
	buf = append(buf, digest[:]...)
	return sha256.Sum256(buf)
}

// entryHash returns SHA-256(EntryPrefix || canon), canon being the
// canonical bytes of an entry without its entryHash member.
func entryHash(canon []byte) Hash {
	h := sha256.New()
	h.Write([]byte(EntryPrefix))
	h.Write(canon)
	var out Hash
	h.Sum(out[:0])
	return out
}

package witness

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
)

// OriginPrefix starts the origin line of every aegis checkpoint; the
// session id follows it.
const OriginPrefix = "aegis-evidence/1/"

// headPrefix starts the checkpoint's extension line holding the head hash.
const headPrefix = "head "

// ErrMalformed is wrapped by the errors of checkpoints, notes and requests
// that are not well formed.
var ErrMalformed = errors.New("witness: malformed")

// Checkpoint is the head of one bundle's ledger, as a witness holds it.
type Checkpoint struct {
	// Origin names the log: OriginPrefix and the bundle's session id.
	Origin string
	// Size is the number of ledger entries.
	Size uint64
	// Root is the RFC 6962 Merkle tree hash over their entry hashes.
	Root evidence.Hash
	// Head is the entryHash of the last entry.
	Head evidence.Hash
}

// Origin returns the origin of the log of a session's bundle.
func Origin(sessionID string) string { return OriginPrefix + sessionID }

// CheckpointOf returns the checkpoint of a ledger head.
func CheckpointOf(h evidence.Head) Checkpoint {
	return Checkpoint{Origin: Origin(h.SessionID), Size: uint64(h.Size), Root: h.Root, Head: h.Last}
}

// Text returns the checkpoint's text, the body of its signed note: four
// lines, each ending with a line feed.
func (c Checkpoint) Text() []byte {
	return fmt.Appendf(nil, "%s\n%d\n%s\n%s%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Root[:]), headPrefix, c.Head)
}

// ParseText parses a checkpoint's text, as Text writes it and no other
// spelling.
func ParseText(text []byte) (Checkpoint, error) {
	var c Checkpoint
	bad := func(why string) (Checkpoint, error) {
		return Checkpoint{}, fmt.Errorf("%w checkpoint: %s", ErrMalformed, why)
	}
	s := string(text)
	if !strings.HasSuffix(s, "\n") {
		return bad("the text does not end with a line feed")
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) != 4 {
		return bad(fmt.Sprintf("%d lines, want 4 (origin, size, root, head)", len(lines)))
	}
	sid, ok := strings.CutPrefix(lines[0], OriginPrefix)
	if !ok || !contract.IsID(sid) {
		return bad("origin is not " + OriginPrefix + "SESSIONID")
	}
	c.Origin = lines[0]
	size, err := strconv.ParseUint(lines[1], 10, 63)
	if err != nil || size == 0 || strconv.FormatUint(size, 10) != lines[1] {
		return bad("size is not a positive decimal number without leading zeros")
	}
	c.Size = size
	root, err := base64.StdEncoding.Strict().DecodeString(lines[2])
	if err != nil || len(root) != len(c.Root) || base64.StdEncoding.EncodeToString(root) != lines[2] {
		return bad("root is not 32 bytes in standard base64")
	}
	copy(c.Root[:], root)
	head, ok := strings.CutPrefix(lines[3], headPrefix)
	if !ok {
		return bad("the fourth line is not \"head HASH\"")
	}
	if c.Head, err = evidence.ParseHash(head); err != nil || c.Head.String() != head {
		return bad("head is not 64 lowercase hex digits")
	}
	return c, nil
}

package witness

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/aegis-run/aegis/evidence"
)

// The body of POST /checkpoint (FORMAT.md, section 14), after the C2SP
// tlog-witness add-checkpoint request: "old SIZE", then one line per hash
// of the consistency proof in standard base64, an empty line, and the
// signed note.

// maxRequestBytes bounds the body of a request.
const maxRequestBytes = 64 + MaxProofHashes*45 + MaxNoteBytes

// EncodeAdd returns the body of an add request.
func EncodeAdd(old uint64, proof []evidence.Hash, note []byte) []byte {
	b := fmt.Appendf(nil, "old %d\n", old)
	for _, h := range proof {
		b = append(b, base64.StdEncoding.EncodeToString(h[:])...)
		b = append(b, '\n')
	}
	b = append(b, '\n')
	return append(b, note...)
}

// ParseAdd parses the body of an add request.
func ParseAdd(body []byte) (old uint64, proof []evidence.Hash, note []byte, err error) {
	bad := func(why string) (uint64, []evidence.Hash, []byte, error) {
		return 0, nil, nil, fmt.Errorf("%w request: %s", ErrMalformed, why)
	}
	if len(body) > maxRequestBytes {
		return bad(fmt.Sprintf("longer than %d bytes", maxRequestBytes))
	}
	head, note, ok := bytes.Cut(body, []byte("\n\n"))
	if !ok {
		return bad("no empty line before the note")
	}
	lines := strings.Split(string(head), "\n")
	num, ok := strings.CutPrefix(lines[0], "old ")
	if !ok {
		return bad("the first line is not \"old SIZE\"")
	}
	old, perr := strconv.ParseUint(num, 10, 63)
	if perr != nil || strconv.FormatUint(old, 10) != num {
		return bad("the old size is not a decimal number without leading zeros")
	}
	if len(lines)-1 > MaxProofHashes {
		return bad(fmt.Sprintf("a proof of more than %d hashes", MaxProofHashes))
	}
	for _, l := range lines[1:] {
		h, derr := base64.StdEncoding.Strict().DecodeString(l)
		if derr != nil || len(h) != 32 || base64.StdEncoding.EncodeToString(h) != l {
			return bad("a proof line is not a hash in standard base64")
		}
		proof = append(proof, evidence.Hash(h))
	}
	return old, proof, note, nil
}

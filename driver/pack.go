package driver

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"fmt"
	"io"

	"github.com/aegis-run/aegis/contract"
)

// packPrefix starts an observation that the observer's observePacked
// compressed: deflate-raw, then base64. Anything else is plain JSON.
const packPrefix = "deflate-raw;base64,"

// unpack returns the observer's JSON answer from what observePacked
// returned: data itself when it is not packed, else its decompressed
// contents, refused past MaxPagePayload bytes.
func unpack(data []byte) ([]byte, error) {
	b64, ok := bytes.CutPrefix(data, []byte(packPrefix))
	if !ok {
		return data, nil
	}
	z := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
	n, err := base64.StdEncoding.Decode(z, b64)
	if err != nil {
		return nil, newErr(contract.CodeInternal, "", "observer returned a packed answer that is not base64", err)
	}
	var out bytes.Buffer
	// Observations compress about tenfold.
	out.Grow(min(16*n, MaxPagePayload+1))
	r := flate.NewReader(bytes.NewReader(z[:n]))
	defer r.Close()
	if _, err := io.Copy(&out, io.LimitReader(r, MaxPagePayload+1)); err != nil {
		return nil, newErr(contract.CodeInternal, "", "observer returned a packed answer that does not inflate", err)
	}
	if out.Len() > MaxPagePayload {
		return nil, newErr(contract.CodeInternal, "", fmt.Sprintf("observer returned more than %d bytes", MaxPagePayload), nil)
	}
	return out.Bytes(), nil
}

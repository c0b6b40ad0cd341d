package driver

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"fmt"
	"io"
	"sync"

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
	r := inflater(bytes.NewReader(z[:n]))
	defer inflaters.Put(r)
	if _, err := io.Copy(&out, io.LimitReader(r, MaxPagePayload+1)); err != nil {
		return nil, newErr(contract.CodeInternal, "", "observer returned a packed answer that does not inflate", err)
	}
	if out.Len() > MaxPagePayload {
		return nil, newErr(contract.CodeInternal, "", fmt.Sprintf("observer returned more than %d bytes", MaxPagePayload), nil)
	}
	return out.Bytes(), nil
}

// inflaters holds decompressors for reuse: each holds a 32 KB window
// and its tables, about 40 KB that every observation would otherwise
// allocate anew.
var inflaters sync.Pool

// inflater returns a decompressor reading src, from the pool if it has
// one. Put it back in inflaters when done.
func inflater(src io.Reader) io.ReadCloser {
	if r, ok := inflaters.Get().(io.ReadCloser); ok {
		if err := r.(flate.Resetter).Reset(src, nil); err == nil {
			return r
		}
	}
	return flate.NewReader(src)
}

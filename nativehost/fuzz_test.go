package nativehost

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"
)

// FuzzReadFrame feeds arbitrary streams to the frame reader (corpus in
// testdata/fuzz/FuzzReadFrame: lengths 0 and 2^32-1, stray text read as a
// length, truncated headers and bodies, valid frames). It must never
// panic, never return a frame over its cap or an empty one, fail only
// with the documented errors, and allocate no more than the data it was
// given allows (bounded by the cap).
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte("/home/user/.config"))
	f.Add([]byte("data: x"))
	f.Add([]byte{2, 0, 0, 0, '{', '}'})
	f.Add([]byte{7})
	f.Add([]byte{7, 0, 0})
	const max = 64 << 10
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r := NewReader(bytes.NewReader(data), max)
		total := 0
		for {
			b, err := r.ReadFrame()
			if err != nil {
				switch {
				case errors.Is(err, io.EOF), errors.Is(err, ErrTruncated), errors.Is(err, ErrFrameTooLarge), errors.Is(err, ErrEmptyFrame):
				default:
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			if len(b) == 0 || len(b) > max {
				t.Fatalf("frame of %d bytes (cap %d)", len(b), max)
			}
			total += HeaderSize + len(b)
		}
		if total > len(data) {
			t.Fatalf("read %d bytes of frames from %d bytes", total, len(data))
		}
		runtime.ReadMemStats(&after)
		// The frames themselves (at most the input), plus a buffer that
		// grows by doubling from readChunk, never past the cap.
		if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(3*len(data)+2*readChunk+64<<10); got > limit {
			t.Fatalf("allocated %d bytes for %d bytes of input (limit %d)", got, len(data), limit)
		}
	})
}

package secrets

import (
	"bytes"
	"io"
	"sync"
)

// MaxLineBuffer is the most a Writer holds back waiting for the end of a
// line: a longer line is filtered and written in pieces of this size, so
// a value split across two pieces by the cut is beyond the filter but
// for its start, masked in the first piece when at least half of it is
// there (see Set.Mask).
const MaxLineBuffer = 1 << 20

// Writer is an io.Writer that passes what is written to it through the
// set's egress filter (Redact) a line at a time before handing it to the
// underlying writer: whole lines, so that a value written in several
// pieces is filtered whole. It holds back an unfinished line until the
// line ends, Flush is called or MaxLineBuffer bytes are waiting. It is
// safe for concurrent use; each Write of whole lines reaches the
// underlying writer in one Write.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	set *Set
	buf []byte
}

// NewWriter returns a Writer that filters what goes to w with set. A nil
// or empty set filters nothing but still buffers by line.
func NewWriter(w io.Writer, set *Set) *Writer { return &Writer{w: w, set: set} }

// Write filters and writes every whole line of p (with what was held back
// before it) and holds back the rest, taking p in pieces so that no more
// than MaxLineBuffer bytes are ever held: a line that reaches that size
// is written in pieces of it. It reports len(p) written unless the
// underlying writer fails: then it reports the bytes of p it took, and
// what it tried to write is dropped, not written again with the next line.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for len(p) > 0 {
		take := min(MaxLineBuffer-len(w.buf), len(p))
		held := len(w.buf)
		w.buf = append(w.buf, p[:take]...)
		p, n = p[take:], n+take
		// What was held holds no line end: only the new bytes are searched.
		end := bytes.LastIndexByte(w.buf[held:], '\n') + 1
		if end > 0 {
			end += held
		}
		if end == 0 {
			if len(w.buf) < MaxLineBuffer {
				break // p is all taken: the line waits for its end
			}
			end = len(w.buf)
		}
		err := w.emit(w.buf[:end])
		w.buf = append(w.buf[:0], w.buf[end:]...)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Flush filters and writes what was held back (an unfinished line, such
// as a prompt).
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) == 0 {
		return nil
	}
	err := w.emit(w.buf)
	w.buf = w.buf[:0]
	return err
}

func (w *Writer) emit(b []byte) error {
	out := w.set.Redact(string(b))
	_, err := io.WriteString(w.w, out)
	return err
}

package nativehost

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Chrome's native messaging framing: every message is a 4-byte length in
// native byte order (little-endian on every platform Chrome supports),
// then that many bytes of UTF-8 JSON.
const (
	// HeaderSize is the size of a frame's length prefix.
	HeaderSize = 4
	// DefaultMaxInbound is the largest frame the host reads by default:
	// 64 MiB, Chrome's own cap on a message to a native host.
	DefaultMaxInbound = 64 << 20
	// MaxOutbound is the largest frame the host writes: 1 MiB, Chrome's cap
	// on a message from a native host. Chrome disconnects the port (and
	// kills the host) on a larger one, so the Writer refuses it.
	MaxOutbound = 1 << 20
	// readChunk is the first allocation for a frame's body; the buffer
	// doubles as bytes really arrive, so a header that announces far more
	// than is sent costs only what was sent.
	readChunk = 64 << 10
)

// Frame errors. Use errors.Is; the *FrameSizeError carries the details.
var (
	// ErrFrameTooLarge: a frame's length is over the cap (inbound) or over
	// MaxOutbound (outbound).
	ErrFrameTooLarge = errors.New("nativehost: frame too large")
	// ErrEmptyFrame: a frame of length 0, which cannot hold a JSON message.
	ErrEmptyFrame = errors.New("nativehost: empty frame")
	// ErrTruncated: the stream ended inside a header or a body.
	ErrTruncated = errors.New("nativehost: truncated frame")
)

// FrameSizeError is a frame refused for its size. Inbound, the declared
// length was read from the header and nothing of the body was allocated
// or read: the stream cannot be resynchronized, so the reader is done.
type FrameSizeError struct {
	// Length is the frame's declared (inbound) or actual (outbound) length.
	Length uint64
	// Max is the cap it broke.
	Max int
	// Outbound says the host tried to write it.
	Outbound bool
}

// Error says which cap was broken. For an inbound frame it also shows the
// header as text when it is printable: a stray "/hom" or "data" read as a
// length is a host (or a relay) that wrote text to stdout.
func (e *FrameSizeError) Error() string {
	if e.Outbound {
		return fmt.Sprintf("nativehost: outbound frame of %d bytes is over Chrome's %d-byte limit", e.Length, e.Max)
	}
	s := fmt.Sprintf("nativehost: inbound frame of %d bytes is over the %d-byte cap", e.Length, e.Max)
	var h [4]byte
	binary.LittleEndian.PutUint32(h[:], uint32(e.Length))
	printable := true
	for _, c := range h {
		if c < 0x20 || c > 0x7e {
			printable = false
		}
	}
	if printable {
		s += fmt.Sprintf(" (the header reads %q: text, not a length)", string(h[:]))
	}
	return s
}

// Is makes errors.Is(err, ErrFrameTooLarge) hold.
func (e *FrameSizeError) Is(target error) bool { return target == ErrFrameTooLarge }

// Reader reads frames from a stream, refusing any frame over its cap
// before allocating it. A Reader is not safe for concurrent use; after an
// error every later ReadFrame returns the same error.
type Reader struct {
	r   io.Reader
	max int
	err error
}

// NewReader returns a Reader of r that refuses frames over max bytes; max
// <= 0 means DefaultMaxInbound.
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = DefaultMaxInbound
	}
	return &Reader{r: r, max: max}
}

// Max returns the reader's cap.
func (r *Reader) Max() int { return r.max }

// ReadFrame reads one frame and returns its body. It returns io.EOF at a
// clean end of the stream (between frames), ErrTruncated when the stream
// ends inside a frame, a *FrameSizeError (ErrFrameTooLarge) for a length
// over the cap and ErrEmptyFrame for a length of 0. Memory use is bounded
// by the cap: the body buffer grows only as bytes arrive, to at most the
// declared length.
func (r *Reader) ReadFrame() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	b, err := r.read()
	if err != nil {
		r.err = err
	}
	return b, err
}

func (r *Reader) read() ([]byte, error) {
	var hdr [HeaderSize]byte
	if n, err := io.ReadFull(r.r, hdr[:]); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: %d of %d header bytes", ErrTruncated, n, HeaderSize)
		}
		return nil, err
	}
	length := binary.LittleEndian.Uint32(hdr[:])
	if length == 0 {
		return nil, ErrEmptyFrame
	}
	if uint64(length) > uint64(r.max) {
		return nil, &FrameSizeError{Length: uint64(length), Max: r.max}
	}
	n := int(length)
	buf := make([]byte, min(n, readChunk))
	got := 0
	for {
		m, err := io.ReadFull(r.r, buf[got:])
		got += m
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("%w: %d of %d body bytes", ErrTruncated, got, n)
			}
			return nil, err
		}
		if got == n {
			return buf, nil
		}
		next := make([]byte, min(n, 2*len(buf)))
		copy(next, buf[:got])
		buf = next
	}
}

// Writer writes frames to a stream, one whole frame per Write call, and
// never a frame over MaxOutbound. It is safe for concurrent use: frames of
// concurrent writers never interleave.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	max int
	buf []byte
	err error
}

// NewWriter returns a Writer of w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, max: MaxOutbound} }

// WriteFrame writes body as one frame. A body over MaxOutbound is refused
// with a *FrameSizeError (ErrFrameTooLarge) and nothing is written; so is
// an empty body (ErrEmptyFrame). After a write error every later write
// fails with it.
func (w *Writer) WriteFrame(body []byte) error {
	if len(body) == 0 {
		return ErrEmptyFrame
	}
	if len(body) > w.max {
		return &FrameSizeError{Length: uint64(len(body)), Max: w.max, Outbound: true}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	need := HeaderSize + len(body)
	if cap(w.buf) < need {
		w.buf = make([]byte, need)
	}
	b := w.buf[:need]
	binary.LittleEndian.PutUint32(b, uint32(len(body)))
	copy(b[HeaderSize:], body)
	if _, err := w.w.Write(b); err != nil {
		w.err = fmt.Errorf("nativehost: write frame: %w", err)
		return w.err
	}
	if len(w.buf) > 256<<10 {
		w.buf = nil // do not keep a large buffer alive
	}
	return nil
}

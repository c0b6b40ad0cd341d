package nativehost

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// frame returns body with its length prefix.
func frame(body string) []byte {
	b := make([]byte, HeaderSize+len(body))
	binary.LittleEndian.PutUint32(b, uint32(len(body)))
	copy(b[HeaderSize:], body)
	return b
}

func header(n uint32) []byte {
	var b [HeaderSize]byte
	binary.LittleEndian.PutUint32(b[:], n)
	return b[:]
}

func TestReadFrame(t *testing.T) {
	const max = 1 << 20
	tests := []struct {
		name    string
		in      []byte
		want    []string // frames read before the error
		wantErr error
		errText string // also in the error's text
	}{
		{"one frame", frame(`{"a":1}`), []string{`{"a":1}`}, io.EOF, ""},
		{"two frames", append(frame(`{}`), frame(`[1,2]`)...), []string{`{}`, `[1,2]`}, io.EOF, ""},
		{"empty stream", nil, nil, io.EOF, ""},
		{"length 0", header(0), nil, ErrEmptyFrame, ""},
		{"length 2^32-1", header(1<<32 - 1), nil, ErrFrameTooLarge, "4294967295"},
		{"cap plus one", header(max + 1), nil, ErrFrameTooLarge, "over the 1048576-byte cap"},
		{"exactly the cap", append(header(max), bytes.Repeat([]byte("x"), max)...), []string{strings.Repeat("x", max)}, io.EOF, ""},
		{"stray /hom", []byte("/home/user/aegis: starting\n"), nil, ErrFrameTooLarge, `"/hom"`},
		{"stray data", []byte("data: {}"), nil, ErrFrameTooLarge, `"data"`},
		{"truncated header 1", []byte{5}, nil, ErrTruncated, "1 of 4 header bytes"},
		{"truncated header 3", []byte{5, 0, 0}, nil, ErrTruncated, "3 of 4 header bytes"},
		{"truncated body", append(header(10), "{}"...), nil, ErrTruncated, "2 of 10 body bytes"},
		{"frame then truncated header", append(frame(`{}`), 1, 0), []string{`{}`}, ErrTruncated, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(bytes.NewReader(tt.in), max)
			var got []string
			var err error
			for {
				var b []byte
				b, err = r.ReadFrame()
				if err != nil {
					break
				}
				got = append(got, string(b))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("frames = %q, want %q", got, tt.want)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.errText) {
				t.Errorf("error %q does not say %q", err, tt.errText)
			}
			// The error sticks.
			if _, again := r.ReadFrame(); again != err {
				t.Errorf("second ReadFrame = %v, want the same error", again)
			}
		})
	}
}

func TestReadFrameDefaultCap(t *testing.T) {
	r := NewReader(bytes.NewReader(header(DefaultMaxInbound+1)), 0)
	if r.Max() != DefaultMaxInbound {
		t.Fatalf("cap = %d", r.Max())
	}
	_, err := r.ReadFrame()
	var se *FrameSizeError
	if !errors.As(err, &se) || se.Length != DefaultMaxInbound+1 || se.Max != DefaultMaxInbound || se.Outbound {
		t.Fatalf("error = %#v", err)
	}
}

// allocated returns the bytes f allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestReadFrameMemory: a header announcing much more than is sent costs
// only what is sent; a refused length costs nothing.
func TestReadFrameMemory(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		max  uint64
	}{
		{"60 MiB announced, 10 bytes sent", append(header(60<<20), "0123456789"...), 2 * readChunk},
		{"2^32-1 announced", append(header(1<<32-1), "xxxx"...), 16 << 10},
		{"/hom read as a length", []byte("/home/user"), 16 << 10},
		{"1 MiB sent", append(header(1<<20), bytes.Repeat([]byte("y"), 1<<20)...), 3 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			n := allocated(func() {
				r := NewReader(bytes.NewReader(in), DefaultMaxInbound)
				for {
					if _, err := r.ReadFrame(); err != nil {
						break
					}
				}
			})
			if n > tt.max {
				t.Errorf("allocated %d bytes, want at most %d", n, tt.max)
			}
		})
	}
}

func TestWriteFrame(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.WriteFrame([]byte(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	if got := buf.Bytes(); !bytes.Equal(got, frame(`{"ok":true}`)) {
		t.Fatalf("wrote %q", got)
	}
	buf.Reset()
	if err := w.WriteFrame(bytes.Repeat([]byte("a"), MaxOutbound)); err != nil {
		t.Fatalf("a frame of exactly 1 MiB: %v", err)
	}
	if buf.Len() != HeaderSize+MaxOutbound {
		t.Fatalf("wrote %d bytes", buf.Len())
	}
	buf.Reset()
	err := w.WriteFrame(bytes.Repeat([]byte("a"), MaxOutbound+1))
	var se *FrameSizeError
	if !errors.Is(err, ErrFrameTooLarge) || !errors.As(err, &se) || !se.Outbound || se.Length != MaxOutbound+1 {
		t.Fatalf("1 MiB + 1: error = %v", err)
	}
	if buf.Len() != 0 {
		t.Fatalf("an oversized frame wrote %d bytes", buf.Len())
	}
	if err := w.WriteFrame(nil); !errors.Is(err, ErrEmptyFrame) {
		t.Fatalf("empty frame: %v", err)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("broken pipe")
}

func TestWriteFrameErrorSticks(t *testing.T) {
	fw := &failWriter{}
	w := NewWriter(fw)
	if err := w.WriteFrame([]byte("{}")); err == nil {
		t.Fatal("no error")
	}
	if err := w.WriteFrame([]byte("{}")); err == nil || fw.n != 1 {
		t.Fatalf("second write: %v after %d writes", err, fw.n)
	}
}

// TestWriteFrameConcurrent: frames of concurrent writers never interleave.
func TestWriteFrameConcurrent(t *testing.T) {
	pr, pw := io.Pipe()
	w := NewWriter(pw)
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := bytes.Repeat([]byte{byte('a' + i)}, 1000+i*3000)
			for j := 0; j < each; j++ {
				if err := w.WriteFrame(body); err != nil {
					t.Error(err)
					return
				}
			}
		}(i)
	}
	go func() { wg.Wait(); pw.Close() }()
	r := NewReader(pr, 0)
	n := 0
	for {
		b, err := r.ReadFrame()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != 1000+int(b[0]-'a')*3000 || bytes.Count(b, b[:1]) != len(b) {
			t.Fatalf("frame %d is mixed", n)
		}
		n++
	}
	if n != writers*each {
		t.Fatalf("read %d frames, want %d", n, writers*each)
	}
}

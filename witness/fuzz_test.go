package witness

import (
	"bytes"
	"context"
	"testing"
)

// FuzzOpenNote: a signed note from outside (a witness's answer, a log
// file, a request) never panics the parser, and what it accepts is a
// checkpoint whose text Text reproduces byte for byte, signed by the key
// it names.
func FuzzOpenNote(f *testing.F) {
	s, err := Sign(context.Background(), testCheckpoint(), testSigner(1))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(s.Note)
	f.Add(testCheckpoint().Text())
	f.Add([]byte("aegis-evidence/1/s\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\nhead " + string(bytes.Repeat([]byte("0"), 64)) + "\n\n\u2014 k AAAAAA==\n"))
	f.Fuzz(func(t *testing.T, note []byte) {
		got, err := OpenNote(note)
		if err != nil {
			return
		}
		if !bytes.HasPrefix(note, got.Checkpoint.Text()) || !bytes.Equal(got.Note, note) {
			t.Fatalf("accepted %q as %+v", note, got.Checkpoint)
		}
		if _, err := publicKey(got.KeyID); err != nil {
			t.Fatalf("accepted a note signed by %q", got.KeyID)
		}
	})
}

// FuzzParseAdd: a request body never panics the parser, and what it
// accepts encodes back to the same bytes.
func FuzzParseAdd(f *testing.F) {
	s, _ := Sign(context.Background(), testCheckpoint(), testSigner(1))
	f.Add(EncodeAdd(0, nil, s.Note))
	f.Add(EncodeAdd(3, ledger(2), s.Note))
	f.Add([]byte("old 1\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		old, proof, note, err := ParseAdd(body)
		if err != nil {
			return
		}
		if again := EncodeAdd(old, proof, note); !bytes.Equal(again, body) {
			t.Fatalf("ParseAdd(%q) encodes back as %q", body, again)
		}
	})
}

package witness

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/evidence"
)

func testCheckpoint() Checkpoint {
	var root, head evidence.Hash
	for i := range root {
		root[i], head[i] = byte(i), byte(255-i)
	}
	return Checkpoint{Origin: Origin("s-0123456789abcdef"), Size: 27, Root: root, Head: head}
}

func TestCheckpointText(t *testing.T) {
	c := testCheckpoint()
	got := string(c.Text())
	want := "aegis-evidence/1/s-0123456789abcdef\n27\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\nhead fffefdfcfbfaf9f8f7f6f5f4f3f2f1f0efeeedecebeae9e8e7e6e5e4e3e2e1e0\n"
	if got != want {
		t.Fatalf("Text() = %q, want %q", got, want)
	}
	back, err := ParseText([]byte(got))
	if err != nil || back != c {
		t.Fatalf("ParseText(Text()) = %+v, %v; want %+v", back, err, c)
	}
}

func TestParseTextRefuses(t *testing.T) {
	good := string(testCheckpoint().Text())
	lines := strings.SplitAfter(good, "\n")
	tests := []struct{ name, text string }{
		{"empty", ""},
		{"no final line feed", strings.TrimSuffix(good, "\n")},
		{"extra line", good + "more\n"},
		{"three lines", lines[0] + lines[1] + lines[2]},
		{"other origin", "example.com/log\n" + lines[1] + lines[2] + lines[3]},
		{"bad session id", "aegis-evidence/1/-x\n" + lines[1] + lines[2] + lines[3]},
		{"size 0", lines[0] + "0\n" + lines[2] + lines[3]},
		{"leading zero", lines[0] + "027\n" + lines[2] + lines[3]},
		{"signed size", lines[0] + "+27\n" + lines[2] + lines[3]},
		{"root short", lines[0] + lines[1] + "AAEC\n" + lines[3]},
		{"root unpadded", lines[0] + lines[1] + strings.TrimSuffix(lines[2], "=\n") + "\n" + lines[3]},
		{"root URL base64", lines[0] + lines[1] + strings.ReplaceAll(strings.ReplaceAll(lines[2], "/", "_"), "+", "-") + "_\n" + lines[3]},
		{"head upper case", lines[0] + lines[1] + lines[2] + strings.ToUpper(lines[3])},
		{"no head", lines[0] + lines[1] + lines[2] + "tail x\n"},
		{"CRLF", strings.ReplaceAll(good, "\n", "\r\n")},
	}
	for _, tt := range tests {
		if _, err := ParseText([]byte(tt.text)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", tt.name, err)
		}
	}
}

func TestSignAndOpen(t *testing.T) {
	ctx := context.Background()
	signer := testSigner(1)
	s, err := Sign(ctx, testCheckpoint(), signer)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(s.Note, testCheckpoint().Text()) || !bytes.Contains(s.Note, []byte("\n\n\u2014 "+signer.KeyID()+" ")) {
		t.Fatalf("note %q", s.Note)
	}
	got, err := OpenNote(s.Note)
	if err != nil {
		t.Fatal(err)
	}
	if got.Checkpoint != testCheckpoint() || got.KeyID != signer.KeyID() {
		t.Errorf("OpenNote = %+v", got)
	}
	// A second signature line of another key is ignored.
	other, _ := Sign(ctx, testCheckpoint(), testSigner(2))
	two := append(append([]byte{}, s.Note...), other.Note[bytes.LastIndex(other.Note, []byte("\n\n"))+2:]...)
	if got, err := OpenNote(two); err != nil || got.KeyID != signer.KeyID() {
		t.Errorf("two signatures: %+v, %v", got, err)
	}
}

func TestOpenNoteRefuses(t *testing.T) {
	ctx := context.Background()
	s, _ := Sign(ctx, testCheckpoint(), testSigner(1))
	note := string(s.Note)
	other, _ := Sign(ctx, testCheckpoint(), testSigner(2))
	split := strings.LastIndex(note, "\n\n") + 2
	sigLine := note[split:]
	name, blob, _ := strings.Cut(strings.TrimPrefix(strings.TrimSuffix(sigLine, "\n"), "\u2014 "), " ")
	otherLine := string(other.Note[bytes.LastIndex(other.Note, []byte("\n\n"))+2:])
	_, otherBlob, _ := strings.Cut(strings.TrimPrefix(strings.TrimSuffix(otherLine, "\n"), "\u2014 "), " ")
	changed := strings.Replace(note, "\n27\n", "\n28\n", 1)
	flip := []byte(blob)
	flip[10] ^= 0x01
	if flip[10] == '/' || flip[10] == '+' {
		flip[10] = 'A'
	}
	tests := []struct {
		name string
		note string
		want error
	}{
		{"text changed", changed, ErrSignature},
		{"signature flipped", note[:split] + "\u2014 " + name + " " + string(flip) + "\n", ErrSignature},
		{"another key's signature under this name", note[:split] + "\u2014 " + name + " " + otherBlob + "\n", ErrSignature},
		{"not an ed25519 key id", note[:split] + "\u2014 example.com+1234 " + blob + "\n", ErrMalformed},
		{"key name not a key id", note[:split] + "\u2014 witness.example " + blob + "\n", ErrSignature},
		{"no signature", note[:split], ErrMalformed},
		{"no empty line", strings.Replace(note, "\n\n", "\n", 1), ErrMalformed},
		{"hyphen instead of em dash", note[:split] + "- " + name + " " + blob + "\n", ErrMalformed},
		{"no final line feed", strings.TrimSuffix(note, "\n"), ErrMalformed},
		{"control character", strings.Replace(note, "head ", "head\t", 1), ErrMalformed},
		{"not UTF-8", note[:split] + "\u2014 " + name + "\xff " + blob + "\n", ErrMalformed},
		{"too long", note + strings.Repeat("\u2014 k "+blob+"\n", 100), ErrMalformed},
		{"short blob", note[:split] + "\u2014 " + name + " AAAA\n", ErrMalformed},
	}
	for _, tt := range tests {
		if _, err := OpenNote([]byte(tt.note)); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

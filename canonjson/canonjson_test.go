package canonjson

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/aegis-run/aegis/schemas"
)

func loadJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestFormatNumberRFC8785(t *testing.T) {
	var vectors []struct {
		Bits    string `json:"bits"`
		Want    string `json:"want"`
		WantErr bool   `json:"wantErr"`
	}
	loadJSON(t, "testdata/numbers.json", &vectors)
	for _, v := range vectors {
		raw, err := hex.DecodeString(v.Bits)
		if err != nil {
			t.Fatal(err)
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(raw))
		got, err := FormatNumber(f)
		if v.WantErr {
			if !errors.Is(err, ErrNumber) {
				t.Errorf("%s: got %q, %v; want ErrNumber", v.Bits, got, err)
			}
			continue
		}
		if err != nil || got != v.Want {
			t.Errorf("%s: got %q, %v; want %q", v.Bits, got, err, v.Want)
		}
	}
}

func TestTransform(t *testing.T) {
	var vectors []struct {
		Name    string `json:"name"`
		In      string `json:"in"`
		Want    string `json:"want"`
		WantErr string `json:"wantErr"`
	}
	loadJSON(t, "testdata/documents.json", &vectors)
	for _, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			got, err := Transform([]byte(v.In))
			if v.WantErr != "" {
				if err == nil || !strings.Contains(err.Error(), v.WantErr) {
					t.Fatalf("got %q, %v; want error containing %q", got, err, v.WantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != v.Want {
				t.Errorf("got  %s\nwant %s", got, v.Want)
			}
		})
	}
}

func TestMarshalMatchesTransform(t *testing.T) {
	v := map[string]any{"z": 1.5, "a": []any{"x", true, nil}, "m": map[string]int{"b": 2, "a": 1}}
	got, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":["x",true,null],"m":{"a":1,"b":2},"z":1.5}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, err := Marshal(math.NaN()); err == nil {
		t.Error("Marshal(NaN): want an error")
	}
}

// FuzzTransform checks, on arbitrary bytes, that canonicalization never
// panics, is idempotent, and keeps the value.
func FuzzTransform(f *testing.F) {
	var docs []struct {
		In string `json:"in"`
	}
	loadJSON(f, "testdata/documents.json", &docs)
	for _, d := range docs {
		f.Add([]byte(d.In))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		out, err := Transform(doc)
		if err != nil {
			var se *schemas.SyntaxError
			if !errors.As(err, &se) && !errors.Is(err, ErrNumber) && !errors.Is(err, ErrUTF8) && !errors.Is(err, schemas.ErrTooLarge) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			return
		}
		again, err := Transform(out)
		if err != nil {
			t.Fatalf("canonical output %q does not transform again: %v", out, err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("not idempotent:\n%s\n%s", out, again)
		}
		var a, b any
		if json.Unmarshal(doc, &a) == nil {
			if err := json.Unmarshal(out, &b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("value changed:\n%v\n%v", a, b)
			}
		}
	})
}

func BenchmarkTransform(b *testing.B) {
	doc := []byte(`{"id":"a1","type":"type","selector":"#username","text":"alice","redact":false,"reason":"fill the user name","policyTags":["form","login"]}`)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if _, err := Transform(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTransformInvalidUTF8(t *testing.T) {
	for _, doc := range []string{"\"\xff\"", "{\"\xc3\":1}"} {
		if got, err := Transform([]byte(doc)); !errors.Is(err, ErrUTF8) {
			t.Errorf("Transform(%q) = %q, %v; want ErrUTF8", doc, got, err)
		}
	}
}

// TestLessUTF16 checks the allocation-free order against the definition:
// comparing the strings' UTF-16 code units.
func TestLessUTF16(t *testing.T) {
	ref := func(a, b string) bool {
		ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
		for i := 0; i < len(ua) && i < len(ub); i++ {
			if ua[i] != ub[i] {
				return ua[i] < ub[i]
			}
		}
		return len(ua) < len(ub)
	}
	words := []string{"", "a", "ab", "b", "\r", "1", "\u0080", "ö", "€", "😀", "\ufb33", "\uffff", "\ue000", "a😀", "a\ufb33", "aé", "ae"}
	for _, a := range words {
		for _, b := range words {
			if got, want := LessUTF16(a, b), ref(a, b); got != want {
				t.Errorf("LessUTF16(%q, %q) = %v, want %v", a, b, got, want)
			}
		}
	}
}

// appendStringByByte is AppendString written one byte at a time, as RFC
// 8785 states it: the reference of TestAppendStringMatchesByteRule.
func appendStringByByte(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c >= 0x20:
			b = append(b, c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
	}
	return append(b, '"')
}

// TestAppendStringMatchesByteRule holds AppendString, which scans eight
// bytes at a time, to the byte-at-a-time rule: every byte value at every
// position of strings of 0 to 40 bytes, and random strings.
func TestAppendStringMatchesByteRule(t *testing.T) {
	check := func(s string) {
		t.Helper()
		got, want := AppendString([]byte("x"), s), appendStringByByte([]byte("x"), s)
		if !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %q, want %q", s, got, want)
		}
	}
	for n := 0; n <= 40; n++ {
		base := strings.Repeat("aé", n)[:n] // ASCII and the bytes of a two-byte character
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				b := []byte(base)
				b[pos] = byte(c)
				check(string(b))
			}
		}
		check(base)
	}
	alphabet := []byte("a\"\\\n\t\x00\x1f\x7f\xc3\xa9 ~")
	seed := uint64(1)
	for i := 0; i < 20000; i++ {
		b := make([]byte, i%97)
		for j := range b {
			seed = seed*6364136223846793005 + 1442695040888963407
			b[j] = alphabet[int(seed>>33)%len(alphabet)]
		}
		check(string(b))
	}
}

// TestLimitsMatchSchemas: canonical JSON accepts the nesting and the size
// the schemas do (canonjson does not import schemas, so the bound is its
// own constant).
func TestLimitsMatchSchemas(t *testing.T) {
	if got, want := MaxDepth, schemas.MaxDepth; got != want {
		t.Errorf("MaxDepth %d, schemas.MaxDepth %d", got, want)
	}
	doc := []byte(strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1))
	_, terr := Transform(doc)
	_, serr := schemas.Parse(doc)
	if terr == nil || serr == nil || terr.Error() != serr.Error() {
		t.Errorf("too deep: Transform %v, schemas.Parse %v, want the same error", terr, serr)
	}
}

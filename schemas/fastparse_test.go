package schemas

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// scanParse is held to parseTokens (encoding/json's tokenizer): the same
// verdict on every document, and the same value when both accept.

// checkParseAgreement fails t when scanParse and parseTokens disagree on
// doc.
func checkParseAgreement(t testing.TB, doc []byte) {
	t.Helper()
	got, ok := scanParse(doc, MaxDepth)
	want, err := parseTokens(doc, MaxDepth)
	switch {
	case ok && err != nil:
		t.Fatalf("scanParse accepted %q, which the token parser refuses: %v", doc, err)
	case !ok && err == nil:
		t.Fatalf("scanParse refused %q, which the token parser accepts", doc)
	case ok && !reflect.DeepEqual(got, want):
		t.Fatalf("on %q:\nscanParse:   %#v\ntokenParser: %#v", doc, got, want)
	}
}

// parseCases are documents on the edges of the grammar and of Parse's
// bounds.
var parseCases = []string{
	``, ` `, `{}`, `[]`, ` {} `, "\t[\n]\r", `{"a":1}`, `{ "a" : [ 1 , 2 ] , "b" : { } }`, `{"a":1,}`, `[1,]`, `[,1]`,
	`{"a" 1}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"x":{"k":1,"k":2}}`,
	`{} {}`, `{}x`, `1 2`, `true`, `tru`, `truex`, `[truex]`, `nul`, `null`, `false`, `fals`, `[true,false,null]`,
	`0`, `-0`, `01`, `-01`, `1.`, `.5`, `1.5`, `-1.5e10`, `1e`, `1e+`, `1E-5`, `1e400`, `-`, `--1`, `+1`, `0x10`,
	`1e999`, `1e1000`, `1e0001`, `1e-99999`, `[` + strings.Repeat("1", 100) + `]`, `[` + strings.Repeat("1", 101) + `]`,
	`["` + strings.Repeat("a", 300) + `"]`,
	`"a"`, `"`, `"a`, `"\"`, `"\\"`, `"\/"`, `"\'"`, `"\x"`, `"\u00e9"`, `"\u00E9"`, `"\u00g9"`, `"\u00e"`,
	`"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ude00\ud83d"`, `"\ud83d\ud83d\ude00"`,
	`"\u0000"`, `"\b\f\n\r\t"`, "\"a\x01\"", "\"a\x7f\"", "\"\xff\"", "\"\xc3\xa9\"", "\"\xc3\"", "\"\xed\xa0\x80\"",
	"\"\xf4\x90\x80\x80\"", "\"abcdefg\xffhijklmnop\"", "\"abcdefghijklmnop\\n\"", "{\"\xff\":1}", "{\"a\\u0000\":1}",
	`{"type":"click","id":"a1"}`, `{"type":"clickx"}`, `[{"selector":"#a","role":"link"}]`,
	strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
	strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
	strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth),
	strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1),
	"\xef\xbb\xbf{}", "{}\x00", "[1]\n\n",
}

func TestScanParseAgreesWithTokens(t *testing.T) {
	for _, c := range parseCases {
		checkParseAgreement(t, []byte(c))
	}
}

// TestScanParseRandom mutates every vector document at random, a few bytes
// at a time from an alphabet of JSON's structural and tricky bytes, and
// checks the parsers agree on each result.
func TestScanParseRandom(t *testing.T) {
	alphabet := []string{"{", "}", "[", "]", ",", ":", `"`, `\`, "u", "d83d", "e", "E", "-", "+", ".", "0", "1", " ", "\n",
		"\x01", "\xff", "\xc3", "é", "a", "true", "null", `\u00`, `\n`, "9"}
	r := rand.New(rand.NewPCG(7, 8))
	var docs [][]byte
	for _, k := range Kinds() {
		for _, d := range vectorDocs(t, string(k)) {
			docs = append(docs, d)
		}
	}
	for _, c := range parseCases {
		docs = append(docs, []byte(c))
	}
	n := 0
	for _, d := range docs {
		checkParseAgreement(t, d)
		for range 40 {
			m := []byte(string(d))
			for range 1 + r.IntN(3) {
				at := 0
				if len(m) > 0 {
					at = r.IntN(len(m))
				}
				ins := alphabet[r.IntN(len(alphabet))]
				switch r.IntN(3) {
				case 0: // insert
					m = append(m[:at], append([]byte(ins), m[at:]...)...)
				case 1: // delete
					if len(m) > 0 {
						m = append(m[:at], m[at+1:]...)
					}
				default: // replace
					if len(m) > 0 {
						m = append(m[:at], append([]byte(ins), m[at+1:]...)...)
					}
				}
			}
			checkParseAgreement(t, m)
			n++
		}
	}
	t.Logf("%d documents", n)
}

// FuzzParseAgreement: scanParse and the token parser agree on any bytes.
// The committed corpus is testdata/fuzz/FuzzParseAgreement.
func FuzzParseAgreement(f *testing.F) {
	for _, c := range parseCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		if len(doc) > 1<<16 {
			return
		}
		checkParseAgreement(t, doc)
	})
}

func TestIntern(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"affordances", true}, // a member name
		{"click", true},       // an enum value
		{"session.started", true},
		{"selector", true},
		{"no such name in any schema", false},
		{"", false},
	}
	for _, tt := range tests {
		v, ok := Intern([]byte(tt.s))
		if ok != tt.want {
			t.Errorf("Intern(%q): ok %v, want %v", tt.s, ok, tt.want)
		}
		if ok && v != tt.s {
			t.Errorf("Intern(%q) = %#v", tt.s, v)
		}
	}
}

// BenchmarkParse compares scanParse with the token parser on the largest
// valid vector of each kind.
func BenchmarkParse(b *testing.B) {
	for _, k := range []Kind{KindObservation, KindNavigatorResponse, KindDecision} {
		docs := vectorDocs(b, string(k))
		var doc []byte
		for _, d := range docs {
			if _, err := parseTokens(d, MaxDepth); err == nil && len(d) > len(doc) {
				doc = d
			}
		}
		b.Run(string(k)+"/scan", func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for range b.N {
				if _, ok := scanParse(doc, MaxDepth); !ok {
					b.Fatal("refused")
				}
			}
		})
		b.Run(string(k)+"/tokens", func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for range b.N {
				if _, err := parseTokens(doc, MaxDepth); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

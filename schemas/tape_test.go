package schemas

import (
	"encoding/json"
	"strings"
	"testing"
)

// tapeOf builds the tape of a parsed value as a parser would from a JSON
// text of it: members in the map's order (random: the tape walk must not
// depend on it), strings escaped as encoding/json escapes them (\u003c,
// \u2028 and the like, beyond what a canonical text escapes).
func tapeOf(x any) *Tape {
	t := &Tape{}
	var src []byte
	var add func(x any)
	add = func(x any) {
		switch y := x.(type) {
		case map[string]any:
			i := t.Open(TapeObject, len(src))
			src = append(src, '{')
			for k, e := range y {
				src = appendTapeString(t, src, k)
				src = append(src, ':')
				add(e)
				src = append(src, ',')
			}
			src = append(src, '}')
			t.Close(i, len(src), len(y))
		case []any:
			i := t.Open(TapeArray, len(src))
			src = append(src, '[')
			for _, e := range y {
				add(e)
				src = append(src, ',')
			}
			src = append(src, ']')
			t.Close(i, len(src), len(y))
		case string:
			src = appendTapeString(t, src, y)
		case nil:
			t.Scalar(TapeNull, len(src), len(src)+4)
			src = append(src, "null"...)
		case bool:
			kind, text := TapeFalse, "false"
			if y {
				kind, text = TapeTrue, "true"
			}
			t.Scalar(kind, len(src), len(src)+len(text))
			src = append(src, text...)
		default:
			text, _ := numText(y)
			t.Scalar(TapeNumber, len(src), len(src)+len(text))
			src = append(src, text...)
		}
	}
	add(x)
	t.src = src
	return t
}

// appendTapeString appends s to src as encoding/json writes it and
// records it on t.
func appendTapeString(t *Tape, src []byte, s string) []byte {
	q, _ := json.Marshal(s)
	inner := q[1 : len(q)-1]
	nonASCII := false
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			nonASCII = true
		}
	}
	src = append(src, '"')
	t.String(len(src), len(src)+len(inner), len(s), strings.Contains(string(inner), `\`), nonASCII)
	src = append(src, inner...)
	return append(src, '"')
}

func TestTapeReaders(t *testing.T) {
	doc := `{"a":{"b":"x<y","n":42,"f":1.5,"t":true,"z":null},"list":[1,"two",[3],{"k":"v"}],"u":"日本\u2028","e":{},"l":[]}`
	x, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	tp := tapeOf(x)
	if !Equal(tp.Value(0), x) {
		t.Fatalf("Value(0) = %v, want %v", tp.Value(0), x)
	}
	a := tp.Member(0, "a")
	n, ok := tp.Int(tp.Member(a, "n"))
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"Str a.b", tp.Str(tp.Member(a, "b")), "x<y"},
		{"StrIs a.b", tp.StrIs(tp.Member(a, "b"), "x<y"), true},
		{"StrIs a.b other", tp.StrIs(tp.Member(a, "b"), "x<z"), false},
		{"Int a.n", n, int64(42)},
		{"Int ok", ok, true},
		{"Int of 1.5", func() bool { _, ok := tp.Int(tp.Member(a, "f")); return ok }(), false},
		{"Kind a.t", tp.Kind(tp.Member(a, "t")), TapeTrue},
		{"Kind a.z", tp.Kind(tp.Member(a, "z")), TapeNull},
		{"missing member", tp.Member(a, "nope"), -1},
		{"member of a non-object", tp.Member(tp.Member(a, "b"), "x"), -1},
		{"member of -1", tp.Member(-1, "x"), -1},
		{"Str of -1", tp.Str(-1), ""},
		{"Str of a number", tp.Str(tp.Member(a, "n")), ""},
		{"Kind of -1", tp.Kind(-1), TapeKind(0)},
		{"Count list", tp.Count(tp.Member(0, "list")), 4},
		{"Items list", len(tp.Items(tp.Member(0, "list"))), 4},
		{"Count e", tp.Count(tp.Member(0, "e")), 0},
		{"Count of a string", tp.Count(tp.Member(0, "u")), 0},
		{"Str u", tp.Str(tp.Member(0, "u")), "日本\u2028"},
		{"Value l", len(tp.Value(tp.Member(0, "l")).([]any)), 0},
		{"Value of -1", tp.Value(-1), nil},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	items := tp.Items(tp.Member(0, "list"))
	if got := tp.Str(items[1]); got != "two" {
		t.Errorf("item 1: got %q, want two", got)
	}
	if got := tp.Str(tp.Member(items[3], "k")); got != "v" {
		t.Errorf("item 3 k: got %q, want v", got)
	}
}

// TestTapeEqual holds the tape's equality (value with value, value with a
// parsed value) to Equal.
func TestTapeEqual(t *testing.T) {
	values := []string{`1`, `1.0`, `1e0`, `2`, `"1"`, `"a\u003cb"`, `"a<b"`, `null`, `true`, `false`, `[]`, `{}`,
		`[1,"x"]`, `[1.0,"x"]`, `["x",1]`, `{"a":1,"b":[2]}`, `{"b":[2.0],"a":1}`, `{"a":1}`, `{"a":null}`, `{"b":null}`,
		`9007199254740993`, `9007199254740992`, `"é"`, `"\u00e9"`}
	for _, a := range values {
		for _, b := range values {
			xa, _ := Parse([]byte(a))
			xb, _ := Parse([]byte(b))
			want := Equal(xa, xb)
			pair := tapeOf([]any{xa, xb})
			if got := pair.equal(1, int(pair.vals[1].next)); got != want {
				t.Errorf("tape equal(%s, %s) = %v, want %v", a, b, got, want)
			}
			if got := tapeOf(xa).equalValue(0, xb); got != want {
				t.Errorf("tape equalValue(%s, %s) = %v, want %v", a, b, got, want)
			}
		}
	}
}

package driver

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/schemas"
)

// canonCases are documents for the canonical-form check: canon says
// whether a document is its own canonical form, which the check must
// accept as it is; the others must still canonicalize exactly as
// canonjson.TransformDepth does at snapshotMaxDepth, or fail as it does.
var canonCases = []struct {
	doc   string
	canon bool
}{
	{`{"root":["#document",{"url":"u"},["p",{},"hi"]],"truncated":{"depth":0,"snapshot":-1,"walk":false},"v":1}`, true},
	{`[]`, true},
	{`{}`, true},
	{`""`, true},
	{`null`, true},
	{`[true,false,null,0,-1,123456789012345]`, true},
	{`{"":1,"$value":"x","a":"\"\\\b\f\n\r\t\u0000\u001f\u000b","é":"☃","𝄞":"x","ｆ":2}`, true},
	{`"` + "\x7f\u2028" + `"`, true},
	// 16 digits, but below 2^53: ECMAScript writes it so.
	{`[1234567890123456]`, true},
	// Not canonical: Transform decides.
	{`{"ｆ":2,"𝄞":"x"}`, false}, // byte order, not UTF-16 order
	{`{"b":1,"a":2}`, false},
	{`{"a":1,"a":2}`, false}, // duplicate: Transform refuses it
	{`{"a\u0062":1}`, false},
	{`[1.0]`, false},
	{`[1e2]`, false},
	{`[-0]`, false},
	{`[01]`, false},
	{`["\u00e9"]`, false},
	{`["\/"]`, false},
	{`["\u000A"]`, false},
	{`["\u000a"]`, false},
	{`["\u001F"]`, false},
	{`["\ud800"]`, false},
	{`[ 1]`, false},
	{`{"a" :1}`, false},
	{`[1] `, false},
	{`[1],`, false},
	{`[1`, false},
	{`{"a":1`, false},
	{`{"a"}`, false},
	{`{1:2}`, false},
	{`[tru]`, false},
	{`["a` + "\n" + `"]`, false},
	{"[\"\xff\"]", false},
	{``, false},
	{`"abc`, false},
	{`["\`, false},
	{`["\u00`, false},
	{`-`, false},
	// Deeper than a general document may be (schemas.MaxDepth), as deep
	// as a snapshot of a deep page is.
	{strings.Repeat("[", schemas.MaxDepth+1) + strings.Repeat("]", schemas.MaxDepth+1), true},
	{strings.Repeat("[", snapshotMaxDepth-1) + strings.Repeat("]", snapshotMaxDepth-1), true},
	{strings.Repeat("[", snapshotMaxDepth) + strings.Repeat("]", snapshotMaxDepth), true},
	{strings.Repeat("[", snapshotMaxDepth+1) + strings.Repeat("]", snapshotMaxDepth+1), false}, // too deep: refused
}

func checkCanonical(t *testing.T, doc []byte) {
	t.Helper()
	want, wantErr := canonjson.TransformDepth(doc, snapshotMaxDepth)
	got, err := canonicalSnapshot(doc)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: error %v, Transform's %v", doc, err, wantErr)
	}
	if err == nil && !bytes.Equal(got, want) {
		t.Fatalf("%q: canonical form %q, Transform's %q", doc, got, want)
	}
	if canonjson.Check(doc, snapshotMaxDepth) == nil && (wantErr != nil || !bytes.Equal(doc, want)) {
		t.Fatalf("%q accepted as canonical; Transform gives %q, %v", doc, want, wantErr)
	}
}

func TestCanonicalSnapshot(t *testing.T) {
	for _, c := range canonCases {
		if got := canonjson.Check([]byte(c.doc), snapshotMaxDepth) == nil; got != c.canon {
			t.Errorf("canonjson.Check(%.60q) accepts: %v, want %v", c.doc, got, c.canon)
		}
		checkCanonical(t, []byte(c.doc))
	}
}

// Whatever the document, canonicalSnapshot answers what TransformDepth
// answers.
func FuzzCanonicalSnapshot(f *testing.F) {
	for _, c := range canonCases {
		f.Add([]byte(c.doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkCanonical(t, doc)
	})
}

func TestUnpack(t *testing.T) {
	deflate := func(b []byte) []byte {
		var buf bytes.Buffer
		w, _ := flate.NewWriter(&buf, flate.BestSpeed)
		_, _ = w.Write(b)
		_ = w.Close()
		return []byte(packPrefix + base64.StdEncoding.EncodeToString(buf.Bytes()))
	}
	page := []byte(samplePage)
	if got, err := unpack(page); err != nil || !bytes.Equal(got, page) {
		t.Errorf("plain JSON: %q, %v; want it unchanged", got, err)
	}
	if got, err := unpack(deflate(page)); err != nil || !bytes.Equal(got, page) {
		t.Errorf("packed page: %q, %v", got, err)
	}
	if _, err := parsePage(mustUnpack(t, deflate(page)), ObserveOptions{}.merged(ObserveOptions{}, nil)); err != nil {
		t.Errorf("unpacked page does not parse: %v", err)
	}
	if got, err := unpack(deflate(bytes.Repeat([]byte{' '}, MaxPagePayload))); err != nil || len(got) != MaxPagePayload {
		t.Errorf("packed answer of exactly MaxPagePayload bytes: %d bytes, %v", len(got), err)
	}
	for name, data := range map[string][]byte{
		"not base64":    []byte(packPrefix + "%%%"),
		"not deflate":   []byte(packPrefix + base64.StdEncoding.EncodeToString([]byte("plain text"))),
		"cut short":     deflate(page)[:len(deflate(page))-8],
		"past the cap":  deflate(bytes.Repeat([]byte{' '}, MaxPagePayload+1)),
		"prefix alone":  []byte(packPrefix),
		"base64 of xyz": []byte(packPrefix + "eHl6"),
	} {
		_, err := unpack(data)
		if !errors.Is(err, ErrInternal) {
			t.Errorf("%s: error %v, want internal", name, err)
		}
		// A failure leaves nothing behind for the next page.
		if got, err := unpack(deflate(page)); err != nil || !bytes.Equal(got, page) {
			t.Errorf("packed page after %s: %q, %v", name, got, err)
		}
	}
}

// BenchmarkUnpack inflates the sample page as observePacked sends it.
func BenchmarkUnpack(b *testing.B) {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed)
	_, _ = w.Write([]byte(strings.Repeat(samplePage, 20)))
	_ = w.Close()
	data := []byte(packPrefix + base64.StdEncoding.EncodeToString(buf.Bytes()))
	b.ReportAllocs()
	for range b.N {
		if _, err := unpack(data); err != nil {
			b.Fatal(err)
		}
	}
}

func mustUnpack(t *testing.T, data []byte) []byte {
	t.Helper()
	b, err := unpack(data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

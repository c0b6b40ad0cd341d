package suite

import (
	"bytes"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite the golden reports in testdata/")

// hostileIndex is fullIndex with names and reasons that try to break
// each report: XML markup and entities, control characters XML 1.0 does
// not allow, invalid UTF-8, Markdown's table and link syntax, HTML, and a
// line break that would end a Markdown row.
func hostileIndex() Index {
	idx := fullIndex()
	idx.Tasks[0].Name = "orders <b>&amp;</b> \"quoted\" 'single'\x00\x07\x1b[31m.json"
	idx.Tasks[1].Name = "denied | col ![img](http://evil.example/x.png) [link](javascript:alert(1))\nnew row | x |"
	idx.Tasks[1].Error = "denied: <script>alert(1)</script> ]]> <!-- --> \xff\xfe `code` *em* _u_ ~s~ www.evil.example user@evil.example"
	idx.Tasks[3].Name = "<img src=x onerror=alert(1)>.json\r\n\u2028"
	return idx
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./suite -run %s -update)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what is written now (go test ./suite -run %s -update rewrites it):\ngot:\n%s\nwant:\n%s", p, t.Name(), got, want)
	}
}

// TestJUnit: the JUnit report of a suite with every kind of line and
// hostile names is the golden one, well-formed XML 1.0, and says per task
// what CI readers show: a failure with the reason, status and bundle in
// its text, a skipped element, nothing for a completed task.
func TestJUnit(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJUnit(&b, hostileIndex()); err != nil {
		t.Fatal(err)
	}
	golden(t, "junit.xml", b.Bytes())
	if !utf8.Valid(b.Bytes()) {
		t.Error("not valid UTF-8")
	}
	for _, r := range b.String() {
		if r < 0x20 && r != '\n' && r != '\t' && r != '\r' {
			t.Errorf("control character %U in the XML", r)
		}
	}
	var doc JUnitReport
	d := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	d.Strict = true
	if err := d.Decode(&doc); err != nil {
		t.Fatalf("not well-formed: %v", err)
	}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if cd, ok := tok.(xml.CharData); err != nil || !ok || strings.TrimSpace(string(cd)) != "" {
			t.Fatalf("after the root: got %v, %v; want white space, then EOF", tok, err)
		}
	}
	if got, want := [3]int{doc.Tests, doc.Failures, doc.Skipped}, [3]int{5, 2, 1}; got != want {
		t.Errorf("tests, failures, skipped: got %v, want %v", got, want)
	}
	if len(doc.Suite.Cases) != 5 {
		t.Fatalf("got %d test cases, want 5", len(doc.Suite.Cases))
	}
	if p := doc.Suite.Properties; len(p) != 2 || p[0].Name != "stoppedBy" || p[0].Value != "max-duration" || p[1].Value != StopDuration.Says() {
		t.Errorf("testsuite properties %+v, want stoppedBy max-duration and its reason", p)
	}
	cases := doc.Suite.Cases
	type line struct{ name, classname, time, failure, skipped string }
	var got []line
	for _, c := range cases {
		l := line{name: c.Name, classname: c.Classname, time: c.Time}
		if c.Failure != nil {
			l.failure = c.Failure.Type + ": " + c.Failure.Message
			if !strings.Contains(c.Failure.Text, "status: "+c.Failure.Type) || !strings.Contains(c.Failure.Text, "bundle: ") {
				t.Errorf("%q: the failure's text lacks the status or the bundle:\n%s", c.Name, c.Failure.Text)
			}
		}
		if c.Skipped != nil {
			l.skipped = c.Skipped.Message
		}
		got = append(got, l)
	}
	want := []line{
		{name: "orders <b>&amp;</b> \"quoted\" 'single'\uFFFD\uFFFD\uFFFD[31m.json", classname: "aegis", time: "1.200"},
		{name: "denied | col ![img](http://evil.example/x.png) [link](javascript:alert(1))\nnew row | x |", classname: "aegis", time: "0.800",
			failure: "failed: denied: <script>alert(1)</script> ]]> <!-- --> \uFFFD\uFFFD `code` *em* _u_ ~s~ www.evil.example user@evil.example"},
		{name: "retried.json", classname: "aegis", time: "1.200"},
		{name: "<img src=x onerror=alert(1)>.json\r\n\u2028", classname: "aegis", time: "0.000", failure: "error: no browser"},
		{name: "later.json", classname: "aegis", time: "0.000", skipped: "suite budget ran out"},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("case %d:\ngot  %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if !strings.Contains(cases[1].Failure.Text, "bundle: denied/s2") || !strings.Contains(cases[3].Failure.Text, "bundle: none") {
		t.Errorf("bundles in the failures' text:\n%s\n%s", cases[1].Failure.Text, cases[3].Failure.Text)
	}
}

// TestMarkdown: the summary of a suite with hostile names is the golden
// one: one table row per task (no name adds a row or a cell), no HTML tag
// and no link survives.
func TestMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMarkdown(&b, hostileIndex()); err != nil {
		t.Fatal(err)
	}
	golden(t, "summary.md", b.Bytes())
	if want := "**Stopped:** the suite's --max-duration budget ran out.\n"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
	var rows []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "| ") {
			rows = append(rows, l)
		}
	}
	if got, want := len(rows), 1+5; got != want {
		t.Fatalf("got %d table rows, want %d:\n%s", got, want, b.String())
	}
	for _, r := range rows {
		if got, want := cells(r), 7; got != want {
			t.Errorf("row with %d cells, want %d: %s", got, want, r)
		}
	}
	for _, bad := range []string{"<", "](", "\x00", "\x1b", "\r", "`", "www.", "://"} {
		if unescaped(b.String(), bad) {
			t.Errorf("summary holds %q unescaped", bad)
		}
	}
}

// unescaped reports whether sub occurs in s other than right after a
// backslash.
func unescaped(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub && (i == 0 || s[i-1] != '\\') {
			return true
		}
	}
	return false
}

// cells counts the cells of a Markdown table row: its unescaped pipes,
// less one.
func cells(row string) int {
	n := 0
	for i := 0; i < len(row); i++ {
		switch row[i] {
		case '\\':
			i++
		case '|':
			n++
		}
	}
	return n - 1
}

// TestMdText: each special character is made plain.
func TestMdText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain name", "plain name"},
		{"a|b", `a\|b`},
		{"a\nb\r\tc", "a b  c"},
		{"<b>x</b> & \"q\"", "&lt;b&gt;x&lt;/b&gt; &amp; &quot;q&quot;"},
		{"[l](u) ![i](u)", `\[l\](u) \!\[i\](u)`},
		{"`c` *e* _u_ ~s~", "\\`c\\` \\*e\\* \\_u\\_ \\~s\\~"},
		{`back\slash`, `back\\slash`},
		{"www.x.example http://x u@x", `www\.x\.example http\://x u\@x`},
		{"\xff", "\uFFFD"},
		{strings.Repeat("é", 300), strings.Repeat("é", maxCellBytes/2) + "…"},
	}
	for _, tt := range tests {
		if got := mdText(tt.in); got != tt.want {
			t.Errorf("mdText(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestWriteReports: the JUnit file is replaced, the summary appended to.
func TestWriteReports(t *testing.T) {
	dir := t.TempDir()
	junit, md := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "summary.md")
	os.WriteFile(junit, []byte("old"), 0o644)
	os.WriteFile(md, []byte("earlier step\n"), 0o644)
	idx := testIndex(exampleLine("a.json", "a/b"))
	for range 2 {
		if err := WriteReports(idx, junit, md); err != nil {
			t.Fatal(err)
		}
	}
	var want bytes.Buffer
	WriteJUnit(&want, idx)
	if got, _ := os.ReadFile(junit); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("junit: got %q", got)
	}
	var one bytes.Buffer
	WriteMarkdown(&one, idx)
	if got, want := readString(t, md), "earlier step\n"+one.String()+one.String(); got != want {
		t.Errorf("summary: got %q, want %q", got, want)
	}
	// Either report may fail alone; the other is still written.
	err := WriteReports(idx, filepath.Join(dir, "nope", "junit.xml"), md)
	if err == nil || !strings.Contains(err.Error(), "--junit") {
		t.Errorf("junit into a missing directory: got %v", err)
	}
	if got := strings.Count(readString(t, md), "### aegis suite"); got != 3 {
		t.Errorf("summaries: got %d, want 3", got)
	}
	if err := WriteReports(idx, "", ""); err != nil {
		t.Errorf("no reports: got %v", err)
	}
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

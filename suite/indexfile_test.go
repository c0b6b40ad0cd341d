package suite

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/schemas"
)

// fullIndex has a line of every kind.
func fullIndex() Index {
	retried := exampleLine("retried.json", "retried/2")
	retried.Endpoint, retried.Tokens = "ws://127.0.0.1:3001/", 1234
	retried.Retries = []Retry{{Endpoint: "ws://127.0.0.1:3000/", Error: "browser closed", Bundle: "retried/1"}}
	idx := testIndex(
		exampleLine("orders.json", "orders/s1"),
		TaskResult{Name: "denied.json", Status: contract.SessionFailed, DurationMs: 800, Actions: 1, Denials: 1, Bundle: "denied/s2", HeadHash: strings.Repeat("b", 64), Error: "denied: navigate http://evil.example/"},
		retried,
		TaskResult{Name: "no-browser.json", Error: "no browser"},
		TaskResult{Name: "later.json", Skipped: true, Error: "suite budget ran out"},
	)
	idx.StoppedBy = StopDuration
	return idx
}

// TestIndexRoundTrip: what WriteIndex writes, ReadIndex reads back the
// same, and the write leaves no temporary file behind.
func TestIndexRoundTrip(t *testing.T) {
	dir := t.TempDir()
	want := fullIndex()
	if err := WriteIndex(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadIndex(filepath.Join(dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	// A second write replaces the first.
	want.Parallel = 4
	if err := WriteIndex(dir, want); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadIndex(filepath.Join(dir, IndexFile)); got.Parallel != 4 {
		t.Errorf("parallel after the rewrite: got %d, want 4", got.Parallel)
	}
	entries, _ := os.ReadDir(dir)
	if got, want := len(entries), 1; got != want {
		t.Errorf("got %d files in the directory, want %d (suite.json)", got, want)
	}
}

// TestWriteIndexRefuses: an index that breaks the schema or lists a
// bundle twice is not written.
func TestWriteIndexRefuses(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Index)
		want   string
	}{
		{"no tasks", func(i *Index) { i.Tasks = nil }, "/tasks"},
		{"bundle climbing out", func(i *Index) { i.Tasks[0].Bundle = "../x" }, "/tasks/0/bundle"},
		{"running status", func(i *Index) { i.Tasks[0].Status = contract.SessionRunning }, "/tasks/0/status"},
		{"bundle twice", func(i *Index) { i.Tasks[1].Bundle = i.Tasks[0].Bundle }, `task 2 ("denied.json"): bundle "orders/s1" is also task 1 ("orders.json")'s`},
		{"attempt's bundle is the task's", func(i *Index) { i.Tasks[2].Retries[0].Bundle = "retried/2" }, `attempt 1: bundle "retried/2" is also task 3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			idx := fullIndex()
			tt.change(&idx)
			err := WriteIndex(dir, idx)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error with %q", err, tt.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("left %d files behind", len(entries))
			}
		})
	}
}

// TestReadIndexErrors: every bad input gives its own clear error, the
// content's wrapping ErrInvalidIndex.
func TestReadIndexErrors(t *testing.T) {
	good := `{"formatVersion":"aegis-suite/1","startedAt":"2026-11-26T21:00:00Z","endedAt":"2026-11-26T21:00:01Z","durationMs":1000,"parallel":1,"tasks":[` +
		`{"name":"a.json","taskHash":"` + strings.Repeat("d", 64) + `","status":"completed","durationMs":5,"actions":1,"denials":0,"approvals":0,"bundle":"a/s","headHash":"` + strings.Repeat("a", 64) + `"}]}`
	if _, err := ParseIndex([]byte(good)); err != nil {
		t.Fatalf("the good index: %v", err)
	}
	var syntax *schemas.SyntaxError
	var invalid *schemas.ValidationError
	tests := []struct {
		name string
		doc  string
		as   any // *schemas.SyntaxError or *schemas.ValidationError, or nil
		want string
	}{
		{"empty", ``, &syntax, "invalid suite index"},
		{"not JSON", `suite`, &syntax, "invalid suite index"},
		{"trailing data", good + `{}`, &syntax, "invalid suite index"},
		{"duplicate member", strings.Replace(good, `"parallel":1`, `"parallel":1,"parallel":2`, 1), &syntax, "duplicate"},
		{"unknown member", strings.Replace(good, `"parallel":1`, `"parallel":1,"signed":true`, 1), &invalid, "additionalProperties"},
		{"older format", strings.Replace(good, `aegis-suite/1`, `aegis-suite/0`, 1), &invalid, "/formatVersion"},
		{"absolute bundle", strings.Replace(good, `"a/s"`, `"/etc"`, 1), &invalid, "/tasks/0/bundle"},
		{"bundle climbing out", strings.Replace(good, `"a/s"`, `"a/../../s"`, 1), &invalid, "/tasks/0/bundle"},
		{"wrong type", strings.Replace(good, `"actions":1`, `"actions":"1"`, 1), &invalid, "/tasks/0/actions"},
		{"fraction", strings.Replace(good, `"actions":1`, `"actions":1.5`, 1), &invalid, "/tasks/0/actions"},
		{"head hash without bundle", strings.Replace(good, `,"bundle":"a/s"`, ``, 1), &invalid, "/tasks/0"},
		{"skipped with a status", strings.Replace(good, `"status":"completed"`, `"status":"completed","skipped":true`, 1), &invalid, "/tasks/0"},
		{"bundle twice", strings.Replace(good, `}]}`, `},{"name":"b.json","taskHash":"`+strings.Repeat("e", 64)+`","durationMs":1,"actions":0,"denials":0,"approvals":0,"bundle":"a/s","error":"x"}]}`, 1), nil, `task 2 ("b.json"): bundle "a/s" is also task 1 ("a.json")'s`},
		{"too large", good + strings.Repeat(" ", schemas.MaxDocumentBytes), nil, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseIndex([]byte(tt.doc))
			if !errors.Is(err, ErrInvalidIndex) {
				t.Fatalf("got %v, want ErrInvalidIndex", err)
			}
			if tt.as != nil && !errors.As(err, tt.as) {
				t.Errorf("got %v (%T), want %T", err, err, tt.as)
			}
			if got := err.Error(); !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q in it", got, tt.want)
			}
		})
	}
	// A file names itself in the error; a missing one is the os error.
	dir := t.TempDir()
	p := filepath.Join(dir, IndexFile)
	os.WriteFile(p, []byte(`{}`), 0o644)
	if _, err := ReadIndex(p); err == nil || !strings.Contains(err.Error(), p) || !errors.Is(err, ErrInvalidIndex) {
		t.Errorf("invalid file: got %v", err)
	}
	if _, err := ReadIndex(filepath.Join(dir, "nope.json")); !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrInvalidIndex) {
		t.Errorf("missing file: got %v, want os.ErrNotExist", err)
	}
}

// TestLocalBundle: the Go rule for a bundle's path agrees with the
// schema's pattern on the paths that matter.
func TestLocalBundle(t *testing.T) {
	tests := []struct {
		rel  string
		want bool
	}{
		{"a", true}, {"a/b", true}, {".a/..b/b..", true}, {"a b/ü", true},
		{"", false}, {"/a", false}, {"..", false}, {".", false}, {"a/..", false}, {"a/../b", false},
		{"a//b", false}, {"a/", false}, {"./a", false}, {`a\b`, false}, {"a\x00b", false},
	}
	for _, tt := range tests {
		got := localBundle(tt.rel)
		if got != tt.want {
			t.Errorf("localBundle(%q): got %v, want %v", tt.rel, got, tt.want)
		}
		if tt.rel == "" {
			continue // no bundle is not a bundle path
		}
		idx := testIndex(exampleLine("a.json", tt.rel))
		_, err := contract.Encode(schemas.KindSuiteIndex, idx)
		if gotSchema := err == nil; gotSchema != tt.want {
			t.Errorf("schema on %q: valid %v, want %v (%v)", tt.rel, gotSchema, tt.want, err)
		}
	}
}

// TestTotals sums tasks by how they ended.
func TestTotals(t *testing.T) {
	got := fullIndex().Totals()
	want := Totals{Tasks: 5, Completed: 2, Failed: 2, Skipped: 1, Actions: 7, Denials: 3, Approvals: 2, Tokens: 1234, Retried: 1}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if fullIndex().AllCompleted() {
		t.Error("AllCompleted: got true, want false")
	}
	if !testIndex(exampleLine("a", "a")).AllCompleted() {
		t.Error("AllCompleted of one completed task: got false, want true")
	}
}

// TestCheckFreshDir: a directory that does not exist or holds no suite
// and no bundle may be a suite's; one holding either is refused, and so
// is a symbolic link to one (checked where it leads).
func TestCheckFreshDir(t *testing.T) {
	base := t.TempDir()
	mk := func(name string, files ...string) string {
		dir := filepath.Join(base, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			p := filepath.Join(dir, filepath.FromSlash(f))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	link := func(name, to string) string {
		p := filepath.Join(base, name)
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := mk("empty")
	suite := mk("suite", IndexFile)
	bundles := mk("bundles", "run/s-1/"+evidence.FileManifest)
	tests := []struct {
		name  string
		dir   string
		inUse bool
	}{
		{"missing", filepath.Join(base, "missing"), false},
		{"empty", empty, false},
		{"a suite", suite, true},
		{"a bundle", bundles, true},
		{"a link to an empty directory", link("to-empty", empty), false},
		{"a link to a suite", link("to-suite", suite), true},
		{"a link to bundles", link("to-bundles", bundles), true},
		{"a dangling link", link("dangling", filepath.Join(base, "nowhere")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckFreshDir(tt.dir)
			if got := errors.Is(err, ErrDirInUse); got != tt.inUse || (err != nil && !got) {
				t.Errorf("CheckFreshDir(%s) = %v, want in use %v", tt.name, err, tt.inUse)
			}
			if err != nil && !strings.HasPrefix(err.Error(), tt.dir+" ") {
				t.Errorf("error %q does not name the directory as given", err)
			}
		})
	}
}

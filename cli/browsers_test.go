package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/driver"
)

// withoutSharedBrowsers runs f as a process of its own would run it: each
// command with browsers of its own (the tests' shared ones set aside).
func withoutSharedBrowsers(t *testing.T, f func()) {
	t.Helper()
	saved := sharedBrowsers
	sharedBrowsers = nil
	defer func() { sharedBrowsers = saved }()
	f()
}

// TestOneBrowserPerCommand counts the browsers the commands launch: the
// demo (one session, then the verification, which needs none) launches
// one; a replay of two bundles launches one, in which both replays run,
// each in a context of its own (both run all their steps).
func TestOneBrowserPerCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs aegis demo in Chromium")
	}
	root := t.TempDir()
	withoutSharedBrowsers(t, func() {
		before := driver.Launches()
		if code, out, errs := runCLI(t, "demo", "--evidence", root); code != ExitOK {
			t.Fatalf("aegis demo: exit %d\n%s\n%s", code, out, errs)
		}
		if got := driver.Launches() - before; got != 1 {
			t.Errorf("aegis demo launched %d browsers, want 1", got)
		}
		m, _ := filepath.Glob(filepath.Join(root, "*", "manifest.json"))
		if len(m) != 1 {
			t.Fatalf("%d bundles, want 1", len(m))
		}
		bundle := filepath.Dir(m[0])
		dup := filepath.Join(t.TempDir(), "copy")
		if err := os.CopyFS(dup, os.DirFS(bundle)); err != nil {
			t.Fatal(err)
		}
		recorded := recordedOrigin(t, bundle)

		before = driver.Launches()
		code, out, errs := runCLI(t, "replay", bundle, dup, "--json", "--map-origin", recorded+"="+shop(t), "--approve", "deny", "--evidence", t.TempDir())
		if got := driver.Launches() - before; got != 1 {
			t.Errorf("aegis replay of two bundles launched %d browsers, want 1", got)
		}
		dec := json.NewDecoder(strings.NewReader(out))
		var reports []string
		for dec.More() {
			var got struct {
				Bundle       string `json:"bundle"`
				ReplayBundle string `json:"replayBundle"`
				Steps        []json.RawMessage
				Blocked      int `json:"blocked"`
			}
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("replay --json output: %v\n%s", err, out)
			}
			if len(got.Steps) != 12 || got.Blocked != 2 {
				t.Errorf("replay of %s: %d steps, %d blocked; want 12 and 2 (the two approvals refused)", got.Bundle, len(got.Steps), got.Blocked)
			}
			reports = append(reports, got.Bundle)
		}
		if want := []string{bundle, dup}; strings.Join(reports, " ") != strings.Join(want, " ") || code != ExitFailure {
			t.Errorf("replay of two bundles: exit %d, reports of %q, want exit %d and reports of %q\n%s", code, reports, ExitFailure, want, errs)
		}
	})
}

// recordedOrigin returns the origin of the first URL of the bundle's task.
func recordedOrigin(t *testing.T, bundle string) string {
	t.Helper()
	var man struct {
		Task struct {
			URLs []string `json:"urls"`
		} `json:"task"`
	}
	b, err := os.ReadFile(filepath.Join(bundle, "manifest.json"))
	if err == nil {
		err = json.Unmarshal(b, &man)
	}
	if err != nil || len(man.Task.URLs) == 0 {
		t.Fatalf("manifest: %v", err)
	}
	u := man.Task.URLs[0]
	if i := strings.Index(u[len("http://"):], "/"); i >= 0 {
		u = u[:len("http://")+i]
	}
	return u
}

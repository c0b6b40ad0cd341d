package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/setup"
)

// setupMachine is a fake machine for aegis setup: a PATH dir, a cache dir,
// an environment and the browser candidates, all under a temp dir.
type setupMachine struct {
	root, bin, cache string
	env              map[string]string
	candidates       []string
}

func newSetupMachine(t *testing.T) *setupMachine {
	t.Helper()
	root := t.TempDir()
	m := &setupMachine{root: root, bin: filepath.Join(root, "bin"), cache: filepath.Join(root, "cache"),
		env: map[string]string{}, candidates: []string{}}
	if err := os.MkdirAll(m.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "os-release"), []byte("ID=debian\n"), 0o644)
	old := setupOptions
	setupOptions = func() setup.Options {
		return setup.Options{
			Getenv: func(k string) string { return m.env[k] },
			LookPath: func(name string) (string, error) {
				p := filepath.Join(m.bin, name)
				if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
					return p, nil
				}
				return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
			},
			CacheDir:          m.cache,
			Geteuid:           func() int { return 1000 },
			OSRelease:         filepath.Join(root, "os-release"),
			BrowserCandidates: m.candidates,
			AptLockHolder:     func() (int, string, bool) { return 0, "", false },
		}
	}
	t.Cleanup(func() { setupOptions = old })
	return m
}

func (m *setupMachine) script(t *testing.T, p, body string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// browser installs a fake Chromium as the first candidate.
func (m *setupMachine) browser(t *testing.T) string {
	p := m.script(t, filepath.Join(m.root, "usr/lib/chromium/chromium"), `echo "Chromium 156.0.8078.73 "`)
	m.candidates = append(m.candidates, p)
	return p
}

// npm installs a fake node (runs cli.js with sh) and a fake npm that lays out
// a playwright-core whose cli.js prints version.
func (m *setupMachine) npm(t *testing.T, version string) {
	m.script(t, filepath.Join(m.bin, "node"), `exec /bin/sh "$@"`)
	m.script(t, filepath.Join(m.bin, "npm"), fmt.Sprintf(`
while [ $# -gt 0 ]; do case "$1" in --prefix) prefix="$2"; shift;; esac; shift; done
pkg="$prefix/node_modules/playwright-core"
mkdir -p "$pkg"
echo "echo 'Version %s'" > "$pkg/cli.js"
echo "added 1 package"`, version))
}

func treeSnapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			snap[p] = fmt.Sprintf("%s %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		}
		return nil
	})
	return snap
}

func TestSetupCommand(t *testing.T) {
	type want struct {
		code   int
		out    string   // exact stdout, ROOT and CACHE replaced
		errHas []string // substrings of stderr
		outHas []string // substrings of stdout, instead of out
	}
	tests := []struct {
		name    string
		machine func(t *testing.T, m *setupMachine)
		args    []string
		want    want
		changes bool // the command may change files
	}{
		{
			name:    "--check with nothing: exit 1, hints, nothing built",
			machine: func(t *testing.T, m *setupMachine) { m.npm(t, setup.DriverVersion) },
			args:    []string{"setup", "--check"},
			want: want{code: ExitFailure, out: "", errHas: []string{
				"browser: MISSING: no Chrome or Chromium executable found",
				"hint: run: sudo apt-get install chromium, or set AEGIS_CHROMIUM=/path/to/chrome",
				"playwright driver: MISSING: no Playwright driver 1.52.0 at CACHE/aegis/playwright-driver-1.52.0",
				"hint: run: aegis setup (it builds it from npm playwright-core@1.52.0)",
			}},
		},
		{
			name:    "--check with the browser only: exit 1",
			machine: func(t *testing.T, m *setupMachine) { m.browser(t); m.npm(t, setup.DriverVersion) },
			args:    []string{"setup", "--check"},
			want: want{code: ExitFailure, out: "browser: Chromium 156.0.8078.73 at ROOT/usr/lib/chromium/chromium (found)\n",
				errHas: []string{"playwright driver: MISSING"}},
		},
		{
			name:    "setup builds the driver",
			machine: func(t *testing.T, m *setupMachine) { m.browser(t); m.npm(t, setup.DriverVersion) },
			args:    []string{"setup"},
			changes: true,
			want: want{code: ExitOK, out: "browser: Chromium 156.0.8078.73 at ROOT/usr/lib/chromium/chromium (found)\n" +
				"playwright driver: 1.52.0 at CACHE/aegis/playwright-driver-1.52.0 (built from npm playwright-core@1.52.0)\n",
				errHas: []string{"setup: building the Playwright driver: npm install playwright-core@1.52.0", "added 1 package"}},
		},
		{
			name:    "setup without a browser, not root: exit 1 with the hint, driver still built",
			machine: func(t *testing.T, m *setupMachine) { m.npm(t, setup.DriverVersion) },
			args:    []string{"setup"},
			changes: true,
			want: want{code: ExitFailure, out: "playwright driver: 1.52.0 at CACHE/aegis/playwright-driver-1.52.0 (built from npm playwright-core@1.52.0)\n",
				errHas: []string{"browser: MISSING", "hint: run: sudo apt-get install chromium"}},
		},
		{
			name: "AEGIS_CHROMIUM not executable: exit 1, no fallback",
			machine: func(t *testing.T, m *setupMachine) {
				m.browser(t)
				p := filepath.Join(m.root, "chrome")
				os.WriteFile(p, []byte("x"), 0o644)
				m.env[setup.EnvBrowser] = p
			},
			args: []string{"setup", "--check"},
			want: want{code: ExitFailure, errHas: []string{
				"browser: INVALID: AEGIS_CHROMIUM=ROOT/chrome: is not executable (mode -rw-r--r--)",
				"hint: set AEGIS_CHROMIUM to a Chrome or Chromium executable, or unset it"}},
		},
		{
			name: "AEGIS_PLAYWRIGHT_DRIVER of the wrong version",
			machine: func(t *testing.T, m *setupMachine) {
				m.browser(t)
				m.npm(t, setup.DriverVersion)
				d := filepath.Join(m.root, "drv")
				m.script(t, filepath.Join(d, "node"), `exec /bin/sh "$@"`)
				os.MkdirAll(filepath.Join(d, "package"), 0o755)
				os.WriteFile(filepath.Join(d, "package", "cli.js"), []byte("echo 'Version 1.53.0'\n"), 0o644)
				m.env[setup.EnvDriver] = d
			},
			args:    []string{"setup"},
			changes: true, // the browser's version stamp
			want: want{code: ExitFailure, out: "browser: Chromium 156.0.8078.73 at ROOT/usr/lib/chromium/chromium (found)\n",
				errHas: []string{"playwright driver: INVALID: AEGIS_PLAYWRIGHT_DRIVER=ROOT/drv: package/cli.js --version reports 1.53.0, want exactly 1.52.0"}},
		},
		{
			name: "help lists the flags and environment variables",
			args: []string{"setup", "-h"},
			want: want{code: ExitOK, outHas: []string{"Usage: aegis setup [--check] [--json]", "AEGIS_CHROMIUM=PATH", "AEGIS_PLAYWRIGHT_DRIVER=DIR", "-check", "-json", "Exit status"}},
		},
		{
			name: "an argument is a usage error",
			args: []string{"setup", "now"},
			want: want{code: ExitUsage, errHas: []string{`setup takes no arguments, got ["now"]`}},
		},
		{
			name: "an unknown flag is a usage error",
			args: []string{"setup", "--force"},
			want: want{code: ExitUsage, errHas: []string{"flag provided but not defined: -force"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newSetupMachine(t)
			if tt.machine != nil {
				tt.machine(t, m)
			}
			before := treeSnapshot(t, m.root)
			code, out, errOut := run(t, "", tt.args...)
			fix := strings.NewReplacer("ROOT", m.root, "CACHE", m.cache)
			got := want{code: code, out: out}
			if tt.want.outHas != nil {
				got.out = ""
				for _, s := range tt.want.outHas {
					if strings.Contains(out, fix.Replace(s)) {
						got.outHas = append(got.outHas, s)
					} else {
						got.outHas = append(got.outHas, "NOT IN STDOUT: "+s)
					}
				}
			}
			for _, s := range tt.want.errHas {
				if strings.Contains(errOut, fix.Replace(s)) {
					got.errHas = append(got.errHas, s)
				} else {
					got.errHas = append(got.errHas, "NOT IN STDERR: "+s)
				}
			}
			w := tt.want
			w.out = fix.Replace(w.out)
			if !reflect.DeepEqual(got, w) {
				t.Errorf("aegis %s:\n got %+v\nwant %+v\nstderr:\n%s", strings.Join(tt.args, " "), got, w, errOut)
			}
			if after := treeSnapshot(t, m.root); !tt.changes && !reflect.DeepEqual(before, after) {
				t.Errorf("aegis %s changed files", strings.Join(tt.args, " "))
			}
		})
	}
}

// TestSetupCommandIdempotent: the second "aegis setup" reports the cached
// driver, changes no file and is fast; --check then agrees.
func TestSetupCommandIdempotent(t *testing.T) {
	m := newSetupMachine(t)
	m.browser(t)
	m.npm(t, setup.DriverVersion)
	if code, _, errOut := run(t, "", "setup"); code != ExitOK {
		t.Fatalf("first setup exit %d: %s", code, errOut)
	}
	before := treeSnapshot(t, m.root)
	start := time.Now()
	code, out, errOut := run(t, "", "setup")
	elapsed := time.Since(start)
	wantOut := "browser: Chromium 156.0.8078.73 at " + m.root + "/usr/lib/chromium/chromium (found)\n" +
		"playwright driver: 1.52.0 at " + m.cache + "/aegis/playwright-driver-1.52.0 (cached)\n"
	if code != ExitOK || out != wantOut || errOut != "" {
		t.Errorf("second setup = %d\n%s\nstderr %q; want 0\n%s", code, out, errOut, wantOut)
	}
	if after := treeSnapshot(t, m.root); !reflect.DeepEqual(before, after) {
		t.Errorf("second setup changed files")
	}
	if elapsed > time.Second {
		t.Errorf("second setup took %s, want < 1s", elapsed)
	}
	if code, out, _ := run(t, "", "setup", "--check"); code != ExitOK || out != wantOut {
		t.Errorf("setup --check = %d\n%s; want 0\n%s", code, out, wantOut)
	}
}

func TestSetupCommandJSON(t *testing.T) {
	m := newSetupMachine(t)
	b := m.browser(t)
	code, out, _ := run(t, "", "setup", "--check", "--json")
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out)
	}
	want := map[string]any{
		"ok":         false,
		"check_only": true,
		"browser":    map[string]any{"path": b, "product": "Chromium", "version": "156.0.8078.73", "source": "found"},
		"driver":     nil,
		"problems": []any{map[string]any{
			"component": "playwright driver",
			"kind":      "missing",
			"error":     "no Playwright driver 1.52.0 at " + m.cache + "/aegis/playwright-driver-1.52.0",
			"hint":      "run: aegis setup (it builds it from npm playwright-core@1.52.0), or set AEGIS_PLAYWRIGHT_DRIVER=/path/to/driver",
		}},
	}
	if code != ExitFailure || !reflect.DeepEqual(got, want) {
		t.Errorf("setup --check --json = %d\n%#v\nwant %d\n%#v", code, got, ExitFailure, want)
	}
}

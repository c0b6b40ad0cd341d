package setup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// ---- fakes -----------------------------------------------------------------

// testEnv is a fake machine in a temp dir: a PATH directory (bin), a cache
// directory, an environment, a root flag and an os-release file.
type testEnv struct {
	t          *testing.T
	root       string
	bin        string
	cache      string
	env        map[string]string
	euid       int
	osRelease  string
	goos       string
	candidates []string
	runner     *recRunner
	progress   *syncBuffer
	lockHolder func() (int, string, bool)
	lockWait   time.Duration
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	root := t.TempDir()
	e := &testEnv{
		t:          t,
		root:       root,
		bin:        filepath.Join(root, "bin"),
		cache:      filepath.Join(root, "cache"),
		env:        map[string]string{},
		euid:       1000,
		osRelease:  filepath.Join(root, "os-release"),
		goos:       "linux",
		candidates: []string{},
		runner:     &recRunner{inner: ExecRunner{}},
		progress:   &syncBuffer{},
		lockWait:   2 * time.Second,
		lockHolder: func() (int, string, bool) { return 0, "", false },
	}
	mustMkdir(t, e.bin)
	return e
}

func (e *testEnv) opts() Options {
	return Options{
		Getenv:            func(k string) string { return e.env[k] },
		LookPath:          e.lookPath,
		CacheDir:          e.cache,
		Runner:            e.runner,
		Geteuid:           func() int { return e.euid },
		OSRelease:         e.osRelease,
		BrowserCandidates: e.candidates,
		AptLockHolder:     e.lockHolder,
		AptLockTimeout:    e.lockWait,
		goos:              e.goos,
		pollInterval:      5 * time.Millisecond,
	}
}

func (e *testEnv) lookPath(name string) (string, error) {
	p := filepath.Join(e.bin, name)
	if checkExecutable(p, "linux") == nil {
		return p, nil
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// debian writes an os-release of a Debian machine; root makes us root with apt-get.
func (e *testEnv) debian(id string) {
	writeFile(e.t, e.osRelease, fmt.Sprintf("PRETTY_NAME=\"test\"\nID=%s\nID_LIKE=debian\n", id), 0o644)
}

func (e *testEnv) rootWithApt() {
	e.euid = 0
	e.debian("debian")
	writeScript(e.t, filepath.Join(e.bin, "apt-get"), "echo real apt-get must not run >&2; exit 3")
}

// recRunner records every command and lets a test intercept some.
type recRunner struct {
	mu        sync.Mutex
	cmds      []Cmd
	inner     Runner
	intercept func(ctx context.Context, c Cmd) (handled bool, out []byte, err error)
}

func (r *recRunner) Run(ctx context.Context, c Cmd) ([]byte, error) {
	r.mu.Lock()
	r.cmds = append(r.cmds, c)
	icpt := r.intercept
	r.mu.Unlock()
	if icpt != nil {
		if handled, out, err := icpt(ctx, c); handled {
			return out, err
		}
	}
	return r.inner.Run(ctx, c)
}

func (r *recRunner) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []string
	for _, c := range r.cmds {
		s = append(s, filepath.Base(c.Path)+" "+strings.Join(c.Args, " "))
	}
	return s
}

func (r *recRunner) reset() {
	r.mu.Lock()
	r.cmds = nil
	r.mu.Unlock()
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	mustMkdir(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func writeScript(t *testing.T, p, body string) string {
	t.Helper()
	writeFile(t, p, "#!/bin/sh\n"+body+"\n", 0o755)
	return p
}

// fakeBrowser writes a script that answers --version like Chromium does.
func fakeBrowser(t *testing.T, p, versionLine string) string {
	return writeScript(t, p, fmt.Sprintf(`[ "$1" = --version ] && echo %q && exit 0; exit 9`, versionLine))
}

// fakeNodeScript is a "node" that runs its first argument with sh, so a
// cli.js written as a shell script answers --version without a real node.
const fakeNodeScript = `exec /bin/sh "$@"`

func cliJS(version string) string { return fmt.Sprintf("echo 'Version %s'\n", version) }

// fakeDriver lays out a driver directory with a shell cli.js and fake node.
func fakeDriver(t *testing.T, dir, version string) string {
	writeFile(t, filepath.Join(dir, "package", "cli.js"), cliJS(version), 0o644)
	writeFile(t, filepath.Join(dir, "package", "package.json"), fmt.Sprintf(`{"name":"playwright-core","version":%q}`, version), 0o644)
	writeScript(t, filepath.Join(dir, "node"), fakeNodeScript)
	return dir
}

// fakeNPM installs an npm (and a fake node unless one is there) in the bin
// dir that lays out node_modules/playwright-core with cli as cli.js, then
// runs tail (e.g. "exit 1" or "exec sleep 30").
func (e *testEnv) fakeNPM(cli, version, tail string) {
	e.t.Helper()
	if _, err := os.Stat(filepath.Join(e.bin, "node")); err != nil {
		writeScript(e.t, filepath.Join(e.bin, "node"), fakeNodeScript)
	}
	cliFile := filepath.Join(e.root, "npm-cli.js")
	writeFile(e.t, cliFile, cli, 0o644)
	writeScript(e.t, filepath.Join(e.bin, "npm"), fmt.Sprintf(`
echo "$@" >> %q
prefix=""
while [ $# -gt 0 ]; do
  case "$1" in --prefix) prefix="$2"; shift;; esac
  shift
done
[ -n "$prefix" ] || { echo "fake npm: no --prefix" >&2; exit 2; }
pkg="$prefix/node_modules/playwright-core"
mkdir -p "$pkg/lib"
echo '{"name":"playwright-core","version":"%s"}' > "$pkg/package.json"
cp %q "$pkg/cli.js"
echo "added 1 package in 0s"
%s`, filepath.Join(e.root, "npm-args.log"), version, cliFile, tail))
}

func (e *testEnv) npmArgs() []string {
	data, _ := os.ReadFile(filepath.Join(e.root, "npm-args.log"))
	return strings.Fields(string(data))
}

// snapshot describes every file under roots: mode, size, mtime, link target.
func snapshot(t *testing.T, roots ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, root := range roots {
		filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return nil
			}
			s := fmt.Sprintf("%s %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
			if fi.Mode()&os.ModeSymlink != 0 {
				target, _ := os.Readlink(p)
				s += " -> " + target
			}
			m[p] = s
			return nil
		})
	}
	return m
}

func partials(t *testing.T, cache string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(cache, "aegis", partialPrefix+"*"))
	return m
}

// errKind names the typed error in err's chain, for table comparisons.
func errKind(err error) string {
	var me *MissingError
	var ie *InvalidError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &me):
		return "missing"
	case errors.As(err, &ie):
		if ie.Env != "" {
			return "invalid env"
		}
		return "invalid"
	}
	return "other"
}

// ---- browser ----------------------------------------------------------------

func TestSetupLocateBrowser(t *testing.T) {
	type want struct {
		kind    string // "", "missing", "invalid", "invalid env"
		path    string // relative to the env root
		source  Source
		product string
		version string
		errHas  string
		hintHas string
	}
	tests := []struct {
		name  string
		setup func(e *testEnv)
		want  want
	}{
		{
			name: "AEGIS_CHROMIUM set and valid",
			setup: func(e *testEnv) {
				e.env[EnvBrowser] = fakeBrowser(e.t, filepath.Join(e.root, "my", "chrome"), "Google Chrome 120.0.6099.109 ")
				e.candidates = []string{fakeBrowser(e.t, filepath.Join(e.root, "usr/lib/chromium/chromium"), "Chromium 156.0.8078.73")}
			},
			want: want{path: "my/chrome", source: SourceEnv, product: "Google Chrome", version: "120.0.6099.109"},
		},
		{
			name: "AEGIS_CHROMIUM set but missing: no fallback",
			setup: func(e *testEnv) {
				e.env[EnvBrowser] = filepath.Join(e.root, "nope", "chrome")
				e.candidates = []string{fakeBrowser(e.t, filepath.Join(e.root, "usr/lib/chromium/chromium"), "Chromium 156.0.8078.73")}
			},
			want: want{kind: "invalid env", errHas: "AEGIS_CHROMIUM=" + "ROOT/nope/chrome: does not exist", hintHas: "unset it"},
		},
		{
			name: "AEGIS_CHROMIUM set but not executable",
			setup: func(e *testEnv) {
				p := filepath.Join(e.root, "chrome")
				writeFile(e.t, p, "#!/bin/sh\necho Chromium 1.2.3\n", 0o644)
				e.env[EnvBrowser] = p
			},
			want: want{kind: "invalid env", errHas: "is not executable (mode -rw-r--r--)"},
		},
		{
			name: "AEGIS_CHROMIUM is a directory",
			setup: func(e *testEnv) {
				e.env[EnvBrowser] = e.bin
			},
			want: want{kind: "invalid env", errHas: "is a directory"},
		},
		{
			name: "AEGIS_CHROMIUM does not run",
			setup: func(e *testEnv) {
				e.env[EnvBrowser] = writeScript(e.t, filepath.Join(e.root, "chrome"), "echo 'error while loading shared libraries' >&2; exit 127")
			},
			want: want{kind: "invalid env", errHas: "shared libraries"},
		},
		{
			name: "AEGIS_CHROMIUM prints no version",
			setup: func(e *testEnv) {
				e.env[EnvBrowser] = writeScript(e.t, filepath.Join(e.root, "chrome"), "echo hello")
			},
			want: want{kind: "invalid env", errHas: `printed no version: "hello"`},
		},
		{
			name: "real binary preferred over the wrapper",
			setup: func(e *testEnv) {
				e.candidates = []string{
					fakeBrowser(e.t, filepath.Join(e.root, "usr/lib/chromium/chromium"), "Chromium 156.0.8078.73 "),
					"chromium",
				}
				fakeBrowser(e.t, filepath.Join(e.bin, "chromium"), "Chromium 156.0.8078.73 built on Debian GNU/Linux 12 (bookworm)")
			},
			want: want{path: "usr/lib/chromium/chromium", source: SourceFound, product: "Chromium", version: "156.0.8078.73"},
		},
		{
			name: "found in PATH",
			setup: func(e *testEnv) {
				e.candidates = []string{filepath.Join(e.root, "usr/lib/chromium/chromium"), "chromium", "google-chrome"}
				fakeBrowser(e.t, filepath.Join(e.bin, "google-chrome"), "Google Chrome 120.0.6099.109")
			},
			want: want{path: "bin/google-chrome", source: SourceFound, product: "Google Chrome", version: "120.0.6099.109"},
		},
		{
			name: "broken candidate skipped, next one used",
			setup: func(e *testEnv) {
				e.candidates = []string{
					writeScript(e.t, filepath.Join(e.root, "broken"), "exit 1"),
					fakeBrowser(e.t, filepath.Join(e.root, "good"), "Chromium 150.0.1.2"),
				}
			},
			want: want{path: "good", source: SourceFound, product: "Chromium", version: "150.0.1.2"},
		},
		{
			name: "only a broken candidate",
			setup: func(e *testEnv) {
				e.candidates = []string{writeScript(e.t, filepath.Join(e.root, "broken"), "exit 1")}
			},
			want: want{kind: "invalid", errHas: "does not run", hintHas: "set AEGIS_CHROMIUM"},
		},
		{
			name: "nothing, Debian, not root: apt hint",
			setup: func(e *testEnv) {
				e.debian("debian")
				writeScript(e.t, filepath.Join(e.bin, "apt-get"), "exit 3")
			},
			want: want{kind: "missing", errHas: "no Chrome or Chromium", hintHas: "run: sudo apt-get install chromium, or set AEGIS_CHROMIUM=/path/to/chrome"},
		},
		{
			name: "nothing, root on Debian: Locate points at aegis setup",
			setup: func(e *testEnv) {
				e.rootWithApt()
			},
			want: want{kind: "missing", hintHas: "run: aegis setup (it installs chromium with apt-get)"},
		},
		{
			name: "nothing, Ubuntu",
			setup: func(e *testEnv) {
				e.debian("ubuntu")
			},
			want: want{kind: "missing", hintHas: "snap install chromium"},
		},
		{
			name: "nothing, macOS",
			setup: func(e *testEnv) {
				e.goos = "darwin"
			},
			want: want{kind: "missing", hintHas: "brew install --cask chromium"},
		},
		{
			name:  "nothing, unknown system",
			setup: func(e *testEnv) {},
			want:  want{kind: "missing", hintHas: "install Chromium or Google Chrome, or set AEGIS_CHROMIUM"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			tt.setup(e)
			b, err := LocateBrowser(context.Background(), e.opts())
			got := want{kind: errKind(err), source: b.Source, product: b.Product, version: b.Version}
			if b.Path != "" {
				got.path, _ = filepath.Rel(e.root, b.Path)
			}
			wantErr := strings.ReplaceAll(tt.want.errHas, "ROOT", e.root)
			if err != nil && strings.Contains(err.Error(), wantErr) {
				got.errHas = tt.want.errHas
			} else if err != nil {
				got.errHas = err.Error()
			}
			if h := Hint(err); strings.Contains(h, tt.want.hintHas) {
				got.hintHas = tt.want.hintHas
			} else {
				got.hintHas = h
			}
			if got != tt.want {
				t.Errorf("LocateBrowser:\n got %+v\nwant %+v", got, tt.want)
			}
			for _, c := range e.runner.calls() {
				if !strings.HasSuffix(c, " --version") {
					t.Errorf("Locate ran %q, want only --version checks", c)
				}
			}
			if _, err := os.Stat(e.cache); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Locate wrote into the cache dir: %v", snapshot(t, e.cache))
			}
		})
	}
}

func TestSetupParseBrowserVersion(t *testing.T) {
	tests := []struct {
		out                   string
		product, version, err string
	}{
		{"Chromium 156.0.8078.73 \n", "Chromium", "156.0.8078.73", ""},
		{"Chromium 156.0.8078.73 built on Debian GNU/Linux 12 (bookworm)\n", "Chromium", "156.0.8078.73", ""},
		{"Google Chrome 120.0.6099.109 \n", "Google Chrome", "120.0.6099.109", ""},
		{"Microsoft Edge 120.0.2210.91 unknown\n", "Microsoft Edge", "120.0.2210.91", ""},
		{"\nWARNING: something\nChromium 99.0.1.0\n", "Chromium", "99.0.1.0", ""},
		{"120.0.6099.109\n", "Browser", "120.0.6099.109", ""},
		{"no version here", "", "", `--version printed no version: "no version here"`},
	}
	for _, tt := range tests {
		p, v, err := parseBrowserVersion(tt.out)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if p != tt.product || v != tt.version || gotErr != tt.err {
			t.Errorf("parseBrowserVersion(%q) = %q, %q, %q; want %q, %q, %q", tt.out, p, v, gotErr, tt.product, tt.version, tt.err)
		}
	}
}

func TestSetupDefaultBrowserCandidates(t *testing.T) {
	getenv := func(k string) string {
		return map[string]string{"HOME": "/Users/me", "ProgramFiles": `C:\Program Files`}[k]
	}
	linux := DefaultBrowserCandidates("linux", getenv)
	idx := func(list []string, s string) int {
		i := slices.Index(list, s)
		if i < 0 {
			t.Fatalf("%q not in %q", s, list)
		}
		return i
	}
	if got, want := idx(linux, "/usr/lib/chromium/chromium"), 0; got != want {
		t.Errorf("linux: real Chromium binary at %d, want %d", got, want)
	}
	for _, later := range []string{"chromium", "/usr/bin/chromium", "google-chrome", "chromium-browser"} {
		if idx(linux, later) < idx(linux, "/usr/lib/chromium/chromium") {
			t.Errorf("linux: %q before the real binary", later)
		}
	}
	if idx(linux, "chromium") > idx(linux, "google-chrome") || idx(linux, "google-chrome") > idx(linux, "chromium-browser") {
		t.Errorf("linux order: %q", linux)
	}
	mac := DefaultBrowserCandidates("darwin", getenv)
	idx(mac, "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome")
	idx(mac, "/Users/me/Applications/Chromium.app/Contents/MacOS/Chromium")
	win := DefaultBrowserCandidates("windows", getenv)
	idx(win, `C:\Program Files\Google\Chrome\Application\chrome.exe`)
}

// fakeApt intercepts apt-get: it prints like apt, and on "install" runs
// onInstall (which lays out what the package would).
type fakeApt struct {
	mu        sync.Mutex
	calls     [][]string
	env       [][]string
	failStep  map[string]string // step ("update"/"install") -> output; exits 100 once per entry
	onInstall func(pkgs []string)
}

func (f *fakeApt) intercept(_ context.Context, c Cmd) (bool, []byte, error) {
	if filepath.Base(c.Path) != "apt-get" {
		return false, nil, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c.Args)
	f.env = append(f.env, c.Env)
	var step string
	var pkgs []string
	for i, a := range c.Args {
		if a == "update" || a == "install" {
			step = a
			for _, p := range c.Args[i+1:] {
				if !strings.HasPrefix(p, "-") {
					pkgs = append(pkgs, p)
				}
			}
			break
		}
	}
	if out, ok := f.failStep[step]; ok {
		delete(f.failStep, step)
		fmt.Fprintln(c.Stdout, out)
		return true, nil, errors.New("exit status 100")
	}
	fmt.Fprintf(c.Stdout, "Reading package lists... (%s)\n", step)
	if step == "install" && f.onInstall != nil {
		f.onInstall(pkgs)
	}
	return true, nil, nil
}

func (f *fakeApt) steps() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var s []string
	for _, args := range f.calls {
		var kept []string
		for i := 0; i < len(args); i++ {
			if args[i] == "-o" { // DPkg::Lock::Timeout=N varies with time
				if !strings.HasPrefix(args[i+1], "DPkg::Lock::Timeout=") {
					s = append(s, "bad -o "+args[i+1])
				}
				i++
				continue
			}
			kept = append(kept, args[i])
		}
		s = append(s, strings.Join(kept, " "))
	}
	return s
}

func TestSetupEnsureBrowser(t *testing.T) {
	type want struct {
		kind     string
		source   Source
		aptSteps []string
		progress []string // substrings, in order
		errHas   string
	}
	chromium := func(e *testEnv) string { return filepath.Join(e.root, "usr/lib/chromium/chromium") }
	installs := func(e *testEnv, apt *fakeApt) {
		e.rootWithApt()
		e.candidates = []string{chromium(e), "chromium"}
		apt.onInstall = func(pkgs []string) {
			if slices.Contains(pkgs, "chromium") {
				fakeBrowser(e.t, chromium(e), "Chromium 156.0.8078.73 ")
				fakeBrowser(e.t, filepath.Join(e.bin, "chromium"), "Chromium 156.0.8078.73 built on Debian")
			}
		}
	}
	tests := []struct {
		name  string
		setup func(e *testEnv, apt *fakeApt)
		want  want
	}{
		{
			name:  "already installed: no apt",
			setup: func(e *testEnv, apt *fakeApt) { installs(e, apt); apt.onInstall([]string{"chromium"}) },
			want:  want{source: SourceFound},
		},
		{
			name:  "root on Debian: apt-get update then install",
			setup: installs,
			want: want{source: SourceInstalled, aptSteps: []string{"update", "install -y chromium"},
				progress: []string{"installing chromium with apt-get", "running apt-get update", "Reading package lists... (update)", "running apt-get install -y chromium", "Reading package lists... (install)"}},
		},
		{
			name: "root on a Debian derivative (ID_LIKE)",
			setup: func(e *testEnv, apt *fakeApt) {
				installs(e, apt)
				writeFile(e.t, e.osRelease, "ID=raspbian\nID_LIKE=\"debian\"\n", 0o644)
			},
			want: want{source: SourceInstalled, aptSteps: []string{"update", "install -y chromium"}},
		},
		{
			name: "root but not Debian: no apt, hint",
			setup: func(e *testEnv, apt *fakeApt) {
				installs(e, apt)
				writeFile(e.t, e.osRelease, "ID=fedora\nID_LIKE=\"rhel centos\"\n", 0o644)
			},
			want: want{kind: "missing", errHas: "no Chrome or Chromium"},
		},
		{
			name: "Debian but not root: no apt",
			setup: func(e *testEnv, apt *fakeApt) {
				installs(e, apt)
				e.euid = 1000
			},
			want: want{kind: "missing", errHas: "sudo apt-get install chromium"},
		},
		{
			name: "root on Debian without apt-get",
			setup: func(e *testEnv, apt *fakeApt) {
				installs(e, apt)
				os.Remove(filepath.Join(e.bin, "apt-get"))
			},
			want: want{kind: "missing"},
		},
		{
			name: "AEGIS_CHROMIUM wrong: no apt either",
			setup: func(e *testEnv, apt *fakeApt) {
				installs(e, apt)
				e.env[EnvBrowser] = "/nonexistent/chrome"
			},
			want: want{kind: "invalid env", errHas: "does not exist"},
		},
		{
			name: "apt-get install fails",
			setup: func(e *testEnv, apt *fakeApt) {
				installs(e, apt)
				apt.failStep = map[string]string{"install": "E: Unable to locate package chromium"}
			},
			want: want{kind: "missing", aptSteps: []string{"update", "install -y chromium"},
				errHas: "installing chromium with apt-get failed: apt-get install -y chromium: exit status 100"},
		},
		{
			name: "apt-get update fails: warned, install tried anyway",
			setup: func(e *testEnv, apt *fakeApt) {
				installs(e, apt)
				apt.failStep = map[string]string{"update": "E: Failed to fetch"}
			},
			want: want{source: SourceInstalled, aptSteps: []string{"update", "install -y chromium"},
				progress: []string{"E: Failed to fetch", "warning: apt-get update: exit status 100; trying the install anyway"}},
		},
		{
			name: "apt lost the race for the lock: retried",
			setup: func(e *testEnv, apt *fakeApt) {
				installs(e, apt)
				apt.failStep = map[string]string{"install": "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 77 (apt-get)"}
			},
			want: want{source: SourceInstalled, aptSteps: []string{"update", "install -y chromium", "install -y chromium"},
				progress: []string{"could not get the apt lock; waiting and retrying"}},
		},
		{
			name: "apt lock held a while: waits with a message, then installs",
			setup: func(e *testEnv, apt *fakeApt) {
				installs(e, apt)
				n := 0
				e.lockHolder = func() (int, string, bool) { n++; return 4242, "apt-get", n <= 3 }
			},
			want: want{source: SourceInstalled, aptSteps: []string{"update", "install -y chromium"},
				progress: []string{"waiting for the apt/dpkg lock held by process 4242 (apt-get)", "apt lock released after", "running apt-get update"}},
		},
		{
			name: "apt lock held past the timeout: clear failure, apt never run",
			setup: func(e *testEnv, apt *fakeApt) {
				installs(e, apt)
				e.lockWait = 50 * time.Millisecond
				e.lockHolder = func() (int, string, bool) { return 4242, "dpkg", true }
			},
			want: want{kind: "missing", progress: []string{"waiting for the apt/dpkg lock held by process 4242 (dpkg)"},
				errHas: "the apt/dpkg lock is still held by process 4242 (dpkg) after 0s; try again when that run has finished"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			apt := &fakeApt{}
			tt.setup(e, apt)
			e.runner.intercept = apt.intercept
			b, err := EnsureBrowser(context.Background(), e.opts(), e.progress)
			got := want{kind: errKind(err), source: b.Source, aptSteps: apt.steps()}
			if err != nil && strings.Contains(err.Error(), tt.want.errHas) {
				got.errHas = tt.want.errHas
			} else if err != nil {
				got.errHas = err.Error()
			}
			out := e.progress.String()
			rest := out
			for _, p := range tt.want.progress {
				i := strings.Index(rest, p)
				if i < 0 {
					got.progress = append(got.progress, "MISSING IN ORDER: "+p)
					continue
				}
				got.progress = append(got.progress, p)
				rest = rest[i+len(p):]
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("EnsureBrowser:\n got %+v\nwant %+v\nprogress:\n%s", got, tt.want, out)
			}
			for _, env := range apt.env {
				if !slices.Contains(env, "DEBIAN_FRONTEND=noninteractive") {
					t.Errorf("apt-get run without DEBIAN_FRONTEND=noninteractive: %q", env)
				}
			}
			if err == nil && b.Path != chromium(e) {
				t.Errorf("browser path %s, want the real binary %s", b.Path, chromium(e))
			}
		})
	}
}

// ---- driver -----------------------------------------------------------------

func TestSetupLocateDriver(t *testing.T) {
	type want struct {
		kind    string
		source  Source
		dir     string // relative to the env root
		errHas  string
		hintHas string
	}
	cached := func(e *testEnv) string { return filepath.Join(e.cache, "aegis", DriverDirName) }
	tests := []struct {
		name  string
		setup func(e *testEnv)
		want  want
	}{
		{
			name:  "AEGIS_PLAYWRIGHT_DRIVER valid",
			setup: func(e *testEnv) { e.env[EnvDriver] = fakeDriver(e.t, filepath.Join(e.root, "drv"), "1.52.0") },
			want:  want{source: SourceEnv, dir: "drv"},
		},
		{
			name: "AEGIS_PLAYWRIGHT_DRIVER wrong version: no fallback to a good cache",
			setup: func(e *testEnv) {
				e.env[EnvDriver] = fakeDriver(e.t, filepath.Join(e.root, "drv"), "1.52.1")
				fakeDriver(e.t, cached(e), "1.52.0")
			},
			want: want{kind: "invalid env", errHas: "package/cli.js --version reports 1.52.1, want exactly 1.52.0", hintHas: "or unset it"},
		},
		{
			name: "AEGIS_PLAYWRIGHT_DRIVER prerelease of the right version",
			setup: func(e *testEnv) {
				e.env[EnvDriver] = fakeDriver(e.t, filepath.Join(e.root, "drv"), "1.52.0-alpha-2025")
			},
			want: want{kind: "invalid env", errHas: "reports 1.52.0-alpha-2025, want exactly 1.52.0"},
		},
		{
			name: "AEGIS_PLAYWRIGHT_DRIVER without package/cli.js",
			setup: func(e *testEnv) {
				d := fakeDriver(e.t, filepath.Join(e.root, "drv"), "1.52.0")
				os.Remove(filepath.Join(d, "package", "cli.js"))
				e.env[EnvDriver] = d
			},
			want: want{kind: "invalid env", errHas: "no package/cli.js (expected the npm package playwright-core@1.52.0 unpacked as package/)"},
		},
		{
			name: "AEGIS_PLAYWRIGHT_DRIVER without node",
			setup: func(e *testEnv) {
				d := fakeDriver(e.t, filepath.Join(e.root, "drv"), "1.52.0")
				os.Remove(filepath.Join(d, "node"))
				e.env[EnvDriver] = d
			},
			want: want{kind: "invalid env", errHas: "node does not exist"},
		},
		{
			name: "AEGIS_PLAYWRIGHT_DRIVER node dangling symlink",
			setup: func(e *testEnv) {
				d := fakeDriver(e.t, filepath.Join(e.root, "drv"), "1.52.0")
				os.Remove(filepath.Join(d, "node"))
				os.Symlink(filepath.Join(e.root, "gone", "node"), filepath.Join(d, "node"))
				e.env[EnvDriver] = d
			},
			want: want{kind: "invalid env", errHas: "node does not exist"},
		},
		{
			name:  "AEGIS_PLAYWRIGHT_DRIVER does not exist",
			setup: func(e *testEnv) { e.env[EnvDriver] = filepath.Join(e.root, "nope") },
			want:  want{kind: "invalid env", errHas: "not a directory"},
		},
		{
			name: "AEGIS_PLAYWRIGHT_DRIVER cli.js says nothing",
			setup: func(e *testEnv) {
				d := fakeDriver(e.t, filepath.Join(e.root, "drv"), "1.52.0")
				writeFile(e.t, filepath.Join(d, "package", "cli.js"), "echo hi\n", 0o644)
				e.env[EnvDriver] = d
			},
			want: want{kind: "invalid env", errHas: `printed no version: "hi"`},
		},
		{
			name:  "cached driver found",
			setup: func(e *testEnv) { fakeDriver(e.t, cached(e), "1.52.0") },
			want:  want{source: SourceCached, dir: "cache/aegis/playwright-driver-1.52.0"},
		},
		{
			name:  "no cached driver",
			setup: func(e *testEnv) {},
			want:  want{kind: "missing", errHas: "no Playwright driver 1.52.0 at", hintHas: "run: aegis setup (it builds it from npm playwright-core@1.52.0)"},
		},
		{
			name:  "cached driver of another version",
			setup: func(e *testEnv) { fakeDriver(e.t, cached(e), "1.51.0") },
			want:  want{kind: "invalid", errHas: "reports 1.51.0", hintHas: "run: aegis setup (it rebuilds it)"},
		},
		{
			name: "an interrupted build is not a driver",
			setup: func(e *testEnv) {
				fakeDriver(e.t, filepath.Join(e.cache, "aegis", partialPrefix+"123"), "1.52.0")
			},
			want: want{kind: "missing"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			tt.setup(e)
			before := snapshot(t, e.root)
			d, err := LocateDriver(context.Background(), e.opts())
			got := want{kind: errKind(err), source: d.Source}
			if d.Dir != "" {
				got.dir, _ = filepath.Rel(e.root, d.Dir)
				if d.Node != filepath.Join(d.Dir, "node") || d.Version != DriverVersion {
					t.Errorf("driver %+v: want node in Dir and version %s", d, DriverVersion)
				}
			}
			if err != nil && strings.Contains(err.Error(), tt.want.errHas) {
				got.errHas = tt.want.errHas
			} else if err != nil {
				got.errHas = err.Error()
			}
			if h := Hint(err); strings.Contains(h, tt.want.hintHas) {
				got.hintHas = tt.want.hintHas
			} else {
				got.hintHas = h
			}
			if got != tt.want {
				t.Errorf("LocateDriver:\n got %+v\nwant %+v", got, tt.want)
			}
			if after := snapshot(t, e.root); !reflect.DeepEqual(before, after) {
				t.Errorf("Locate changed files:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

func TestSetupEnsureDriver(t *testing.T) {
	type want struct {
		kind     string
		source   Source
		errHas   string
		final    bool // a valid driver sits at the final path afterwards
		npmRuns  int
		partials int
	}
	tests := []struct {
		name    string
		setup   func(e *testEnv)
		timeout time.Duration // cancel the build after the fake npm has started
		want    want
	}{
		{
			name:  "built from a fake npm",
			setup: func(e *testEnv) { e.fakeNPM(cliJS("1.52.0"), "1.52.0", "") },
			want:  want{source: SourceBuilt, final: true, npmRuns: 1},
		},
		{
			name: "cached: nothing built",
			setup: func(e *testEnv) {
				e.fakeNPM(cliJS("1.52.0"), "1.52.0", "")
				fakeDriver(e.t, filepath.Join(e.cache, "aegis", DriverDirName), "1.52.0")
			},
			want: want{source: SourceCached, final: true},
		},
		{
			name: "cached of the wrong version: rebuilt and replaced",
			setup: func(e *testEnv) {
				e.fakeNPM(cliJS("1.52.0"), "1.52.0", "")
				fakeDriver(e.t, filepath.Join(e.cache, "aegis", DriverDirName), "1.51.0")
			},
			want: want{source: SourceBuilt, final: true, npmRuns: 1},
		},
		{
			name:  "npm delivers the wrong version: nothing installed",
			setup: func(e *testEnv) { e.fakeNPM(cliJS("1.52.1"), "1.52.1", "") },
			want:  want{kind: "missing", errHas: "is not usable: package/cli.js --version reports 1.52.1", npmRuns: 1},
		},
		{
			name: "npm fails after unpacking: nothing installed",
			setup: func(e *testEnv) {
				e.fakeNPM(cliJS("1.52.0"), "1.52.0", "echo 'npm error network ECONNRESET' >&2; exit 1")
			},
			want: want{kind: "missing", errHas: "npm install playwright-core@1.52.0 failed", npmRuns: 1},
		},
		{
			name: "npm leaves no playwright-core",
			setup: func(e *testEnv) {
				e.fakeNPM(cliJS("1.52.0"), "1.52.0", `rm -rf "$pkg"`)
			},
			want: want{kind: "missing", errHas: "npm left no node_modules/playwright-core", npmRuns: 1},
		},
		{
			name:    "interrupted during npm install: nothing installed, nothing left",
			setup:   func(e *testEnv) { e.fakeNPM(cliJS("1.52.0"), "1.52.0", "exec sleep 30") },
			timeout: 300 * time.Millisecond,
			want:    want{kind: "missing", errHas: "npm install playwright-core@1.52.0 failed", npmRuns: 1},
		},
		{
			name: "a killed build's leftovers: old ones removed, recent ones kept, never used",
			setup: func(e *testEnv) {
				e.fakeNPM(cliJS("1.52.0"), "1.52.0", "")
				old := fakeDriver(e.t, filepath.Join(e.cache, "aegis", partialPrefix+"old"), "1.52.0")
				long := time.Now().Add(-2 * time.Hour)
				os.Chtimes(old, long, long)
				fakeDriver(e.t, filepath.Join(e.cache, "aegis", partialPrefix+"recent"), "1.52.0")
			},
			want: want{source: SourceBuilt, final: true, npmRuns: 1, partials: 1},
		},
		{
			name: "no node or npm, not root: hint",
			setup: func(e *testEnv) {
				e.debian("debian")
			},
			want: want{kind: "missing", errHas: "sudo apt-get install nodejs npm"},
		},
		{
			name: "AEGIS_PLAYWRIGHT_DRIVER wrong: never builds",
			setup: func(e *testEnv) {
				e.fakeNPM(cliJS("1.52.0"), "1.52.0", "")
				e.env[EnvDriver] = filepath.Join(e.root, "nope")
			},
			want: want{kind: "invalid env", errHas: "AEGIS_PLAYWRIGHT_DRIVER="},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			tt.setup(e)
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			start := time.Now()
			d, err := EnsureDriver(ctx, e.opts(), e.progress)
			if tt.timeout > 0 && time.Since(start) > 5*time.Second {
				t.Errorf("interrupted build took %s to stop", time.Since(start))
			}
			got := want{kind: errKind(err), source: d.Source, npmRuns: strings.Count(strings.Join(e.runner.calls(), "\n"), "npm install")}
			if err != nil && strings.Contains(err.Error(), tt.want.errHas) {
				got.errHas = tt.want.errHas
			} else if err != nil {
				got.errHas = err.Error()
			}
			final := filepath.Join(e.cache, "aegis", DriverDirName)
			e.runner.reset()
			ld, lerr := LocateDriver(context.Background(), Options{Getenv: func(string) string { return "" }, CacheDir: e.cache})
			got.final = lerr == nil && ld.Dir == final
			got.partials = len(partials(t, e.cache))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("EnsureDriver:\n got %+v\nwant %+v\nerr: %v\nprogress:\n%s", got, tt.want, err, e.progress.String())
			}
			if err == nil && d.Source == SourceBuilt {
				if d.Dir != final || d.Node != filepath.Join(final, "node") || d.Version != DriverVersion {
					t.Errorf("built driver %+v", d)
				}
				if target, err := os.Readlink(filepath.Join(final, "node")); err != nil || target != filepath.Join(e.bin, "node") {
					t.Errorf("node link -> %q, %v; want %s", target, err, filepath.Join(e.bin, "node"))
				}
				if fileExists(filepath.Join(final, "npm")) || !fileExists(filepath.Join(final, "package", "lib")) {
					t.Errorf("driver layout: %v", snapshot(t, final))
				}
				wantArgs := []string{"install", "--no-audit", "--no-fund", "--ignore-scripts", "--prefix", "PREFIX", "playwright-core@1.52.0"}
				args := e.npmArgs()
				if len(args) == len(wantArgs) {
					args[5] = "PREFIX"
				}
				if !reflect.DeepEqual(args, wantArgs) {
					t.Errorf("npm args %q, want %q", args, wantArgs)
				}
				if fi, err := os.Stat(final); err != nil || fi.Mode().Perm() != 0o755 {
					t.Errorf("driver dir mode: %v %v", fi.Mode(), err)
				}
			}
			if olds, _ := filepath.Glob(filepath.Join(e.cache, "aegis", partialPrefix+"old-*")); len(olds) > 0 {
				t.Errorf("old driver left behind: %q", olds)
			}
		})
	}
}

func TestSetupEnsureDriverAptInstallsNode(t *testing.T) {
	e := newTestEnv(t)
	e.rootWithApt()
	apt := &fakeApt{onInstall: func(pkgs []string) {
		if !reflect.DeepEqual(pkgs, []string{"nodejs", "npm"}) {
			t.Errorf("apt-get install %q, want nodejs npm", pkgs)
		}
		e.fakeNPM(cliJS("1.52.0"), "1.52.0", "")
	}}
	e.runner.intercept = apt.intercept
	d, err := EnsureDriver(context.Background(), e.opts(), e.progress)
	if err != nil || d.Source != SourceBuilt {
		t.Fatalf("EnsureDriver = %+v, %v\n%s", d, err, e.progress.String())
	}
	if got, want := apt.steps(), []string{"update", "install -y nodejs npm"}; !reflect.DeepEqual(got, want) {
		t.Errorf("apt steps %q, want %q", got, want)
	}
}

// TestSetupEnsureDriverRealNode builds with a fake npm but verifies with the
// real node: cli.js is JavaScript.
func TestSetupEnsureDriverRealNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node in PATH")
	}
	e := newTestEnv(t)
	if err := os.Symlink(node, filepath.Join(e.bin, "node")); err != nil {
		t.Fatal(err)
	}
	e.fakeNPM("console.log('Version ' + '1.52.0')\n", "1.52.0", "")
	d, err := EnsureDriver(context.Background(), e.opts(), e.progress)
	if err != nil || d.Source != SourceBuilt {
		t.Fatalf("EnsureDriver = %+v, %v\n%s", d, err, e.progress.String())
	}
	out, err := exec.Command(d.Node, filepath.Join(d.Dir, "package", "cli.js"), "--version").Output()
	if got, want := strings.TrimSpace(string(out)), "Version 1.52.0"; err != nil || got != want {
		t.Errorf("real node cli.js --version = %q, %v; want %q", got, err, want)
	}
}

// ---- both -------------------------------------------------------------------

// TestSetupEnsureIdempotent: the second Ensure runs no process, changes no
// file and is fast; Locate agrees.
func TestSetupEnsureIdempotent(t *testing.T) {
	e := newTestEnv(t)
	e.candidates = []string{fakeBrowser(t, filepath.Join(e.root, "usr/lib/chromium/chromium"), "Chromium 156.0.8078.73 ")}
	e.fakeNPM(cliJS("1.52.0"), "1.52.0", "")
	ctx := context.Background()

	first, err := Ensure(ctx, e.opts(), e.progress)
	if err != nil {
		t.Fatalf("first Ensure: %v", err)
	}
	if got, want := []Source{first.Browser.Source, first.Driver.Source}, []Source{SourceFound, SourceBuilt}; !reflect.DeepEqual(got, want) {
		t.Errorf("first run sources %v, want %v", got, want)
	}
	before := snapshot(t, e.root)
	e.runner.reset()

	start := time.Now()
	second, err := Ensure(ctx, e.opts(), e.progress)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	want := first
	want.Driver.Source = SourceCached
	if second != want {
		t.Errorf("second run\n got %+v\nwant %+v", second, want)
	}
	if calls := e.runner.calls(); len(calls) != 0 {
		t.Errorf("second run ran %q, want nothing", calls)
	}
	if after := snapshot(t, e.root); !reflect.DeepEqual(before, after) {
		t.Errorf("second run changed files:\nbefore %v\nafter  %v", before, after)
	}
	if elapsed > time.Second {
		t.Errorf("second run took %s, want < 1s", elapsed)
	}

	located, err := Locate(ctx, e.opts())
	if err != nil || located != second {
		t.Errorf("Locate = %+v, %v; want %+v", located, err, second)
	}
	if calls := e.runner.calls(); len(calls) != 0 {
		t.Errorf("Locate ran %q, want nothing", calls)
	}

	// A changed binary is checked again, not taken from the stamp.
	fakeBrowser(t, first.Browser.Path, "Chromium 157.0.1.2 ")
	later := time.Now().Add(time.Minute)
	os.Chtimes(first.Browser.Path, later, later)
	b, err := LocateBrowser(ctx, e.opts())
	if err != nil || b.Version != "157.0.1.2" {
		t.Errorf("after an upgrade LocateBrowser = %+v, %v; want version 157.0.1.2", b, err)
	}
}

// TestSetupEnsureJoinsErrors: both components are attempted and reported.
func TestSetupEnsureJoinsErrors(t *testing.T) {
	e := newTestEnv(t)
	e.debian("debian")
	res, err := Ensure(context.Background(), e.opts(), io.Discard)
	if res != (Result{}) {
		t.Errorf("result %+v, want zero", res)
	}
	var kinds []string
	for _, err := range err.(interface{ Unwrap() []error }).Unwrap() {
		var me *MissingError
		if errors.As(err, &me) {
			kinds = append(kinds, me.Component)
		}
	}
	if want := []string{ComponentBrowser, ComponentDriver}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("missing components %q, want %q (err %v)", kinds, want, err)
	}
}

func TestSetupErrorsAndStrings(t *testing.T) {
	tests := []struct{ got, want string }{
		{(&MissingError{Component: "browser", Reason: "none", Hint: "do x", Err: errors.New("boom")}).Error(), "browser not available: none: boom (do x)"},
		{(&InvalidError{Component: "browser", Path: "/x", Env: EnvBrowser, Err: errors.New("is not executable")}).Error(), "browser AEGIS_CHROMIUM=/x: is not executable"},
		{Browser{Path: "/usr/lib/chromium/chromium", Product: "Chromium", Version: "156.0.8078.73", Source: SourceFound}.String(), "Chromium 156.0.8078.73 at /usr/lib/chromium/chromium (found)"},
		{Browser{Path: "/c", Product: "Chromium", Version: "1.2.3", Source: SourceInstalled}.String(), "Chromium 1.2.3 at /c (installed with apt-get)"},
		{Browser{Path: "/c", Product: "Chromium", Version: "1.2.3", Source: SourceEnv}.String(), "Chromium 1.2.3 at /c (from AEGIS_CHROMIUM)"},
		{Driver{Dir: "/d", Version: "1.52.0", Source: SourceBuilt}.String(), "1.52.0 at /d (built from npm playwright-core@1.52.0)"},
		{Driver{Dir: "/d", Version: "1.52.0", Source: SourceCached}.String(), "1.52.0 at /d (cached)"},
		{Driver{Dir: "/d", Version: "1.52.0", Source: SourceEnv}.String(), "1.52.0 at /d (from AEGIS_PLAYWRIGHT_DRIVER)"},
		{Hint(fmt.Errorf("wrapped: %w", &InvalidError{Err: errors.New("x"), Hint: "h"})), "h"},
		{Hint(errors.New("plain")), ""},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestSetupExecRunner(t *testing.T) {
	dir := t.TempDir()
	r := ExecRunner{}
	ctx := context.Background()
	script := writeScript(t, filepath.Join(dir, "s"), `echo "out:$SETUP_TEST_VAR:$1"; echo "some noise" >&2; [ "$1" = fail ] && { echo "E: it broke" >&2; exit 100; }; exit 0`)

	out, err := r.Run(ctx, Cmd{Path: script, Args: []string{"ok"}, Env: []string{"SETUP_TEST_VAR=v"}})
	if got, want := string(out), "out:v:ok\n"; err != nil || got != want {
		t.Errorf("captured %q, %v; want %q", got, err, want)
	}
	_, err = r.Run(ctx, Cmd{Path: script, Args: []string{"fail"}})
	if err == nil || !strings.Contains(err.Error(), "exit status 100: some noise | E: it broke") {
		t.Errorf("failure error %v, want the exit status and stderr's last lines", err)
	}
	var stream syncBuffer
	out, err = r.Run(ctx, Cmd{Path: script, Args: []string{"x"}, Stdout: &stream, Stderr: &stream})
	if got, want := stream.String(), "out::x\nsome noise\n"; err != nil || len(out) != 0 || got != want {
		t.Errorf("streamed %q (captured %q), %v; want %q", got, out, err, want)
	}

	// Cancelling interrupts the process promptly.
	slow := writeScript(t, filepath.Join(dir, "slow"), "exec sleep 30")
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := r.Run(cctx, Cmd{Path: slow}); err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("cancelled run: %v after %s", err, time.Since(start))
	}
}

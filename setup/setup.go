// Package setup finds, installs and verifies what aegis needs to drive a
// browser: a Chrome or Chromium binary and the Playwright driver that
// playwright-go v0.5200.1 talks to (the npm package playwright-core@1.52.0
// laid out beside a node binary).
//
// Locate only looks: it never installs or writes anything, so browser
// drivers can call it on every start to get the paths. Ensure looks first
// and installs what is missing: Chromium with apt-get (only as root on a
// Debian-like system) and the Playwright driver from the npm registry into
// the user's cache directory. Nothing is ever downloaded from anywhere else,
// and playwright-go's own Install is never called.
//
// Every check is cached in a stamp file keyed on the checked files' paths,
// sizes and modification times, so a second Ensure or Locate runs no process
// at all and changes nothing.
package setup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// Versions and names this package installs and accepts.
const (
	// DriverVersion is the Playwright driver version playwright-go v0.5200.1
	// requires, exactly (1.52.x with x != 0 is refused by playwright-go).
	DriverVersion = "1.52.0"
	// DriverPackage is the npm package the driver is built from.
	DriverPackage = "playwright-core@" + DriverVersion
	// DriverDirName is the name of the cached driver directory under
	// CacheDir/aegis.
	DriverDirName = "playwright-driver-" + DriverVersion
	// AptBrowserPackage is the Debian package installed when no browser is found.
	AptBrowserPackage = "chromium"
)

// Environment variables that override the search.
const (
	// EnvBrowser names a Chrome or Chromium executable to use instead of
	// searching. It must exist and run; setup never falls back when it is set.
	EnvBrowser = "AEGIS_CHROMIUM"
	// EnvDriver names a Playwright driver directory (package/cli.js and node)
	// to use instead of the cached one. setup verifies it but never writes to it.
	EnvDriver = "AEGIS_PLAYWRIGHT_DRIVER"
)

// Component names used in errors and reports.
const (
	ComponentBrowser = "browser"
	ComponentDriver  = "playwright driver"
)

// DefaultAptLockTimeout bounds how long Ensure waits for another apt-get or
// dpkg run to release its lock.
const DefaultAptLockTimeout = 5 * time.Minute

// Options makes the environment injectable. The zero value uses the real
// system: os.Getenv, exec.LookPath, os.UserCacheDir, real processes.
type Options struct {
	// Getenv reads environment variables (AEGIS_CHROMIUM, AEGIS_PLAYWRIGHT_DRIVER,
	// HOME and the Windows program directories). Default os.Getenv.
	Getenv func(key string) string
	// LookPath finds programs in PATH (browsers, node, npm, apt-get).
	// Default exec.LookPath.
	LookPath func(file string) (string, error)
	// CacheDir is the user's cache directory; the driver and the stamp file
	// live in CacheDir/aegis. Default os.UserCacheDir().
	CacheDir string
	// Runner runs every external process. Default ExecRunner{}.
	Runner Runner
	// Geteuid reports the effective user id; apt-get is only used when it is 0.
	// Default os.Geteuid.
	Geteuid func() int
	// OSRelease is the os-release file that tells a Debian-like system.
	// Default /etc/os-release.
	OSRelease string
	// BrowserCandidates lists where to look for a browser, first match wins:
	// absolute paths are checked as they are, bare names are looked up with
	// LookPath. Default DefaultBrowserCandidates(runtime.GOOS, Getenv).
	BrowserCandidates []string
	// AptLockHolder reports whether another process holds an apt or dpkg
	// lock, and which. Default: a real fcntl lock probe on Linux, never held
	// elsewhere.
	AptLockHolder func() (pid int, name string, held bool)
	// AptLockTimeout bounds the wait for the apt lock. Default
	// DefaultAptLockTimeout.
	AptLockTimeout time.Duration

	goos         string        // runtime.GOOS unless a test says otherwise
	pollInterval time.Duration // apt lock polling; 1s unless a test says otherwise
	staleAge     time.Duration // partial driver builds older than this are removed
}

func (o Options) withDefaults() (Options, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	if o.CacheDir == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return o, fmt.Errorf("setup: no user cache directory (set XDG_CACHE_HOME or HOME): %w", err)
		}
		o.CacheDir = d
	}
	if o.Runner == nil {
		o.Runner = ExecRunner{}
	}
	if o.Geteuid == nil {
		o.Geteuid = os.Geteuid
	}
	if o.OSRelease == "" {
		o.OSRelease = "/etc/os-release"
	}
	if o.goos == "" {
		o.goos = runtime.GOOS
	}
	if o.BrowserCandidates == nil {
		o.BrowserCandidates = DefaultBrowserCandidates(o.goos, o.Getenv)
	}
	if o.AptLockHolder == nil {
		o.AptLockHolder = defaultAptLockHolder
	}
	if o.AptLockTimeout <= 0 {
		o.AptLockTimeout = DefaultAptLockTimeout
	}
	if o.pollInterval <= 0 {
		o.pollInterval = time.Second
	}
	if o.staleAge <= 0 {
		o.staleAge = time.Hour
	}
	return o, nil
}

// aegisCacheDir is where the driver and the stamps live.
func (o Options) aegisCacheDir() string { return filepath.Join(o.CacheDir, "aegis") }

// DriverDir returns the cached driver directory for opts
// (CacheDir/aegis/playwright-driver-1.52.0), whether or not it exists.
func DriverDir(opts Options) (string, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return "", err
	}
	return filepath.Join(o.aegisCacheDir(), DriverDirName), nil
}

// Source tells where a component came from.
type Source string

// The sources of a component.
const (
	SourceEnv       Source = "env"       // named by AEGIS_CHROMIUM or AEGIS_PLAYWRIGHT_DRIVER
	SourceFound     Source = "found"     // browser already installed on the system
	SourceInstalled Source = "installed" // browser installed by this run with apt-get
	SourceCached    Source = "cached"    // driver already built in the cache directory
	SourceBuilt     Source = "built"     // driver built by this run from npm
)

// how says how a component came, for its String; env is the variable that
// names the component.
func (s Source) how(env string) string {
	switch s {
	case SourceEnv:
		return "from " + env
	case SourceInstalled:
		return "installed with apt-get"
	case SourceBuilt:
		return "built from npm " + DriverPackage
	}
	return string(s)
}

// Browser is a verified Chrome or Chromium executable.
type Browser struct {
	// Path is the executable to pass as playwright's ExecutablePath.
	Path string `json:"path"`
	// Product is the name --version printed, e.g. "Chromium" or "Google Chrome".
	Product string `json:"product"`
	// Version is the version --version printed, e.g. "156.0.8078.73".
	Version string `json:"version"`
	// Source tells how it was found.
	Source Source `json:"source"`
}

// String describes the browser in one line, e.g.
// "Chromium 156.0.8078.73 at /usr/lib/chromium/chromium (found)".
func (b Browser) String() string {
	return fmt.Sprintf("%s %s at %s (%s)", b.Product, b.Version, b.Path, b.Source.how(EnvBrowser))
}

// Driver is a verified Playwright driver directory, ready for
// playwright.RunOptions{DriverDirectory: Dir, SkipInstallBrowsers: true}.
type Driver struct {
	// Dir holds package/cli.js (playwright-core) and node.
	Dir string `json:"dir"`
	// Version is what cli.js --version reported: DriverVersion.
	Version string `json:"version"`
	// Node is the node executable playwright-go will run (Dir/node).
	Node string `json:"node"`
	// Source tells how it was found.
	Source Source `json:"source"`
}

// String describes the driver in one line, e.g.
// "1.52.0 at /root/.cache/aegis/playwright-driver-1.52.0 (cached)".
func (d Driver) String() string {
	return fmt.Sprintf("%s at %s (%s)", d.Version, d.Dir, d.Source.how(EnvDriver))
}

// Result is what Locate and Ensure found. A component that is not
// available has its zero value (empty Path or Dir).
type Result struct {
	Browser Browser `json:"browser"`
	Driver  Driver  `json:"driver"`
}

// MissingError reports a component that is not available and that setup
// did not or could not install. Hint says what to do about it.
type MissingError struct {
	Component string // ComponentBrowser or ComponentDriver
	Reason    string // what is missing
	Hint      string // what to do, e.g. "run: sudo apt-get install chromium"
	Err       error  // the underlying failure, if any (apt-get, npm)
}

// Error says what is missing, why, and the hint.
func (e *MissingError) Error() string {
	msg := e.Component + " not available: " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Unwrap returns the underlying failure.
func (e *MissingError) Unwrap() error { return e.Err }

// InvalidError reports a component that exists but does not work: a path
// named by an environment variable that is missing or not executable, a
// driver of the wrong version, a browser whose --version fails.
type InvalidError struct {
	Component string // ComponentBrowser or ComponentDriver
	Path      string // the file or directory at fault
	Env       string // the environment variable that named Path, or ""
	Err       error  // what is wrong
	Hint      string // what to do
}

// Error says which path is wrong, how, and the hint.
func (e *InvalidError) Error() string {
	where := e.Path
	if e.Env != "" {
		where = e.Env + "=" + e.Path
	}
	msg := e.Component + " " + where + ": " + e.Err.Error()
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Unwrap returns what is wrong.
func (e *InvalidError) Unwrap() error { return e.Err }

// Hint returns the advice carried by the first MissingError or InvalidError
// in err's chain, or "".
func Hint(err error) string {
	var me *MissingError
	if errors.As(err, &me) {
		return me.Hint
	}
	var ie *InvalidError
	if errors.As(err, &ie) {
		return ie.Hint
	}
	return ""
}

// Locate finds and verifies the browser and the driver without installing
// or writing anything. Components that are not available are left zero in
// the Result and reported in the error (a join of *MissingError and
// *InvalidError values, one per component at most).
func Locate(ctx context.Context, opts Options) (Result, error) {
	var res Result
	b, berr := LocateBrowser(ctx, opts)
	d, derr := LocateDriver(ctx, opts)
	res.Browser, res.Driver = b, d
	return res, errors.Join(berr, derr)
}

// Ensure makes both components available: it locates them, installs a
// missing browser with apt-get when it can, builds a missing or broken
// driver from npm, and verifies both. Progress (apt's and npm's output
// included) goes to progress, which may be nil. Both components are always
// attempted; the error joins the failures of each.
func Ensure(ctx context.Context, opts Options, progress io.Writer) (Result, error) {
	var res Result
	b, berr := EnsureBrowser(ctx, opts, progress)
	d, derr := EnsureDriver(ctx, opts, progress)
	res.Browser, res.Driver = b, d
	return res, errors.Join(berr, derr)
}

// locate is the Locate functions' frame: it fills in opts' defaults and
// runs find with the verification stamps, and writes nothing.
func locate[T any](ctx context.Context, opts Options, find func(context.Context, Options, *stamps) (T, error)) (T, error) {
	o, err := opts.withDefaults()
	if err != nil {
		var zero T
		return zero, err
	}
	return find(ctx, o, loadStamps(o))
}

// ensure is the Ensure functions' frame: it fills in opts' defaults, runs
// get with the verification stamps and progress (io.Discard when nil), and
// saves the stamps after.
func ensure[T any](ctx context.Context, opts Options, progress io.Writer, get func(context.Context, Options, *stamps, io.Writer) (T, error)) (T, error) {
	o, err := opts.withDefaults()
	if err != nil {
		var zero T
		return zero, err
	}
	progress = orDiscard(progress)
	st := loadStamps(o)
	defer saveStamps(st, progress)
	return get(ctx, o, st, progress)
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

package setup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// driverVersionTimeout bounds one "node package/cli.js --version".
const driverVersionTimeout = 60 * time.Second

// nodeName is the node executable inside a driver directory, as
// playwright-go expects it.
func nodeName(goos string) string {
	if goos == "windows" {
		return "node.exe"
	}
	return "node"
}

func cachedDriverDir(o Options) string { return filepath.Join(o.aegisCacheDir(), DriverDirName) }

// LocateDriver finds and verifies the Playwright driver without building or
// writing anything: $AEGIS_PLAYWRIGHT_DRIVER when set (never falling back
// when it is wrong), else the cached CacheDir/aegis/playwright-driver-1.52.0.
func LocateDriver(ctx context.Context, opts Options) (Driver, error) {
	return locate(ctx, opts, locateDriver)
}

// EnsureDriver is LocateDriver, then, when the cached driver is missing or
// broken (and $AEGIS_PLAYWRIGHT_DRIVER is not set), builds it from the npm
// registry: "npm install --ignore-scripts playwright-core@1.52.0" into a
// temporary directory beside the final one, lays out package/ and a node
// symlink, verifies it and renames it into place, so an interrupted build
// never leaves a driver that looks valid. When node or npm is missing and
// the process is root on a Debian-like system, they are installed with
// apt-get first. npm's output is streamed to progress.
func EnsureDriver(ctx context.Context, opts Options, progress io.Writer) (Driver, error) {
	return ensure(ctx, opts, progress, ensureDriver)
}

// ensureDriver is EnsureDriver's work, in ensure's frame.
func ensureDriver(ctx context.Context, o Options, st *stamps, progress io.Writer) (Driver, error) {
	d, err := locateDriver(ctx, o, st)
	if err == nil || o.Getenv(EnvDriver) != "" || ctx.Err() != nil {
		return d, err
	}
	var ie *InvalidError
	if errors.As(err, &ie) {
		fmt.Fprintf(progress, "setup: the cached Playwright driver is not usable (%v); rebuilding it\n", ie.Err)
	}
	return buildDriver(ctx, o, st, progress)
}

func locateDriver(ctx context.Context, o Options, st *stamps) (Driver, error) {
	if dir := o.Getenv(EnvDriver); dir != "" {
		d, err := checkDriver(ctx, o, st, dir)
		if err != nil {
			return Driver{}, &InvalidError{Component: ComponentDriver, Path: dir, Env: EnvDriver, Err: err,
				Hint: "point " + EnvDriver + " at a directory holding package/ (npm " + DriverPackage + ") and " +
					nodeName(o.goos) + ", or unset it to use the cached driver"}
		}
		d.Source = SourceEnv
		return d, nil
	}
	dir := cachedDriverDir(o)
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return Driver{}, &MissingError{
			Component: ComponentDriver,
			Reason:    "no Playwright driver " + DriverVersion + " at " + dir,
			Hint:      "run: aegis setup (it builds it from npm " + DriverPackage + "), or set " + EnvDriver + "=/path/to/driver",
		}
	}
	d, err := checkDriver(ctx, o, st, dir)
	if err != nil {
		return Driver{}, &InvalidError{Component: ComponentDriver, Path: dir, Err: err,
			Hint: "run: aegis setup (it rebuilds it)"}
	}
	d.Source = SourceCached
	return d, nil
}

// driverFiles are the files a driver directory's stamp is keyed on.
func driverFiles(o Options, dir string) (cli, node string, keyed []string) {
	cli = filepath.Join(dir, "package", "cli.js")
	node = filepath.Join(dir, nodeName(o.goos))
	keyed = []string{cli, node}
	if pj := filepath.Join(dir, "package", "package.json"); fileExists(pj) {
		keyed = append(keyed, pj)
	}
	return cli, node, keyed
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// checkDriver verifies a driver directory: package/cli.js and an executable
// node exist, and "node package/cli.js --version" reports exactly
// DriverVersion. The answer is cached in st (which may be nil).
func checkDriver(ctx context.Context, o Options, st *stamps, dir string) (Driver, error) {
	cli, node, keyed := driverFiles(o, dir)
	if fi, err := os.Stat(dir); err != nil {
		return Driver{}, fmt.Errorf("not a directory: %w", err)
	} else if !fi.IsDir() {
		return Driver{}, errors.New("not a directory")
	}
	if _, err := os.Stat(cli); err != nil {
		return Driver{}, fmt.Errorf("no package/cli.js (expected the npm package %s unpacked as package/): %w", DriverPackage, err)
	}
	if err := checkExecutable(node, o.goos); err != nil {
		return Driver{}, fmt.Errorf("%s %w (expected a symlink to a Node.js 18+ binary)", nodeName(o.goos), err)
	}
	key, err := filesKey(keyed...)
	if err != nil {
		return Driver{}, err
	}
	id := "driver:" + dir
	if st != nil {
		if e, ok := st.get(id, key); ok {
			return Driver{Dir: dir, Version: e.Version, Node: node}, nil
		}
	}
	vctx, cancel := context.WithTimeout(ctx, driverVersionTimeout)
	defer cancel()
	out, err := o.Runner.Run(vctx, Cmd{Path: node, Args: []string{cli, "--version"}})
	if err != nil {
		return Driver{}, fmt.Errorf("package/cli.js --version failed: %w", err)
	}
	v := driverVersionRE.FindString(string(out))
	switch {
	case v == "":
		return Driver{}, fmt.Errorf("package/cli.js --version printed no version: %q", strings.TrimSpace(string(out)))
	case v != DriverVersion:
		return Driver{}, fmt.Errorf("package/cli.js --version reports %s, want exactly %s (playwright-go v0.5200.1 refuses any other)", v, DriverVersion)
	}
	if st != nil {
		st.put(id, stampEntry{Key: key, Version: v})
	}
	return Driver{Dir: dir, Version: v, Node: node}, nil
}

var driverVersionRE = regexp.MustCompile(`\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?`)

// partialPrefix names the temporary directories of builds in progress.
const partialPrefix = "." + DriverDirName + ".partial-"

func buildDriver(ctx context.Context, o Options, st *stamps, progress io.Writer) (Driver, error) {
	node, npm, err := nodeAndNPM(ctx, o, progress)
	if err != nil {
		return Driver{}, err
	}
	final := cachedDriverDir(o)
	parent := filepath.Dir(final)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return Driver{}, fmt.Errorf("create %s: %w", parent, err)
	}
	removeStalePartials(parent, o.staleAge)
	stage, err := os.MkdirTemp(parent, partialPrefix)
	if err != nil {
		return Driver{}, fmt.Errorf("create build directory: %w", err)
	}
	if err := os.Chmod(stage, 0o755); err != nil { // MkdirTemp makes it 0700
		os.RemoveAll(stage)
		return Driver{}, fmt.Errorf("create build directory: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(stage)
		}
	}()

	prefix := filepath.Join(stage, "npm")
	fmt.Fprintf(progress, "setup: building the Playwright driver: npm install %s (from the npm registry)\n", DriverPackage)
	args := []string{"install", "--no-audit", "--no-fund", "--ignore-scripts", "--prefix", prefix, DriverPackage}
	if _, err := o.Runner.Run(ctx, Cmd{Path: npm, Args: args, Stdout: progress, Stderr: progress}); err != nil {
		return Driver{}, &MissingError{
			Component: ComponentDriver,
			Reason:    "npm install " + DriverPackage + " failed",
			Err:       err,
			Hint:      "check that npm reaches its registry (npm config get registry), or set " + EnvDriver + "=/path/to/driver",
		}
	}
	buildErr := func(err error) error {
		return &MissingError{Component: ComponentDriver, Reason: "the driver built from npm " + DriverPackage + " is not usable",
			Err: err, Hint: "set " + EnvDriver + "=/path/to/driver, or report this"}
	}
	pkg := filepath.Join(prefix, "node_modules", "playwright-core")
	if err := os.Rename(pkg, filepath.Join(stage, "package")); err != nil {
		return Driver{}, buildErr(fmt.Errorf("npm left no node_modules/playwright-core: %w", err))
	}
	if err := os.RemoveAll(prefix); err != nil {
		return Driver{}, buildErr(err)
	}
	if err := os.Symlink(node, filepath.Join(stage, nodeName(o.goos))); err != nil {
		return Driver{}, buildErr(err)
	}
	d, err := checkDriver(ctx, o, nil, stage)
	if err != nil {
		return Driver{}, buildErr(err)
	}
	if err := replaceDir(ctx, o, stage, final); err != nil {
		return Driver{}, err
	}
	done = true
	_, node, keyed := driverFiles(o, final)
	d.Dir, d.Node, d.Source = final, node, SourceBuilt
	if st != nil {
		if key, err := filesKey(keyed...); err == nil {
			st.put("driver:"+final, stampEntry{Key: key, Version: d.Version})
		}
	}
	fmt.Fprintf(progress, "setup: Playwright driver %s ready at %s\n", d.Version, final)
	return d, nil
}

// replaceDir renames the verified stage to final. An existing (broken)
// final is first moved aside under a partial name, so final is always
// either absent or complete.
func replaceDir(ctx context.Context, o Options, stage, final string) error {
	err := os.Rename(stage, final)
	if err == nil {
		return nil
	}
	if _, serr := os.Lstat(final); serr != nil {
		return fmt.Errorf("install driver into %s: %w", final, err)
	}
	old := filepath.Join(filepath.Dir(final), fmt.Sprintf("%sold-%d", partialPrefix, time.Now().UnixNano()))
	if err := os.Rename(final, old); err != nil {
		return fmt.Errorf("move the old driver aside: %w", err)
	}
	if err := os.Rename(stage, final); err != nil {
		// Another setup may have won the race; accept its driver if it works.
		if _, cerr := checkDriver(ctx, o, nil, final); cerr == nil {
			os.RemoveAll(old)
			return nil
		}
		return fmt.Errorf("install driver into %s: %w", final, err)
	}
	os.RemoveAll(old)
	return nil
}

// removeStalePartials deletes builds that were interrupted long ago (a
// killed setup cannot clean up after itself); recent ones may belong to a
// setup running now.
func removeStalePartials(parent string, age time.Duration) {
	matches, _ := filepath.Glob(filepath.Join(parent, partialPrefix+"*"))
	for _, m := range matches {
		if fi, err := os.Lstat(m); err == nil && time.Since(fi.ModTime()) > age {
			os.RemoveAll(m)
		}
	}
}

// lookAbs finds a program in PATH and makes its path absolute.
func lookAbs(o Options, name string) (string, error) {
	p, err := o.LookPath(name)
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}

// nodeAndNPM finds node and npm, installing them with apt-get when they are
// missing and that is allowed.
func nodeAndNPM(ctx context.Context, o Options, progress io.Writer) (node, npm string, err error) {
	node, nerr := lookAbs(o, "node")
	npm, perr := lookAbs(o, "npm")
	if nerr == nil && perr == nil {
		return node, npm, nil
	}
	var pkgs, missing []string
	if nerr != nil {
		pkgs, missing = append(pkgs, "nodejs"), append(missing, "node")
	}
	if perr != nil {
		pkgs, missing = append(pkgs, "npm"), append(missing, "npm")
	}
	if apt, ok := aptGet(o); ok {
		fmt.Fprintf(progress, "setup: the Playwright driver needs node and npm; installing %s with apt-get (DEBIAN_FRONTEND=noninteractive)\n", strings.Join(pkgs, " "))
		if err := aptInstall(ctx, o, apt, progress, pkgs...); err != nil {
			return "", "", &MissingError{Component: ComponentDriver, Reason: "installing " + strings.Join(pkgs, " ") + " with apt-get failed",
				Err: err, Hint: "install Node.js 18 or later and npm, or set " + EnvDriver + "=/path/to/driver"}
		}
		node, nerr = lookAbs(o, "node")
		npm, perr = lookAbs(o, "npm")
		if nerr == nil && perr == nil {
			return node, npm, nil
		}
	}
	hint := "install Node.js 18 or later and npm, then run aegis setup again, or set " + EnvDriver + "=/path/to/driver"
	if _, debian := debianLike(o); debian {
		hint = "run: sudo apt-get install nodejs npm, then aegis setup again, or set " + EnvDriver + "=/path/to/driver"
	} else if o.goos == "darwin" {
		hint = "run: brew install node, then aegis setup again, or set " + EnvDriver + "=/path/to/driver"
	}
	return "", "", &MissingError{
		Component: ComponentDriver,
		Reason:    "building it needs node and npm, not found in PATH (missing: " + strings.Join(missing, ", ") + ")",
		Err:       errors.Join(nerr, perr),
		Hint:      hint,
	}
}

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

// browserVersionTimeout bounds one "browser --version" (a cold start of a
// big binary from disk can take a few seconds).
const browserVersionTimeout = 60 * time.Second

// DefaultBrowserCandidates returns where to look for a browser on goos,
// first match wins: absolute paths as they are, bare names via PATH. The
// real Chromium binary comes before the Debian wrapper script
// (/usr/bin/chromium), which adds flags of its own and prints shell errors.
func DefaultBrowserCandidates(goos string, getenv func(string) string) []string {
	switch goos {
	case "darwin":
		var c []string
		apps := []string{
			"Chromium.app/Contents/MacOS/Chromium",
			"Google Chrome.app/Contents/MacOS/Google Chrome",
			"Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing",
			"Microsoft Edge.app/Contents/MacOS/Microsoft Edge",
			"Brave Browser.app/Contents/MacOS/Brave Browser",
		}
		for _, a := range apps {
			c = append(c, "/Applications/"+a)
			if home := getenv("HOME"); home != "" {
				c = append(c, home+"/Applications/"+a)
			}
		}
		return append(c, "chromium", "google-chrome", "chrome")
	case "windows":
		var c []string
		for _, env := range []string{"LOCALAPPDATA", "ProgramFiles", "ProgramFiles(x86)"} {
			base := getenv(env)
			if base == "" {
				continue
			}
			c = append(c,
				base+`\Chromium\Application\chrome.exe`,
				base+`\Google\Chrome\Application\chrome.exe`,
				base+`\Microsoft\Edge\Application\msedge.exe`,
			)
		}
		return append(c, "chrome.exe", "chromium.exe", "msedge.exe")
	default: // linux and the BSDs
		return []string{
			"/usr/lib/chromium/chromium", // Debian's real binary
			"/usr/lib64/chromium-browser/chromium-browser",
			"/usr/lib/chromium-browser/chromium-browser",
			"/opt/google/chrome/chrome", // Google's real binary
			"chromium",
			"google-chrome",
			"google-chrome-stable",
			"chromium-browser",
			"chrome",
			"/snap/bin/chromium",
			"/usr/bin/chromium",
			"/usr/bin/google-chrome",
			"/usr/bin/chromium-browser",
			"/opt/microsoft/msedge/msedge",
			"microsoft-edge",
			"/opt/brave.com/brave/brave",
			"brave-browser",
		}
	}
}

// LocateBrowser finds and verifies a browser without installing or writing
// anything: $AEGIS_CHROMIUM when set (never falling back when it is wrong),
// else the first working one of Options.BrowserCandidates.
func LocateBrowser(ctx context.Context, opts Options) (Browser, error) {
	return locate(ctx, opts, locateBrowser)
}

// EnsureBrowser is LocateBrowser, then, when no browser is found and the
// process is root on a Debian-like system with apt-get, "apt-get update" and
// "apt-get install -y chromium" (waiting up to Options.AptLockTimeout for
// another apt run to finish), with apt's output streamed to progress.
func EnsureBrowser(ctx context.Context, opts Options, progress io.Writer) (Browser, error) {
	return ensure(ctx, opts, progress, ensureBrowser)
}

// ensureBrowser is EnsureBrowser's work, in ensure's frame.
func ensureBrowser(ctx context.Context, o Options, st *stamps, progress io.Writer) (Browser, error) {
	b, err := locateBrowser(ctx, o, st)
	var me *MissingError
	if err == nil || !errors.As(err, &me) {
		return b, err
	}
	apt, ok := aptGet(o)
	if !ok {
		return Browser{}, err
	}
	fmt.Fprintf(progress, "setup: no Chrome or Chromium found; installing %s with apt-get (DEBIAN_FRONTEND=noninteractive), this can take a few minutes\n", AptBrowserPackage)
	if ierr := aptInstall(ctx, o, apt, progress, AptBrowserPackage); ierr != nil {
		return Browser{}, &MissingError{
			Component: ComponentBrowser,
			Reason:    "installing " + AptBrowserPackage + " with apt-get failed",
			Err:       ierr,
			Hint:      "run: apt-get install " + AptBrowserPackage + " and read its errors, or set " + EnvBrowser + "=/path/to/chrome",
		}
	}
	b, err = locateBrowser(ctx, o, st)
	if err != nil {
		return Browser{}, fmt.Errorf("after apt-get install %s: %w", AptBrowserPackage, err)
	}
	b.Source = SourceInstalled
	return b, nil
}

func locateBrowser(ctx context.Context, o Options, st *stamps) (Browser, error) {
	if p := o.Getenv(EnvBrowser); p != "" {
		hint := "set " + EnvBrowser + " to a Chrome or Chromium executable, or unset it to search the usual places"
		if err := checkExecutable(p, o.goos); err != nil {
			return Browser{}, &InvalidError{Component: ComponentBrowser, Path: p, Env: EnvBrowser, Err: err, Hint: hint}
		}
		b, err := verifyBrowser(ctx, o, st, p)
		if err != nil {
			return Browser{}, &InvalidError{Component: ComponentBrowser, Path: p, Env: EnvBrowser, Err: err, Hint: hint}
		}
		b.Source = SourceEnv
		return b, nil
	}
	var broken error
	for _, c := range o.BrowserCandidates {
		p := c
		if !filepath.IsAbs(c) {
			found, err := o.LookPath(c)
			if err != nil {
				continue
			}
			if p, err = filepath.Abs(found); err != nil {
				continue
			}
		}
		if checkExecutable(p, o.goos) != nil {
			continue
		}
		b, err := verifyBrowser(ctx, o, st, p)
		if err != nil {
			if ctx.Err() != nil {
				return Browser{}, fmt.Errorf("check browser %s: %w", p, ctx.Err())
			}
			if broken == nil {
				broken = &InvalidError{Component: ComponentBrowser, Path: p, Err: err,
					Hint: "reinstall it, or set " + EnvBrowser + "=/path/to/chrome"}
			}
			continue
		}
		b.Source = SourceFound
		return b, nil
	}
	if broken != nil {
		return Browser{}, broken
	}
	return Browser{}, &MissingError{
		Component: ComponentBrowser,
		Reason:    "no Chrome or Chromium executable found",
		Hint:      browserHint(o),
	}
}

// browserHint says what to install on this system.
func browserHint(o Options) string {
	set := "or set " + EnvBrowser + "=/path/to/chrome"
	if _, ok := aptGet(o); ok {
		return "run: aegis setup (it installs " + AptBrowserPackage + " with apt-get), " + set
	}
	switch id, debian := debianLike(o); {
	case debian && id == "ubuntu":
		return "install Google Chrome or run: sudo snap install chromium, " + set
	case debian:
		return "run: sudo apt-get install " + AptBrowserPackage + ", " + set
	}
	if o.goos == "darwin" {
		return "install Google Chrome or Chromium (e.g. brew install --cask chromium), " + set
	}
	return "install Chromium or Google Chrome, " + set
}

// checkExecutable tells why p is not a runnable file.
func checkExecutable(p, goos string) error {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("does not exist: %w", err)
	case err != nil:
		return err
	case fi.IsDir():
		return errors.New("is a directory, not an executable")
	case !fi.Mode().IsRegular():
		return fmt.Errorf("is not a regular file (mode %s)", fi.Mode())
	case goos != "windows" && fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("is not executable (mode %s)", fi.Mode().Perm())
	}
	return nil
}

// verifyBrowser runs "p --version", or takes the answer from the stamps
// when p has not changed since it was last checked.
func verifyBrowser(ctx context.Context, o Options, st *stamps, p string) (Browser, error) {
	key, err := fileKey(p)
	if err != nil {
		return Browser{}, err
	}
	id := "browser:" + p
	if e, ok := st.get(id, key); ok {
		return Browser{Path: p, Product: e.Product, Version: e.Version}, nil
	}
	vctx, cancel := context.WithTimeout(ctx, browserVersionTimeout)
	defer cancel()
	out, err := o.Runner.Run(vctx, Cmd{Path: p, Args: []string{"--version"}})
	if err != nil {
		return Browser{}, fmt.Errorf("does not run: %w", err)
	}
	product, version, err := parseBrowserVersion(string(out))
	if err != nil {
		return Browser{}, err
	}
	st.put(id, stampEntry{Key: key, Product: product, Version: version})
	return Browser{Path: p, Product: product, Version: version}, nil
}

var browserVersionRE = regexp.MustCompile(`^\s*(.*?)\s*\b(\d+\.\d+\.\d+(?:\.\d+)?)\b`)

// parseBrowserVersion reads "Chromium 156.0.8078.73 built on Debian ..." or
// "Google Chrome 120.0.6099.109" into product and version.
func parseBrowserVersion(out string) (product, version string, err error) {
	for line := range strings.SplitSeq(out, "\n") {
		if m := browserVersionRE.FindStringSubmatch(line); m != nil {
			product = strings.TrimSpace(m[1])
			if product == "" {
				product = "Browser"
			}
			return product, m[2], nil
		}
	}
	return "", "", fmt.Errorf("--version printed no version: %q", strings.TrimSpace(out))
}

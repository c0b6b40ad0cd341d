package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aegis-run/aegis/setup"
)

func init() {
	register(command{
		name:    "setup",
		summary: "install and verify the browser and the Playwright driver",
		run:     runSetup,
	})
}

// setupOptions returns the environment aegis setup works in; tests replace it.
var setupOptions = func() setup.Options { return setup.Options{} }

const setupUsage = `[--check] [--json]

Makes a Chrome/Chromium browser and the Playwright driver ` + setup.DriverVersion + ` available and
verifies both, printing one line per component.

Browser, first match wins: $` + setup.EnvBrowser + `; an installed Chromium or Chrome
(/usr/lib/chromium/chromium, google-chrome, chromium-browser, ... in PATH and the usual
places, macOS app bundles too); else, as root on Debian/Ubuntu, apt-get install -y ` + setup.AptBrowserPackage + `.

Playwright driver: $` + setup.EnvDriver + `; else the cached one in
<user cache dir>/aegis/` + setup.DriverDirName + `; else it is built there from the npm
registry (npm install ` + setup.DriverPackage + ` plus a symlink to node). Nothing is downloaded
from anywhere else.

Environment:
  ` + setup.EnvBrowser + `=PATH             use this browser executable (must exist and run)
  ` + setup.EnvDriver + `=DIR     use this driver directory (package/cli.js + node,
                                     version ` + setup.DriverVersion + ` exactly)
  XDG_CACHE_HOME, HOME               locate the user cache directory
  npm's own configuration (registry, proxy) applies to the driver build.

Exit status: 0 everything available, 1 something missing or broken (hints printed),
2 usage.`

// setupReport is the --json output.
type setupReport struct {
	OK       bool           `json:"ok"`
	Check    bool           `json:"check_only"`
	Browser  *setup.Browser `json:"browser"`
	Driver   *setup.Driver  `json:"driver"`
	Problems []setupProblem `json:"problems,omitempty"`
}

type setupProblem struct {
	Component string `json:"component"`
	Kind      string `json:"kind"` // "missing", "invalid" or "error"
	Error     string `json:"error"`
	Hint      string `json:"hint,omitempty"`
}

func runSetup(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlagSet("setup", setupUsage, stdio)
	check := fs.Bool("check", false, "only report what is there; install nothing, change nothing (exit 1 when something is missing)")
	asJSON := fs.Bool("json", false, "print the result as JSON on stdout")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return usageError("setup takes no arguments, got %q", fs.Args())
	}
	opts := setupOptions()
	var (
		b          setup.Browser
		d          setup.Driver
		berr, derr error
	)
	if *check {
		b, berr = setup.LocateBrowser(ctx, opts)
		d, derr = setup.LocateDriver(ctx, opts)
	} else {
		b, berr = setup.EnsureBrowser(ctx, opts, stdio.Err)
		d, derr = setup.EnsureDriver(ctx, opts, stdio.Err)
	}

	rep := setupReport{OK: berr == nil && derr == nil, Check: *check}
	if berr == nil {
		rep.Browser = &b
	} else {
		rep.Problems = append(rep.Problems, setupProblemOf(setup.ComponentBrowser, berr))
	}
	if derr == nil {
		rep.Driver = &d
	} else {
		rep.Problems = append(rep.Problems, setupProblemOf(setup.ComponentDriver, derr))
	}

	if *asJSON {
		enc := json.NewEncoder(stdio.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		if berr == nil {
			fmt.Fprintf(stdio.Out, "%s: %s\n", setup.ComponentBrowser, b)
		}
		if derr == nil {
			fmt.Fprintf(stdio.Out, "%s: %s\n", setup.ComponentDriver, d)
		}
		for _, p := range rep.Problems {
			fmt.Fprintf(stdio.Err, "%s: %s: %s\n", p.Component, strings.ToUpper(p.Kind), p.Error)
			if p.Hint != "" {
				fmt.Fprintf(stdio.Err, "  hint: %s\n", p.Hint)
			}
		}
	}
	if !rep.OK {
		return exitCode(ExitFailure, nil)
	}
	return nil
}

// setupProblemOf turns a component's error into a report line; the hint is
// shown apart from the message.
func setupProblemOf(component string, err error) setupProblem {
	p := setupProblem{Component: component, Kind: "error", Error: err.Error(), Hint: setup.Hint(err)}
	var me *setup.MissingError
	var ie *setup.InvalidError
	switch {
	case errors.As(err, &me):
		msg := me.Reason
		if me.Err != nil {
			msg += ": " + me.Err.Error()
		}
		p.Kind, p.Error = "missing", msg
	case errors.As(err, &ie):
		where := ie.Path
		if ie.Env != "" {
			where = ie.Env + "=" + ie.Path
		}
		p.Kind, p.Error = "invalid", where+": "+ie.Err.Error()
	}
	return p
}

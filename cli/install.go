package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/aegis-run/aegis/extension"
	"github.com/aegis-run/aegis/nativehost"
)

func init() {
	register(command{
		name:    "install",
		summary: "install the native messaging host manifest for the extension",
		run:     runInstall,
	})
	register(command{
		name:    "uninstall",
		summary: "remove the native messaging host manifest",
		run:     runUninstall,
	})
}

const installUsage = `[--browser chrome|chromium|edge|brave] [--system] [--extension-id ID]... [--dir DIR] [--json]

Writes the host manifest (` + nativehost.HostName + `.json) where the browser looks for
native messaging hosts, pointing at this aegis executable and allowing the aegis
extension (its ID is fixed by the key in its manifest; add others with
--extension-id), and prints its path. On Windows it also writes the registry key
that names the manifest. --system installs for every user (root/administrator).
--dir writes into DIR instead, such as <user-data-dir>/NativeMessagingHosts of a
browser started with --user-data-dir; the path is recorded in the host
configuration so that the host's origin check finds it.

The host configuration file (0600) is created if missing; put the model
settings and secrets there, never in the extension.

Then: "aegis extension unpack DIR" and load DIR in chrome://extensions
(Developer mode, "Load unpacked").`

type installFlags struct {
	browser string
	system  bool
	dir     string
	ids     []string
	json    bool
}

func (f *installFlags) options() (nativehost.InstallOptions, error) {
	b, err := nativehost.ParseBrowser(f.browser)
	if err != nil {
		return nativehost.InstallOptions{}, usageError("%v", err)
	}
	o := nativehost.InstallOptions{Browser: b, System: f.system, ExtensionIDs: f.ids}
	if f.dir != "" {
		d, err := filepath.Abs(f.dir)
		if err != nil {
			return o, usageError("--dir: %v", err)
		}
		o.Dir = d
	}
	if len(o.ExtensionIDs) == 0 {
		o.ExtensionIDs = []string{extension.ID()}
	}
	return o, nil
}

func installFlagSet(name, usage string, stdio Stdio, f *installFlags, withIDs bool) *flag.FlagSet {
	fs := newFlagSet(name, usage, stdio)
	fs.StringVar(&f.browser, "browser", "chrome", "the `browser`: chrome, chromium, edge or brave")
	fs.BoolVar(&f.system, "system", false, "for every user (needs root or administrator)")
	fs.StringVar(&f.dir, "dir", "", "write the manifest into `DIR` instead of the browser's directory")
	fs.BoolVar(&f.json, "json", false, "print the result as JSON")
	if withIDs {
		fs.Func("extension-id", "allow the extension `ID` (repeatable; default the aegis extension, "+extension.ID()+")", func(s string) error {
			if !nativehost.ValidExtensionID(s) {
				return fmt.Errorf("%q is not an extension id (32 letters a-p)", s)
			}
			if !slices.Contains(f.ids, s) {
				f.ids = append(f.ids, s)
			}
			return nil
		})
	}
	return fs
}

func runInstall(ctx context.Context, args []string, stdio Stdio) error {
	var f installFlags
	fs := installFlagSet("install", installUsage, stdio, &f, true)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return usageError("install takes no arguments")
	}
	o, err := f.options()
	if err != nil {
		return err
	}
	res, err := nativehost.Install(o)
	if err != nil {
		return exitCode(ExitFailure, err)
	}
	cfgPath, err := nativehost.ConfigPath()
	if err != nil {
		return exitCode(ExitFailure, err)
	}
	cfg, err := nativehost.LoadConfig(cfgPath)
	if err != nil {
		return exitCode(ExitFailure, fmt.Errorf("the manifest is written (%s), but %w", res.Path, err))
	}
	_, statErr := os.Stat(cfgPath)
	if o.Dir != "" && !slices.Contains(cfg.Manifests, res.Path) {
		cfg.Manifests = append(cfg.Manifests, res.Path)
	}
	if statErr != nil || o.Dir != "" {
		if err := nativehost.SaveConfig(cfgPath, cfg); err != nil {
			return exitCode(ExitFailure, err)
		}
	}
	if f.json {
		return printJSON(stdio, map[string]any{"manifest": res.Path, "registry": res.Registry, "config": cfgPath, "allowedOrigins": res.Manifest.AllowedOrigins, "host": res.Manifest.Path})
	}
	fmt.Fprintln(stdio.Out, res.Path)
	if res.Registry != "" {
		fmt.Fprintf(stdio.Err, "registry key: %s\n", res.Registry)
	}
	fmt.Fprintf(stdio.Err, "host: %s\nallowed origins: %v\nconfiguration: %s (model settings and secrets go there)\n", res.Manifest.Path, res.Manifest.AllowedOrigins, cfgPath)
	return nil
}

func runUninstall(ctx context.Context, args []string, stdio Stdio) error {
	var f installFlags
	fs := installFlagSet("uninstall", "[--browser chrome|chromium|edge|brave] [--system] [--dir DIR] [--json]\n\nRemoves the host manifest \"aegis install\" wrote (and its registry key on Windows),\nand prints what it removed.", stdio, &f, false)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return usageError("uninstall takes no arguments")
	}
	o, err := f.options()
	if err != nil {
		return err
	}
	removed, err := nativehost.Uninstall(o)
	if err != nil {
		return exitCode(ExitFailure, err)
	}
	if cfgPath, err := nativehost.ConfigPath(); err == nil {
		if cfg, err := nativehost.LoadConfig(cfgPath); err == nil {
			keep := cfg.Manifests[:0]
			changed := false
			for _, m := range cfg.Manifests {
				if slices.Contains(removed, m) {
					changed = true
					continue
				}
				keep = append(keep, m)
			}
			if changed {
				cfg.Manifests = keep
				_ = nativehost.SaveConfig(cfgPath, cfg)
			}
		}
	}
	if f.json {
		if removed == nil {
			removed = []string{}
		}
		return printJSON(stdio, map[string]any{"removed": removed})
	}
	if len(removed) == 0 {
		fmt.Fprintln(stdio.Err, "nothing to remove")
	}
	for _, r := range removed {
		fmt.Fprintln(stdio.Out, r)
	}
	return nil
}

func printJSON(stdio Stdio, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return exitCode(ExitFailure, err)
	}
	fmt.Fprintln(stdio.Out, string(b))
	return nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

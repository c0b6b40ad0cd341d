package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/aegis-run/aegis/extension"
)

func init() {
	register(command{
		name:    "extension",
		summary: "write the embedded Chrome extension (unpack DIR) or print its id",
		run:     runExtension,
	})
}

const extensionUsage = `unpack DIR | id

unpack DIR  writes the aegis extension (embedded in this binary) into DIR for
            chrome://extensions, Developer mode, "Load unpacked"; prints DIR.
            An earlier unpack of the extension is replaced; a DIR holding
            another extension is refused.
id          prints the extension's ID (fixed by the key in its manifest).

Then "aegis install" lets the extension start aegis.`

func runExtension(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlagSet("extension", extensionUsage, stdio)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() == 1 && fs.Arg(0) == "id":
		fmt.Fprintln(stdio.Out, extension.ID())
		return nil
	case fs.NArg() == 2 && fs.Arg(0) == "unpack":
		dir, err := filepath.Abs(fs.Arg(1))
		if err != nil {
			return usageError("%v", err)
		}
		if err := extension.Unpack(dir); err != nil {
			return exitCode(ExitFailure, err)
		}
		fmt.Fprintln(stdio.Out, dir)
		fmt.Fprintf(stdio.Err, "extension %s written: load it in chrome://extensions (Developer mode, \"Load unpacked\"), then run \"aegis install\"\n", extension.ID())
		return nil
	}
	fs.Usage()
	return usageError("extension wants \"unpack DIR\" or \"id\"")
}

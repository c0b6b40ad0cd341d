package cli

import (
	"context"
	"fmt"

	"github.com/aegis-run/aegis/demosite"
)

func init() {
	register(command{
		name:    "demo",
		summary: "serve the embedded demo shop (--serve ADDR)",
		run:     runDemo,
	})
}

// demoOptions are the flags of "aegis demo". The full demo run (planner,
// navigator, gate, driver and evidence on the demo shop) will be added
// here; --serve runs only the site.
type demoOptions struct {
	serve string
}

func runDemo(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlagSet("demo", "--serve ADDR\n\n--serve serves the embedded demo shop on ADDR (such as 127.0.0.1:8080, or 127.0.0.1:0 for a free port)\nuntil interrupted, and prints its URL.", stdio)
	var o demoOptions
	fs.StringVar(&o.serve, "serve", "", "serve the demo site on `ADDR` until interrupted")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return usageError("demo takes no arguments, got %d", fs.NArg())
	}
	if o.serve == "" {
		fs.Usage()
		return usageError("demo needs --serve ADDR (the full demo run is not built yet)")
	}
	return serveDemo(ctx, o.serve, stdio)
}

// serveDemo serves the demo site until ctx ends.
func serveDemo(ctx context.Context, addr string, stdio Stdio) error {
	s, err := demosite.Start(ctx, addr)
	if err != nil {
		return exitCode(ExitFailure, err)
	}
	fmt.Fprintf(stdio.Out, "aegis demo site: %s/\n", s.URL())
	fmt.Fprintln(stdio.Err, "serving until interrupted (Ctrl-C)")
	<-ctx.Done()
	if err := s.Close(); err != nil {
		return exitCode(ExitFailure, err)
	}
	return nil
}

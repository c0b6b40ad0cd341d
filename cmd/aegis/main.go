// Command aegis is a governed browser agent: a Planner and a Navigator propose
// browser actions, an OPA policy gates every one of them, a driver runs the
// allowed ones, and a hash-chained evidence bundle records it all.
//
// Run "aegis help" for the commands.
package main

import (
	"context"
	"os"

	"github.com/aegis-run/aegis/cli"
)

func main() {
	ctx, stop := cli.InterruptContext(context.Background(), os.Stderr)
	code := cli.Run(ctx, os.Args[1:], cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}

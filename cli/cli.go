// Package cli implements the aegis command line: it parses arguments, hands
// the work to the packages that do it, and turns their errors into exit codes.
// Nothing here calls os.Exit; Run returns the code so tests can drive every
// command in-process with their own readers and writers.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Exit codes shared by every command. Commands with richer outcomes (run,
// verify) document their own codes on top of these.
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // the command ran and the answer is "no" (invalid, denied)
	ExitUsage   = 2 // bad arguments, unreadable or malformed input
)

// Stdio holds the streams a command reads and writes. Tests pass buffers.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Version is the aegis version, set at build time with
// -ldflags "-X github.com/aegis-run/aegis/cli.Version=v1.2.3".
var Version = "v0.1.0-dev"

// command is one subcommand of aegis.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, io Stdio) error
	// subcommands are the words run dispatches on before any flag
	// ("policy eval"): help gives -h after them.
	subcommands []string
}

// commands is filled by the init functions of the files that define them.
var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("cli: duplicate command " + c.name)
	}
	commands[c.name] = c
}

// exitError carries an exit code and an optional message up to Run.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError returns an error that makes Run print the message and exit 2.
func usageError(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// exitCode returns an error that makes Run exit with code. A nil err exits
// silently (the command has already said what it needed to say).
func exitCode(code int, err error) error { return &exitError{code: code, err: err} }

// Run executes the aegis command line args (without the program name) and
// returns the process exit code.
func Run(ctx context.Context, args []string, stdio Stdio) int {
	if stdio.In == nil {
		stdio.In = strings.NewReader("")
	}
	if stdio.Out == nil {
		stdio.Out = io.Discard
	}
	if stdio.Err == nil {
		stdio.Err = io.Discard
	}
	if len(args) == 0 {
		printHelp(stdio.Err)
		return ExitUsage
	}
	if isHostOrigin(args[0]) {
		// Chrome started aegis as a native messaging host (host.go).
		return finish(stdio, runHost(ctx, args, stdio))
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		return finish(stdio, runHelp(ctx, rest, stdio))
	case "version", "-version", "--version":
		fmt.Fprintf(stdio.Out, "aegis %s\n", Version)
		return ExitOK
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stdio.Err, "aegis: unknown command %q%s\n", name, didYouMean(name, topics()))
		fmt.Fprintf(stdio.Err, "Usage: aegis COMMAND [flags] [args]\nRun \"aegis help\" for the commands.\n")
		return ExitUsage
	}
	err := c.run(ctx, rest, stdio)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		// What a command made of Ctrl-C ("context canceled") is an
		// interruption.
		err = asInterrupted(ctx, name, err)
	}
	return finish(stdio, err)
}

func finish(stdio Stdio, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && !errors.Is(ee.err, flag.ErrHelp) {
			fmt.Fprintf(stdio.Err, "aegis: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stdio.Err, "aegis: %v\n", err)
	return ExitFailure
}

// runHelp prints the help of a topic (a command, with its subcommand if
// any: "help policy eval") on stdout, or the general help without one. An
// unknown topic is a usage error naming the known ones.
func runHelp(ctx context.Context, topic []string, stdio Stdio) error {
	if len(topic) == 0 {
		printHelp(stdio.Out)
		return nil
	}
	switch topic[0] {
	case "help":
		printHelp(stdio.Out)
		return nil
	case "version":
		fmt.Fprintln(stdio.Out, "Usage: aegis version\n\nPrints the version of aegis.")
		return nil
	}
	c, ok := commands[topic[0]]
	if !ok {
		return usageError("no help topic %q%s; the topics are: %s", topic[0], didYouMean(topic[0], topics()), strings.Join(topics(), ", "))
	}
	// -h goes right after the command's names, so that the command
	// prints its help and never runs with the other words as arguments
	// ("help extension unpack" must not unpack into a directory "-h").
	var args []string
	if len(topic) > 1 && len(c.subcommands) > 0 {
		if !slices.Contains(c.subcommands, topic[1]) {
			return usageError("no help topic %q%s; the subcommands of %s are: %s", topic[0]+" "+topic[1],
				didYouMean(topic[1], c.subcommands), topic[0], strings.Join(c.subcommands, ", "))
		}
		args = append(args, topic[1])
	}
	return c.run(ctx, append(args, "-h"), stdio)
}

// topics returns the command names help knows, sorted.
func topics() []string {
	names := []string{"help", "version"}
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func printHelp(w io.Writer) {
	fmt.Fprintf(w, "aegis %s: a governed browser agent\n\nUsage: aegis COMMAND [flags] [args]\n\nCommands:\n", Version)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "  %-10s %s\n  %-10s %s\n\nRun \"aegis help COMMAND\" for a command's flags.\n",
		"version", "print the version", "help", "print this help")
}

// flagHelp holds what a flag set made by newFlagSet needs to print its
// help (parseFlags): *flag.FlagSet → *commandHelp.
var flagHelp sync.Map

// commandHelp is the help of one command's flag set.
type commandHelp struct {
	name, usage string
	stdio       Stdio
}

// synopsis is the usage's first lines, up to its first blank line: the
// forms of the command line.
func (h *commandHelp) synopsis() string {
	syn, _, _ := strings.Cut(h.usage, "\n\n")
	return syn
}

// short prints the synopsis and where the rest is, on stderr: what a
// person sees after a wrong flag or argument.
func (h *commandHelp) short() {
	fmt.Fprintf(h.stdio.Err, "Usage: aegis %s %s\nRun \"aegis help %s\" for the flags and what they do.\n", h.name, h.synopsis(), h.name)
}

// full prints the whole help, flags included, on stdout: what a person
// asked for with -h or aegis help COMMAND.
func (h *commandHelp) full(fs *flag.FlagSet) {
	fmt.Fprintf(h.stdio.Out, "Usage: aegis %s %s\n", h.name, h.usage)
	if hasFlags(fs) {
		fmt.Fprintln(h.stdio.Out, "\nFlags:")
		fs.SetOutput(h.stdio.Out)
		fs.PrintDefaults()
		fs.SetOutput(h.stdio.Err)
	}
}

// newFlagSet returns a flag set whose errors are usage errors: the flag
// package's message, then a short usage (its Usage) on stderr. Its -h
// prints the full help on stdout (parseFlags).
func newFlagSet(name, usage string, stdio Stdio) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	h := &commandHelp{name: name, usage: usage, stdio: stdio}
	flagHelp.Store(fs, h)
	fs.Usage = h.short
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseFlags parses args with fs; -h prints the full help on stdout and is
// flag.ErrHelp (success); anything else wrong is a usage error, said with
// the short usage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {} // said below, by what went wrong
	err := fs.Parse(args)
	fs.Usage = usage
	if err == nil {
		return nil
	}
	v, _ := flagHelp.Load(fs)
	h, _ := v.(*commandHelp)
	if errors.Is(err, flag.ErrHelp) {
		if h != nil {
			h.full(fs)
		}
		return err
	}
	usage() // the flag package has printed the reason
	return exitCode(ExitUsage, nil)
}

// readInput reads a whole file, or stdin when path is "-".
func readInput(path string, stdio Stdio) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdio.In)
	}
	return os.ReadFile(path)
}

// flagSet reports whether the flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// Package app is the yt-flow command line as a library: a binary that registers its own
// process functions with package flow and calls Main gets every yt-flow command (run,
// validate, local, start, stop, status, controller, worker …) running those functions.
//
//	package main
//
//	import (
//		"github.com/ytflow/yt-flow/app"
//		_ "example.com/mycount/functions" // registers the process functions with flow
//	)
//
//	func main() { app.Main() }
//
// The yt-flow binary itself (cmd/yt-flow) is such a main, linking the examples' functions.
//
// Subcommands register themselves in init functions of this package (one file each),
// so that every command lives next to its flags and help text. This is the layer that reads
// flags, the environment and config files (config.go); the packages below take plain
// config structs.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// command is one yt-flow subcommand.
type command struct {
	// name is the word after "yt-flow".
	name string
	// summary is the one-line help shown by "yt-flow help".
	summary string
	// setup defines the command's flags. The command line of a command with a setup is
	// parsed, layered over the environment and the config file (config.go) and checked
	// before the runFunc setup returned runs.
	setup setupFunc
	// run executes a command without setup with the arguments after its name.
	run func(ctx context.Context, env *environ, args []string) int
	// examples are command lines shown by --help after the flags.
	examples []string
}

// setupFunc defines a command's flags in fs and returns the function that runs the command
// once they hold their effective values (positional arguments: fs.Args()).
type setupFunc func(fs *flag.FlagSet, env *environ) runFunc

// runFunc runs a command and returns its exit code: 0 success, 1 failure, 2 usage error.
type runFunc func(ctx context.Context, s *settings) int

// newFlagSet is the flag set of command name; its errors go to env.stderr.
func newFlagSet(name string, env *environ) *flag.FlagSet {
	fs := flag.NewFlagSet("yt-flow "+name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	return fs
}

// parseSettings parses args into fs (defined by a setup), adds --config and gives every flag
// its effective value. It returns the settings, or the exit code to use (-1 to go on).
func parseSettings(name string, fs *flag.FlagSet, env *environ, args []string) (*settings, int) {
	addConfigFlag(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, 0
		}
		return nil, 2
	}
	s, err := configure(name, fs, env)
	if err != nil {
		msg := err.Error()
		// No message quotes a secret; should a decoder's ever quote the line it fails on,
		// the tokens of the environment are still not shown.
		for _, n := range envNames("token") {
			if v := env.getenv(n); v != "" {
				msg = strings.ReplaceAll(msg, v, "********")
			}
		}
		for _, line := range strings.Split(msg, "\n") {
			fmt.Fprintf(env.stderr, "%s: %s\n", fs.Name(), line)
		}
		return nil, 2
	}
	return s, -1
}

// environ is what a command may touch of the outside world.
type environ struct {
	// stdin is the command's input (set-pipeline-spec reads a spec from it); nil means
	// os.Stdin.
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

var commands = map[string]*command{}

// register adds a subcommand; it panics on a duplicate name (a programming error).
func register(c *command) {
	if _, ok := commands[c.name]; ok {
		panic("yt-flow: duplicate command " + c.name)
	}
	commands[c.name] = c
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: yt-flow <command> [arguments]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	width := 12
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s %s\n", width, n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'yt-flow <command> --help' for a command's flags.")
}

// Run runs the command line args (without the program name: "run", "--spec", "p.yson")
// with the process environment and returns the exit code: 0 success, 1 failure, 2 usage
// error, 130 a `run` stopped by cancelling ctx. Cancelling ctx is how a caller interrupts
// a long-running command (run, local, controller, worker); Main cancels it on SIGINT and
// SIGTERM.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runMain(ctx, &environ{stdout: stdout, stderr: stderr, getenv: os.Getenv}, args)
}

// Main runs the command line of the process (os.Args) and exits with its exit code.
func Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// runMain is Run with the environment as an input, for tests.
func runMain(ctx context.Context, env *environ, args []string) int {
	if len(args) < 1 {
		usage(env.stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "--help":
		usage(env.stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(env.stderr, "yt-flow: unknown command %q\n", args[0])
		usage(env.stderr)
		return 2
	}
	if c.setup == nil {
		code := c.run(ctx, env, args[1:])
		if len(c.examples) > 0 && slices.ContainsFunc(args[1:], func(a string) bool { return a == "-h" || a == "-help" || a == "--help" || a == "--h" }) {
			printExamples(env, c)
		}
		return code
	}
	fs := newFlagSet(c.name, env)
	run := c.setup(fs, env)
	if len(c.examples) > 0 {
		flags := fs.Usage
		fs.Usage = func() {
			flags()
			printExamples(env, c)
		}
	}
	s, code := parseSettings(c.name, fs, env, args[1:])
	if code >= 0 {
		return code
	}
	return run(ctx, s)
}

// printExamples prints a command's summary and example command lines (after its flags in
// --help).
func printExamples(env *environ, c *command) {
	fmt.Fprintf(env.stderr, "\n%s\n\nexamples:\n", c.summary)
	for _, e := range c.examples {
		fmt.Fprintf(env.stderr, "  %s\n", e)
	}
}

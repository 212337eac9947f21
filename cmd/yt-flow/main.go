// Command yt-flow runs, validates and inspects yt-flow pipelines.
//
// Subcommands register themselves in init functions of this package (one file each),
// so that every command lives next to its flags and help text.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one yt-flow subcommand.
type command struct {
	// name is the word after "yt-flow".
	name string
	// summary is the one-line help shown by "yt-flow help".
	summary string
	// run executes the command with the arguments after its name and returns the exit code:
	// 0 success, 1 failure, 2 usage error.
	run func(ctx context.Context, env *environ, args []string) int
}

// environ is what a command may touch of the outside world.
type environ struct {
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
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'yt-flow <command> --help' for a command's flags.")
}

// runMain is main without os.Exit, for tests.
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
	return c.run(ctx, env, args[1:])
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := &environ{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(runMain(ctx, env, os.Args[1:]))
}

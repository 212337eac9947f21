package app

// Shared parts of the commands named as YTsaurus's `yt flow` names them (get-pipeline-state,
// get-/set-/remove-pipeline-spec, read-states, delete-states, show-logs, describe-pipeline,
// describe-workers, get-worker-backtraces, get-flow-view): the pipeline is given by --path or
// as the one positional argument, the output is YSON (--format json for JSON), and every
// failure is one line on stderr with exit code 1 (2 for usage errors).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/ytstore"
)

// flowCmd holds the flags every such command has.
type flowCmd struct {
	name   string
	pf     pipelineFlags
	format string
	// text allows --format text (the command prints text of its own).
	text bool
}

// define adds --proxy, --token-path, --path and --format to fs, and a usage text with the
// command's synopsis and an example.
func (c *flowCmd) define(fs *flag.FlagSet, name, synopsis string, examples ...string) {
	c.name = name
	c.pf.define(fs)
	formats := "yson (pretty) or json"
	if c.text {
		formats = "yson (pretty), json or text"
	}
	fs.StringVar(&c.format, "format", "yson", "output format: "+formats)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: yt-flow %s [flags] [PATH]\n\n%s\n\nThe pipeline is --path or the one argument after the flags.\n\nexample:\n", name, synopsis)
		for _, e := range examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
		fmt.Fprintln(w, "\nflags:")
		fs.PrintDefaults()
	}
}

// check takes the pipeline path from the one positional argument when --path is not given
// (flags may follow it: they are parsed here, over the settings of s) and checks the flags.
// It returns the exit code to use, or -1 to go on.
func (c *flowCmd) check(fs *flag.FlagSet, s *settings) int {
	if args := fs.Args(); len(args) > 0 && c.pf.path == "" {
		c.pf.path = args[0]
		tokenPath := fs.Lookup("token-path").Value.String()
		if err := fs.Parse(args[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		// A --token-path after the path beats every other origin, as before it.
		if tp := fs.Lookup("token-path").Value.String(); tp != tokenPath {
			s.byKey["token_path"] = setting{value: tp, from: fromFlag, where: "--token-path"}
		}
	}
	if c.format != "yson" && c.format != "json" && (!c.text || c.format != "text") {
		fmt.Fprintf(fs.Output(), "%s: --format must be yson or json, not %q\n", fs.Name(), c.format)
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected arguments %q (one pipeline path: --path or one argument; --help for the flags)\n", fs.Name(), fs.Args())
		return 2
	}
	return c.pf.check(fs, true)
}

// usagef prints a usage error in one line and returns 2.
func (c *flowCmd) usagef(env *environ, format string, args ...any) int {
	fmt.Fprintf(env.stderr, "yt-flow %s: %s\n", c.name, fmt.Sprintf(format, args...))
	return 2
}

// failf prints a failure in one line (the lines of a multi-line error joined with "; ")
// and returns 1.
func (c *flowCmd) failf(env *environ, format string, args ...any) int {
	msg := strings.Join(strings.Fields(strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ; ")), " ")
	fmt.Fprintf(env.stderr, "yt-flow: %s: %s\n", c.name, msg)
	return 1
}

// open opens the store of the pipeline and reads its attributes; a pipeline that does not
// exist is an error saying so.
func (c *flowCmd) open(ctx context.Context, s *settings) (*ytstore.Store, *ytstore.Attributes, error) {
	st, err := openPipelineStore(ctx, s, c.pf.proxy, c.pf.path)
	if err != nil {
		return nil, nil, err
	}
	attrs, err := st.Attributes(ctx)
	if err != nil {
		st.Close()
		if errors.Is(err, ytstore.ErrNotFound) {
			return nil, nil, fmt.Errorf("pipeline %s does not exist", c.pf.path)
		}
		return nil, nil, err
	}
	return st, attrs, nil
}

// view runs a read-only command: it opens the pipeline, builds what it prints with read and
// prints it; every failure is one line on stderr and exit code 1.
func (c *flowCmd) view(ctx context.Context, env *environ, s *settings, read func(context.Context, *ytstore.Store, *ytstore.Attributes) (any, error)) int {
	st, attrs, err := c.open(ctx, s)
	if err != nil {
		return c.failf(env, "%v", err)
	}
	defer st.Close()
	v, err := read(ctx, st, attrs)
	if err != nil {
		return c.failf(env, "%v", err)
	}
	if err := c.emit(env.stdout, v); err != nil {
		return c.failf(env, "%v", err)
	}
	return 0
}

// emit writes v (built of maps, slices and scalars) to w in the command's format.
func (c *flowCmd) emit(w io.Writer, v any) error {
	var out []byte
	var err error
	if c.format == "json" {
		out, err = json.MarshalIndent(v, "", "  ")
	} else {
		out, err = sdkyson.MarshalFormat(v, sdkyson.FormatPretty)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(append(out, '\n'))
	return err
}

// decodeYSON decodes stored YSON (a spec, a state) into plain values for emit; what does not
// decode is shown as its text.
func decodeYSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	var v any
	if err := sdkyson.Unmarshal(b, &v); err != nil {
		return fmt.Sprintf("<undecodable YSON: %v>", err)
	}
	return v
}

// stdin is the command's standard input.
func (env *environ) input() io.Reader {
	if env.stdin != nil {
		return env.stdin
	}
	return os.Stdin
}

// stateOf is the pipeline state as `yt flow get-pipeline-state` names it: lowercase,
// "unknown" before any controller has published one.
func stateOf(a *ytstore.Attributes) string {
	if a.PipelineState == "" {
		return "unknown"
	}
	return strings.ToLower(a.PipelineState)
}

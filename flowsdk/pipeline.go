package flowsdk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/yt/go/schema"
	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/app"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/spec"
	pyson "github.com/ytflow/yt-flow/yson"
)

// Pipeline is a program's computations and streams. Add registers each computation's function
// with package flow at once, under the computation id, so one program has one Pipeline.
type Pipeline struct {
	mu      sync.Mutex
	comps   []string
	streams []Stream
	logger  log.Logger
}

// Option configures a Pipeline.
type Option func(*Pipeline)

// WithLogger makes the pipeline log what it adds to the spec (the streams of AddStreams).
// yt-flow's own processes log as their flags say.
func WithLogger(l log.Logger) Option { return func(p *Pipeline) { p.logger = l } }

// NewPipeline returns an empty pipeline.
func NewPipeline(opts ...Option) *Pipeline {
	p := &Pipeline{}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Add registers computations; ErrDuplicateComputation for an id this program has a process
// function under already (the same computation added twice, or a flow.Register name).
func (p *Pipeline) Add(cs ...*Computation) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		if c == nil {
			return errors.New("flowsdk: Add: nil computation")
		}
		if _, err := flow.Lookup(c.id); err == nil {
			return fmt.Errorf("flowsdk: Add(%q): %w", c.id, ErrDuplicateComputation)
		}
		flow.Register(c.id, c.function())
		p.comps = append(p.comps, c.id)
	}
	return nil
}

// AddStreams declares output streams with their schemas (NewYSONStream). Like Flow's runner,
// Main adds each to the spec's streams when the spec does not declare it; a stream the spec
// declares keeps the spec's schema. ErrDuplicateStream for an id added before.
func (p *Pipeline) AddStreams(ss ...Stream) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	known.Lock()
	defer known.Unlock()
	for _, s := range ss {
		if _, dup := known.streams[s.ID()]; dup {
			return fmt.Errorf("flowsdk: AddStreams(%q): %w", s.ID(), ErrDuplicateStream)
		}
		known.streams[s.ID()] = s.Schema()
		p.streams = append(p.streams, s)
	}
	return nil
}

// Server is Flow's companion gRPC server. yt-flow runs the functions in its worker process and
// needs none: Server returns an error wrapping ErrNotSupported. Use Run.
func (p *Pipeline) Server(opts ...Option) error {
	return fmt.Errorf("flowsdk: Server: a companion server (functions run in the yt-flow worker; use Run): %w", ErrNotSupported)
}

// Run runs the program's command line (os.Args) with Main and exits with its code; SIGINT and
// SIGTERM stop it gracefully.
func (p *Pipeline) Run() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := p.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Main runs a command line and returns its exit code. Flow's form runs the pipeline:
//
//	--config FILE [--validate-only] [yt-flow run flags…]
//
// is `yt-flow run --spec FILE …` (with FILE's local.yson as setup when there is one), or with
// --validate-only `yt-flow validate FILE`. Anything else is a yt-flow command line
// (run, start, worker, controller, …: app.Run). Before a runner config is run, started or
// validated, the streams of AddStreams it does not declare are added to its spec (in a copy
// of the file), and the spec tells each computation's Runtime its key schema, streams and
// states.
func (p *Pipeline) Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	args = slices.Clone(args)
	config, rest, validateOnly, ok := flowArgs(args)
	if ok {
		file, cleanup, err := p.prepare(config)
		if err != nil {
			fmt.Fprintf(stderr, "yt-flow: %v\n", err)
			return 1
		}
		defer cleanup()
		stdout, stderr = renamed(stdout, file, config), renamed(stderr, file, config)
		if validateOnly {
			return app.Run(ctx, append([]string{"validate", file}, rest...), stdout, stderr)
		}
		run := []string{"run", "--spec", file}
		if !hasFlag(rest, "setup") {
			if local := filepath.Join(filepath.Dir(config), "local.yson"); fileExists(local) {
				run = append(run, "--setup", local)
			}
		}
		return app.Run(ctx, append(run, rest...), stdout, stderr)
	}
	if len(args) > 0 && (args[0] == "run" || args[0] == "start") {
		if i := flagIndex(args, "spec"); i >= 0 && i+1 < len(args) {
			file, cleanup, err := p.prepare(args[i+1])
			if err != nil {
				fmt.Fprintf(stderr, "yt-flow: %v\n", err)
				return 1
			}
			defer cleanup()
			stdout, stderr = renamed(stdout, file, args[i+1]), renamed(stderr, file, args[i+1])
			if args[0] == "run" && !hasFlag(args, "setup") && file != args[i+1] {
				if local := filepath.Join(filepath.Dir(args[i+1]), "local.yson"); fileExists(local) {
					args = append(args, "--setup", local)
				}
			}
			args[i+1] = file
		}
	}
	return app.Run(ctx, args, stdout, stderr)
}

// flowArgs finds Flow's --config FILE and --validate-only among args; rest are the others.
func flowArgs(args []string) (config string, rest []string, validateOnly, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case !strings.HasPrefix(a, "-"):
			rest = append(rest, a)
		case name == "config":
			if !hasVal && i+1 < len(args) {
				i++
				val = args[i]
			}
			config, ok = val, true
		case name == "validate-only":
			validateOnly = true
		default:
			rest = append(rest, a)
		}
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return "", nil, false, false // a yt-flow command
	}
	return config, rest, validateOnly, ok && config != ""
}

func flagIndex(args []string, name string) int {
	for i, a := range args {
		if a == "-"+name || a == "--"+name {
			return i
		}
	}
	return -1
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && n == name {
			return true
		}
	}
	return false
}

// renamed returns w, writing the user's file name where a command names the temporary copy
// of it (a name split across two writes stays as it is).
func renamed(w io.Writer, tmp, file string) io.Writer {
	if tmp == file {
		return w
	}
	return renameWriter{w: w, old: []byte(tmp), new: []byte(file)}
}

type renameWriter struct {
	w        io.Writer
	old, new []byte
}

func (r renameWriter) Write(p []byte) (int, error) {
	if _, err := r.w.Write(bytes.ReplaceAll(p, r.old, r.new)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// prepare reads runner config file, adds the undeclared streams of AddStreams to its spec
// (writing the result to a temporary copy whose path it returns; file itself when nothing is
// added) and records what the spec tells each computation. A file that does not parse is
// returned as it is: the command reports its problems.
func (p *Pipeline) prepare(file string) (string, func(), error) {
	noop := func() {}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", noop, fmt.Errorf("read runner config %s: %w", file, err)
	}
	root, err := pyson.Decode(data)
	if err != nil {
		return file, noop, nil
	}
	doc, ok := root.Any().(map[string]any)
	if !ok {
		return file, noop, nil
	}
	st, ok := doc["spec"].(map[string]any)
	if !ok {
		return file, noop, nil
	}
	declared, _ := st["streams"].(map[string]any)
	if declared == nil {
		declared = map[string]any{}
	}
	p.mu.Lock()
	var added []string
	for _, s := range p.streams {
		if _, ok := declared[s.ID()]; !ok {
			declared[s.ID()] = map[string]any{"schema": schemaYSON(s.Schema())}
			added = append(added, s.ID())
		}
	}
	p.mu.Unlock()
	out := file
	cleanup := noop
	if len(added) > 0 {
		st["streams"] = declared
		text, err := sdkyson.MarshalFormat(doc, sdkyson.FormatPretty)
		if err != nil {
			return "", noop, fmt.Errorf("%s: add streams %v: %w", file, added, err)
		}
		dir, err := os.MkdirTemp("", "flowsdk")
		if err != nil {
			return "", noop, err
		}
		out = filepath.Join(dir, filepath.Base(file))
		if err := os.WriteFile(out, text, 0o644); err != nil {
			os.RemoveAll(dir)
			return "", noop, err
		}
		cleanup = func() { os.RemoveAll(dir) }
		if p.logger != nil {
			p.logger.Infof("added streams %v of the program to the spec of %s", added, file)
		}
	}
	if cfg, err := spec.ParseConfigFile(out); err == nil {
		record(cfg.Spec)
	}
	return out, cleanup, nil
}

// schemaYSON is a stream schema as a spec writes it: [{name; type; required}].
func schemaYSON(s schema.Schema) []any {
	cols := make([]any, len(s.Columns))
	for i, c := range s.Columns {
		cols[i] = map[string]any{"name": c.Name, "type": string(c.Type), "required": c.Required}
	}
	return cols
}

// record keeps what spec pl tells each computation's Runtime.
func record(pl *spec.Pipeline) {
	known.Lock()
	defer known.Unlock()
	for id, c := range pl.Computations {
		info := &compInfo{keySchema: c.GroupBy, streams: StreamSpecs{}, outputs: slices.Clone(c.OutputStreamIDs), internalStates: c.InternalStates}
		if info.outputs == nil {
			info.outputs = []string{}
		}
		for _, sid := range append(slices.Clone(c.InputStreamIDs), c.OutputStreamIDs...) {
			if s, ok := pl.Streams[sid]; ok {
				info.streams[sid] = s.Schema
			}
		}
		known.comps[id] = info
	}
}

package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"

	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/spec"
)

func init() {
	register(&command{
		name:     "validate",
		examples: []string{"yt-flow validate examples/word_count/pipeline.yson", "yt-flow validate --kind spec spec.yson"},
		summary:  "check pipeline specs strictly and print every problem with its YSON path",
		setup:    setupValidate,
	})
}

func setupValidate(fs *flag.FlagSet, env *environ) runFunc {
	kind := fs.String("kind", "config", "document kind: config (runner config pipeline.yson), spec (static spec) or dynamic (dynamic spec)")
	verbose := fs.Bool("verbose", false, "also list the keys yt-flow accepts and ignores (\"ignored: …\")")
	checkTables := fs.Bool("check-tables", false, "also check the tables the connectors name on the cluster of --proxy (a service log table's key)")
	var proxy string
	addConnFlags(fs, &proxy, "YTsaurus HTTP proxy for --check-tables (default $YT_PROXY)")
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: yt-flow validate [-kind config|spec|dynamic] [-verbose] [-check-tables -proxy HOST] FILE...")
		fs.PrintDefaults()
	}
	return func(ctx context.Context, s *settings) int {
		var tables *tableChecker
		if *checkTables {
			if proxy == "" {
				fmt.Fprintln(env.stderr, "yt-flow validate: --check-tables needs --proxy (or $YT_PROXY)")
				return 2
			}
			st, err := openPipelineStore(ctx, s, proxy, "//tmp/yt-flow-validate")
			if err != nil {
				return failf(env.stderr, "validate: %v", err)
			}
			defer st.Close()
			tables = &tableChecker{ctx: ctx, cluster: st}
		}
		return runValidate(env, fs, *kind, *verbose, tables)
	}
}

// tableChecker runs the connectors' CheckTables against a cluster.
type tableChecker struct {
	ctx     context.Context
	cluster registry.Cluster
}

// check returns the problems the connector classes of pl find in the tables they name; the
// paths start with prefix ("spec/" in a runner config).
func (c *tableChecker) check(pl *spec.Pipeline, prefix string) []spec.Problem {
	if c == nil || pl == nil {
		return nil
	}
	var out []spec.Problem
	at := func(base string) func(key, format string, args ...any) {
		return func(key, format string, args ...any) {
			out = append(out, spec.Problem{Path: prefix + base + "/" + key, Message: fmt.Sprintf(format, args...)})
		}
	}
	for _, cid := range slices.Sorted(maps.Keys(pl.Computations)) {
		comp := pl.Computations[cid]
		for _, sid := range slices.Sorted(maps.Keys(comp.Sources)) {
			if src := comp.Sources[sid]; src.Class != nil && src.Class.CheckTables != nil {
				src.Class.CheckTables(c.ctx, c.cluster, src.Params, at("computations/"+cid+"/source_streams/"+sid+"/parameters"))
			}
		}
		for _, kid := range slices.Sorted(maps.Keys(comp.Sinks)) {
			if sk := comp.Sinks[kid]; sk.Class != nil && sk.Class.CheckTables != nil {
				sk.Class.CheckTables(c.ctx, c.cluster, sk.Params, at("computations/"+cid+"/sinks/"+kid+"/parameters"))
			}
		}
	}
	return out
}

// runValidate parses each file as a runner config (or, with -kind, a bare static or dynamic
// spec). It prints "FILE: ok" per valid file to stdout and "FILE: path: message" per problem
// to stderr; exit code 1 if any file has a problem, 2 on usage errors. A valid file may also
// get warnings on stderr, "FILE: path: warning: …": a feature yt-flow does not run yet or a
// processing function this program lacks (start and run refuse both). With verbose, the keys
// yt-flow accepts and ignores follow on stdout as "FILE: path: ignored: why".
//
// With tables (--check-tables), a file that parses is also checked against the cluster: the
// problems the connectors find in the tables they name are reported like parse problems.
func runValidate(env *environ, fs *flag.FlagSet, kind string, verbose bool, tables *tableChecker) int {
	// parse returns the document's notes and its unregistered processing functions.
	var parse func([]byte) (spec.Notes, []spec.Problem, error)
	switch kind {
	case "config":
		parse = func(b []byte) (spec.Notes, []spec.Problem, error) {
			c, err := spec.ParseConfig(b)
			if err != nil {
				return spec.Notes{}, nil, err
			}
			if probs := tables.check(c.Spec, "spec/"); len(probs) > 0 {
				return spec.Notes{}, nil, &spec.ValidationError{Problems: probs}
			}
			return c.Notes, c.UnregisteredFunctions(registeredFunction), nil
		}
	case "spec":
		parse = func(b []byte) (spec.Notes, []spec.Problem, error) {
			pl, err := spec.ParsePipeline(b)
			if err != nil {
				return spec.Notes{}, nil, err
			}
			if probs := tables.check(pl, ""); len(probs) > 0 {
				return spec.Notes{}, nil, &spec.ValidationError{Problems: probs}
			}
			return pl.Notes, pl.UnregisteredFunctions(registeredFunction), nil
		}
	case "dynamic":
		parse = func(b []byte) (spec.Notes, []spec.Problem, error) {
			d, err := spec.ParseDynamic(b)
			if err != nil {
				return spec.Notes{}, nil, err
			}
			return d.Notes, nil, nil
		}
	default:
		fmt.Fprintf(env.stderr, "yt-flow validate: unknown -kind %q\n", kind)
		fs.Usage()
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	code := 0
	for _, file := range fs.Args() {
		var notes spec.Notes
		var missing []spec.Problem
		data, err := os.ReadFile(file)
		if err == nil {
			notes, missing, err = parse(data)
		} else {
			err = &spec.ValidationError{Problems: []spec.Problem{{Path: "/", Message: err.Error()}}}
		}
		if err == nil {
			fmt.Fprintf(env.stdout, "%s: ok\n", file)
			for _, p := range sortedProblems(notes.Unsupported, missing) {
				fmt.Fprintf(env.stderr, "%s: %s: warning: %s\n", file, p.Path, p.Message)
			}
			if verbose {
				for _, p := range notes.Ignored {
					fmt.Fprintf(env.stdout, "%s: %s: ignored: %s\n", file, p.Path, p.Message)
				}
			}
			continue
		}
		code = 1
		var ve *spec.ValidationError
		if !errors.As(err, &ve) {
			fmt.Fprintf(env.stderr, "%s: /: %v\n", file, err)
			continue
		}
		for _, p := range ve.Problems {
			fmt.Fprintf(env.stderr, "%s: %s\n", file, p)
		}
	}
	return code
}

// registeredFunction reports whether this program has a process function named name.
func registeredFunction(name string) bool {
	_, err := flow.Lookup(name)
	return err == nil
}

// sortedProblems joins lists of problems sorted by path, then message.
func sortedProblems(lists ...[]spec.Problem) []spec.Problem {
	var out []spec.Problem
	for _, l := range lists {
		out = append(out, l...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Message < out[j].Message
	})
	return out
}

// refuseUnrunnable prints, for a command (start, run) about to run cfg from file, one line per
// feature of cfg that yt-flow does not run yet and per processing function this program
// lacks, and reports whether there was any: such a pipeline is never started.
func refuseUnrunnable(w io.Writer, command, file string, cfg *spec.Config) bool {
	probs := sortedProblems(cfg.Notes.Unsupported, cfg.UnregisteredFunctions(registeredFunction))
	for _, p := range probs {
		fmt.Fprintf(w, "yt-flow: %s: %s: %s\n", command, file, p)
	}
	return len(probs) > 0
}

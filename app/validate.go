package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

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
	fs.Usage = func() {
		fmt.Fprintln(env.stderr, "usage: yt-flow validate [-kind config|spec|dynamic] FILE...")
		fs.PrintDefaults()
	}
	return func(context.Context, *settings) int { return runValidate(env, fs, *kind) }
}

// runValidate parses each file as a runner config (or, with -kind, a bare static or dynamic
// spec). It prints "FILE: ok" per valid file to stdout and "FILE: path: message" per problem
// to stderr; exit code 1 if any file has a problem, 2 on usage errors.
func runValidate(env *environ, fs *flag.FlagSet, kind string) int {
	var parse func([]byte) error
	switch kind {
	case "config":
		parse = func(b []byte) error { _, err := spec.ParseConfig(b); return err }
	case "spec":
		parse = func(b []byte) error { _, err := spec.ParsePipeline(b); return err }
	case "dynamic":
		parse = func(b []byte) error { _, err := spec.ParseDynamic(b); return err }
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
		data, err := os.ReadFile(file)
		if err == nil {
			err = parse(data)
		} else {
			err = &spec.ValidationError{Problems: []spec.Problem{{Path: "/", Message: err.Error()}}}
		}
		if err == nil {
			fmt.Fprintf(env.stdout, "%s: ok\n", file)
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

package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// get-pipeline-state, get-/set-/remove-pipeline-spec and their dynamic-spec twins.
//
// The rules (flow-docs §6.2, §6.3): the static spec changes only while the pipeline is
// stopped (or never started), or paused with --force; a completed pipeline refuses spec
// changes; the dynamic spec changes at any time. --expected-version makes a change
// conditional on the version it replaces. Every new spec is validated with package spec,
// together with the other spec of the pipeline, before it is stored.

func init() {
	register(&command{
		name:    "get-pipeline-state",
		summary: "print a pipeline's state (working, stopped, paused, completed …; unknown before a controller ran)",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var c flowCmd
			c.define(fs, "get-pipeline-state", "Prints the pipeline state the controller published, lowercase.",
				"yt-flow get-pipeline-state --proxy localhost:8000 //home/me/pipe")
			return func(ctx context.Context, s *settings) int {
				if code := c.check(fs, s); code >= 0 {
					return code
				}
				return c.view(ctx, env, s, func(_ context.Context, _ *ytstore.Store, attrs *ytstore.Attributes) (any, error) {
					return stateOf(attrs), nil
				})
			}
		},
	})
	for _, dynamic := range []bool{false, true} {
		registerSpecCommands(dynamic)
	}
}

// specKind names the static or the dynamic spec in commands and messages.
type specKind struct {
	dynamic bool
	// word is "spec" or "dynamic-spec" (command names), what "spec" or "dynamic spec".
	word, what string
}

func kindOf(dynamic bool) specKind {
	if dynamic {
		return specKind{true, "dynamic-spec", "dynamic spec"}
	}
	return specKind{false, "spec", "spec"}
}

func (k specKind) of(a *ytstore.Attributes) ([]byte, int64) {
	if k.dynamic {
		return a.DynamicSpec, a.DynamicSpecVersion
	}
	return a.Spec, a.SpecVersion
}

func registerSpecCommands(dynamic bool) {
	k := kindOf(dynamic)
	get := "get-pipeline-" + k.word
	register(&command{
		name:    get,
		summary: "print a pipeline's " + k.what + " (or the part at --spec-path) as YSON or JSON",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var c flowCmd
			c.define(fs, get, "Prints the "+k.what+" stored in the pipeline, or its part at --spec-path.",
				"yt-flow "+get+" --proxy localhost:8000 //home/me/pipe > "+strings.ReplaceAll(k.word, "-", "_")+".yson",
				"yt-flow "+get+" --proxy localhost:8000 --spec-path /computations --format json //home/me/pipe")
			specPath := fs.String("spec-path", "", "print only this part of the spec, e.g. /computations/count")
			withVersion := fs.Bool("with-version", false, "print {version=N; spec=…} instead of the spec alone")
			return func(ctx context.Context, s *settings) int {
				if code := c.check(fs, s); code >= 0 {
					return code
				}
				parts, err := splitSpecPath(*specPath)
				if err != nil {
					return c.usagef(env, "--spec-path: %v", err)
				}
				st, attrs, err := c.open(ctx, s)
				if err != nil {
					return c.failf(env, "%v", err)
				}
				st.Close()
				raw, version := k.of(attrs)
				if len(raw) == 0 {
					return c.failf(env, "pipeline %s has no %s", c.pf.path, k.what)
				}
				v, err := specAt(decodeYSON(raw), parts)
				if err != nil {
					return c.failf(env, "%s %s: %v", k.what, *specPath, err)
				}
				if *withVersion {
					v = map[string]any{"version": version, "spec": v}
				}
				if err := c.emit(env.stdout, v); err != nil {
					return c.failf(env, "%v", err)
				}
				return 0
			}
		},
	})

	set := "set-pipeline-" + k.word
	rules := "The dynamic spec can change at any time."
	if !dynamic {
		rules = "The pipeline must be stopped (or never started); --force allows a paused one. A completed pipeline refuses."
	}
	partExample := "echo '\"CountV2\"' | yt-flow " + set + " --proxy localhost:8000 --spec-path /computations/count/processing_function //home/me/pipe"
	if dynamic {
		partExample = "echo 4 | yt-flow " + set + " --proxy localhost:8000 --spec-path /computations/count/parameters/desired_partition_count //home/me/pipe"
	}
	register(&command{
		name:    set,
		summary: "validate and store a pipeline's " + k.what + " (or its part at --spec-path), read from stdin or --file",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var c flowCmd
			c.define(fs, set, "Validates the "+k.what+" read from stdin (or --file) with the pipeline's other spec and stores it\nwith the next version. "+rules,
				"yt-flow "+set+" --proxy localhost:8000 --expected-version 3 //home/me/pipe < "+strings.ReplaceAll(k.word, "-", "_")+".yson",
				partExample)
			var ch specChange
			ch.define(fs, dynamic)
			file := fs.String("file", "-", "read the spec from this file (- for stdin)")
			return func(ctx context.Context, s *settings) int {
				if code := c.check(fs, s); code >= 0 {
					return code
				}
				parts, err := splitSpecPath(ch.specPath)
				if err != nil {
					return c.usagef(env, "--spec-path: %v", err)
				}
				data, err := readInput(env, *file)
				if err != nil {
					return c.failf(env, "read the %s: %v", k.what, err)
				}
				var value any
				if err := sdkyson.Unmarshal(data, &value); err != nil {
					return c.failf(env, "the %s read from %s is not YSON: %v", k.what, inputName(*file), err)
				}
				return ch.run(ctx, env, s, &c, k, func(cur any) (any, error) { return setAt(cur, parts, value) })
			}
		},
	})

	remove := "remove-pipeline-" + k.word
	register(&command{
		name:    remove,
		summary: "remove a pipeline's " + k.what + " (or its part at --spec-path)",
		setup: func(fs *flag.FlagSet, env *environ) runFunc {
			var c flowCmd
			c.define(fs, remove, "Removes the "+k.what+" (the version still counts up), or validates and stores it without its part at\n--spec-path. "+rules,
				"yt-flow "+remove+" --proxy localhost:8000 --expected-version 4 //home/me/pipe",
				"yt-flow "+remove+" --proxy localhost:8000 --spec-path /computations/count/parameters //home/me/pipe")
			var ch specChange
			ch.define(fs, dynamic)
			return func(ctx context.Context, s *settings) int {
				if code := c.check(fs, s); code >= 0 {
					return code
				}
				parts, err := splitSpecPath(ch.specPath)
				if err != nil {
					return c.usagef(env, "--spec-path: %v", err)
				}
				return ch.run(ctx, env, s, &c, k, func(cur any) (any, error) {
					if len(parts) == 0 {
						return nil, nil
					}
					return removeAt(cur, parts)
				})
			}
		},
	})
}

// specChange holds the flags of set- and remove-pipeline-(dynamic-)spec.
type specChange struct {
	specPath        string
	expectedVersion int64
	force           bool
}

func (ch *specChange) define(fs *flag.FlagSet, dynamic bool) {
	fs.StringVar(&ch.specPath, "spec-path", "", "change only this part of the spec, e.g. /computations/count/parameters")
	fs.Int64Var(&ch.expectedVersion, "expected-version", -1, "change only if the stored version is this one (-1: any)")
	if !dynamic {
		fs.BoolVar(&ch.force, "force", false, "allow the change while the pipeline is paused")
	}
}

// errRefused marks a change refused by a rule; its message is the whole explanation.
var errRefused = errors.New("refused")

// run applies edit (current spec as plain values, nil when unset -> new spec, nil to remove)
// with the rules of k, and prints {version=N}.
func (ch *specChange) run(ctx context.Context, env *environ, s *settings, c *flowCmd, k specKind, edit func(cur any) (any, error)) int {
	st, _, err := c.open(ctx, s)
	if err != nil {
		return c.failf(env, "%v", err)
	}
	defer st.Close()
	path := c.pf.path
	version, err := st.ChangeSpec(ctx, k.dynamic, func(a *ytstore.Attributes) (sdkyson.RawValue, error) {
		raw, version := k.of(a)
		if ch.expectedVersion >= 0 && version != ch.expectedVersion {
			return nil, fmt.Errorf("%w: %s version is %d, not the expected %d; nothing changed", errRefused, k.what, version, ch.expectedVersion)
		}
		if err := checkSpecState(a, k, path, ch.force); err != nil {
			return nil, err
		}
		var cur any
		if len(raw) > 0 {
			cur = decodeYSON(raw)
		}
		next, err := edit(cur)
		if err != nil {
			return nil, fmt.Errorf("%w: %s %s: %v", errRefused, k.what, orDash(ch.specPath), err)
		}
		if next == nil {
			return nil, nil
		}
		b, err := sdkyson.Marshal(next)
		if err != nil {
			return nil, fmt.Errorf("%w: encode the %s: %v", errRefused, k.what, err)
		}
		static, dyn := a.Spec, a.DynamicSpec
		if k.dynamic {
			dyn = b
		} else {
			static = b
		}
		if err := checkSpecs(path, static, dyn, k.dynamic); err != nil {
			return nil, fmt.Errorf("%w: the new %s is invalid, nothing changed: %v", errRefused, k.what, err)
		}
		return b, nil
	})
	if err != nil {
		if errors.Is(err, errRefused) {
			return c.failf(env, "%s", strings.TrimPrefix(err.Error(), errRefused.Error()+": "))
		}
		return c.failf(env, "%v", explain(err, path))
	}
	if err := c.emit(env.stdout, map[string]any{"version": version}); err != nil {
		return c.failf(env, "%v", err)
	}
	return 0
}

// checkSpecState applies the lifecycle rules of spec changes to the pipeline's state.
func checkSpecState(a *ytstore.Attributes, k specKind, path string, force bool) error {
	if a.PipelineState == ytstore.StateCompleted {
		return fmt.Errorf("%w: pipeline %s is completed (terminal): its %s cannot change", errRefused, path, k.what)
	}
	if k.dynamic {
		return nil
	}
	switch a.PipelineState {
	case "", ytstore.StateStopped:
		return nil
	case ytstore.StatePaused:
		if force {
			return nil
		}
		return fmt.Errorf("%w: pipeline %s is paused: the static spec changes only while it is stopped (--force allows paused); run 'yt-flow stop --path %s --wait' first", errRefused, path, path)
	}
	return fmt.Errorf("%w: pipeline %s is %s: the static spec changes only while it is stopped; run 'yt-flow stop --path %s --wait' first", errRefused, path, a.PipelineState, path)
}

// checkSpecs validates a static and a dynamic spec (either may be empty) with package
// spec: each on its own, and the dynamic one against the static one when both are set. The
// problems of the spec being changed (dynamic or not) are named by their YSON paths in it.
func checkSpecs(path string, static, dynamic []byte, changingDynamic bool) error {
	if changingDynamic {
		if _, err := spec.ParseDynamic(dynamic); err != nil {
			return err
		}
	} else if _, err := spec.ParsePipeline(static); err != nil {
		return err
	}
	if len(static) == 0 || len(dynamic) == 0 {
		return nil
	}
	doc, err := sdkyson.Marshal(map[string]any{"path": path, "spec": sdkyson.RawValue(static), "dynamic_spec": sdkyson.RawValue(dynamic)})
	if err != nil {
		return err
	}
	if _, err := spec.ParseConfig(doc); err != nil {
		return fmt.Errorf("against the stored %s: %w", map[bool]string{true: "spec", false: "dynamic spec"}[changingDynamic], err)
	}
	return nil
}

func readInput(env *environ, file string) ([]byte, error) {
	if file == "-" || file == "" {
		return io.ReadAll(env.input())
	}
	return os.ReadFile(file)
}

func inputName(file string) string {
	if file == "-" || file == "" {
		return "stdin"
	}
	return file
}

// splitSpecPath splits a path inside a spec, "/computations/count" -> [computations count];
// "" and "/" are the whole spec.
func splitSpecPath(p string) ([]string, error) {
	if p == "" || p == "/" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("%q must start with /", p)
	}
	parts := strings.Split(strings.TrimSuffix(p[1:], "/"), "/")
	for _, s := range parts {
		if s == "" {
			return nil, fmt.Errorf("%q has an empty element", p)
		}
	}
	return parts, nil
}

// specAt returns the part of v at parts (map keys, list indices).
func specAt(v any, parts []string) (any, error) {
	for i, p := range parts {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[p]
			if !ok {
				return nil, fmt.Errorf("/%s has no %q", strings.Join(parts[:i], "/"), p)
			}
			v = next
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(x) {
				return nil, fmt.Errorf("/%s is a list of %d, no item %q", strings.Join(parts[:i], "/"), len(x), p)
			}
			v = x[n]
		default:
			return nil, fmt.Errorf("/%s is not a map or a list", strings.Join(parts[:i], "/"))
		}
	}
	return v, nil
}

// setAt returns root with the value at parts replaced by value; the parent must exist.
func setAt(root any, parts []string, value any) (any, error) {
	if len(parts) == 0 {
		return value, nil
	}
	if root == nil {
		return nil, errors.New("there is no spec to change a part of")
	}
	parent, err := specAt(root, parts[:len(parts)-1])
	if err != nil {
		return nil, err
	}
	m, ok := parent.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("/%s is not a map", strings.Join(parts[:len(parts)-1], "/"))
	}
	m[parts[len(parts)-1]] = value
	return root, nil
}

// removeAt returns root without the value at parts, which must exist.
func removeAt(root any, parts []string) (any, error) {
	if root == nil {
		return nil, errors.New("there is no spec to remove a part of")
	}
	if _, err := specAt(root, parts); err != nil {
		return nil, err
	}
	parent, _ := specAt(root, parts[:len(parts)-1])
	m, ok := parent.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("/%s is not a map", strings.Join(parts[:len(parts)-1], "/"))
	}
	delete(m, parts[len(parts)-1])
	return root, nil
}

package app

// yt-flow dead-letters list | show | replay | drop: the messages failure_policy dead_letter
// set aside.

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

// deadLetterVerbs are the subcommands of dead-letters.
var deadLetterVerbs = []string{"list", "show", "replay", "drop"}

// deadLetterFilter chooses letters: by computation and by message ids (all when empty).
type deadLetterFilter struct {
	computation string
	ids         []string
}

func (f deadLetterFilter) match(l ytstore.DeadLetterRow) bool {
	if f.computation != "" && l.ComputationID != f.computation {
		return false
	}
	return len(f.ids) == 0 || slices.Contains(f.ids, l.MessageID)
}

// deadLettersSetup defines the flags of dead-letters VERB and returns its run function.
func deadLettersSetup(verb string) setupFunc {
	return func(fs *flag.FlagSet, env *environ) runFunc {
		var pf pipelineFlags
		pf.define(fs)
		var f deadLetterFilter
		fs.StringVar(&f.computation, "computation", "", "only the letters of this computation")
		ids := fs.String("message-id", "", "only these message ids (comma-separated)")
		all := fs.Bool("all", false, "replay, drop: every letter the other flags choose (without --message-id or --computation, all of them)")
		return func(ctx context.Context, s *settings) int {
			if code := pf.check(fs, true); code >= 0 {
				return code
			}
			if *ids != "" {
				f.ids = strings.Split(*ids, ",")
			}
			if (verb == "drop" || verb == "replay") && !*all && f.computation == "" && len(f.ids) == 0 {
				fmt.Fprintf(env.stderr, "yt-flow dead-letters %s: choose letters with --message-id or --computation, or --all\n", verb)
				return 2
			}
			st, err := openPipelineStore(ctx, s, pf.proxy, pf.path)
			if err != nil {
				return failf(env.stderr, "dead-letters %s: %v", verb, err)
			}
			defer st.Close()
			letters, err := st.DeadLetters(ctx)
			if err != nil {
				return failf(env.stderr, "dead-letters %s: %v", verb, explain(err, pf.path))
			}
			var chosen []ytstore.DeadLetterRow
			for _, l := range letters {
				if f.match(l) {
					chosen = append(chosen, l)
				}
			}
			switch verb {
			case "list":
				for _, l := range chosen {
					printDeadLetter(env, l)
				}
				fmt.Fprintf(env.stdout, "%d dead letters\n", len(chosen))
				return 0
			case "show":
				for _, l := range chosen {
					showDeadLetter(env, l)
				}
				fmt.Fprintf(env.stdout, "%d dead letters\n", len(chosen))
				return 0
			case "replay":
				return replayDeadLetters(ctx, env, st, pf.path, chosen)
			}
			if err := st.DropDeadLetters(ctx, chosen); err != nil {
				return failf(env.stderr, "dead-letters drop: %v", err)
			}
			dropped := map[string]int64{}
			for _, l := range chosen {
				dropped[l.ComputationID]++
			}
			if err := st.CountDroppedDeadLetters(ctx, dropped); err != nil {
				// The letters are gone; only the metric missed them.
				fmt.Fprintf(env.stderr, "yt-flow dead-letters drop: the letters are dropped, but @dead_letters_dropped was not updated: %v\n", err)
			}
			fmt.Fprintf(env.stdout, "dropped %d dead letters\n", len(chosen))
			return 0
		}
	}
}

// printDeadLetter prints one letter on one line: computation, partition, message id, stream,
// key, attempts and error (the payload stays in the table).
func printDeadLetter(env *environ, l ytstore.DeadLetterRow) {
	key := fmt.Sprintf("%x", l.Key)
	if k, err := epoch.DecodeKey(l.Key); err == nil {
		key = fmt.Sprint(k)
	}
	kind := "message"
	if l.Timer {
		kind = "timer"
	}
	fmt.Fprintf(env.stdout, "%s partition %s %s %s stream %s key %s attempts %d: %s\n",
		l.ComputationID, l.PartitionID, kind, l.MessageID, l.StreamID, key, l.Attempts, strings.ReplaceAll(l.Error, "\n", " "))
}

// runDeadLetters dispatches dead-letters VERB [flags] to the verb's setup, as runMain does for
// a command.
func runDeadLetters(ctx context.Context, env *environ, args []string) int {
	const usage = "usage: yt-flow dead-letters list|show|replay|drop [flags] (yt-flow dead-letters list --help for the flags)\n"
	if len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help", "--h"}, args[0]) {
		fmt.Fprint(env.stderr, usage) // runMain adds the examples
		return 0
	}
	if len(args) == 0 || !slices.Contains(deadLetterVerbs, args[0]) {
		fmt.Fprint(env.stderr, usage)
		return 2
	}
	name := "dead-letters " + args[0]
	fs := newFlagSet(name, env)
	run := deadLettersSetup(args[0])(fs, env)
	s, code := parseSettings("dead-letters", fs, env, args[1:])
	if code >= 0 {
		return code
	}
	return run(ctx, s)
}

func init() {
	register(&command{
		name: "dead-letters",
		examples: []string{
			"yt-flow dead-letters list --proxy localhost:8000 --path //home/me/pipe --computation count",
			"yt-flow dead-letters show --proxy localhost:8000 --path //home/me/pipe --message-id ID1",
			"yt-flow dead-letters replay --proxy localhost:8000 --path //home/me/pipe --computation count",
			"yt-flow dead-letters drop --proxy localhost:8000 --path //home/me/pipe --message-id ID1,ID2",
		},
		summary: "list, show, replay or drop the messages failure_policy dead_letter set aside (dead_letters)",
		run:     runDeadLetters,
	})
}

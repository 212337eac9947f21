// Package wordcount holds the process functions of the word count example
// (examples/word_count): SplitWords turns lines of text into words, CountWords keeps a running
// count per word, CountWordsRejecting is CountWords failing on the words its parameters
// reject (to try failure_policy), CountWordsVisited is CountWords with a key visitor handler
// (VisitCount), and CountWordsQuota is CountWords taking a unit of a distributed throttler per
// word first. Importing the package registers them under those names.
package wordcount

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/ytflow/yt-flow/flow"
)

func init() {
	flow.Register("SplitWords", flow.PerMessage(SplitWords))
	flow.Register("CountWords", flow.Batch(CountWords))
	flow.Register("CountWordsRejecting", flow.Batch(CountWordsRejecting))
	flow.Register("CountWordsVisited", flow.Process{OnMessages: CountWords, OnVisit: VisitCount})
	flow.Register("CountWordsQuota", flow.Batch(CountWordsQuota))
}

// CountWordsQuota is CountWords that first takes one unit per message from the distributed
// throttler its parameter quota_throttler names (flow.Context.AcquireQuota), waiting for it.
func CountWordsQuota(ctx *flow.Context, msgs []flow.Message) error {
	id, _ := ctx.Parameters()["quota_throttler"].(string)
	if id == "" {
		return fmt.Errorf("processing_function_parameters: quota_throttler is required")
	}
	if err := ctx.AcquireQuota(context.Background(), id, int64(len(msgs))); err != nil {
		return err
	}
	return CountWords(ctx, msgs)
}

// VisitCount handles a key visitor's visit of a word (key [hash, word]): it emits
// {word, pass, pass_start, count} to stream visits, count being the word's state "count".
func VisitCount(ctx *flow.Context, v *flow.Visit) error {
	key := ctx.Key()
	if len(key) != 2 {
		return fmt.Errorf("key %v: want [hash, word]", key)
	}
	word, ok := key[1].(string)
	if !ok {
		return fmt.Errorf("key %v: want [hash, word string], got %T", key, key[1])
	}
	n, _ := flow.StateOf[int64](ctx, "count").Get()
	ctx.AddMessage("visits", flow.Row{"word": word, "pass": int64(v.Pass), "pass_start": int64(v.PassStart), "count": n})
	return nil
}

// SplitWords reads the string column text of a source message and emits one message {word} to
// stream words per word, in order: the text is lower-cased and split on every rune that is
// neither a letter nor a digit. A null text has no words; a row without a text column is an
// error naming the columns it has.
func SplitWords(ctx *flow.Context, msg *flow.Message) error {
	raw, ok := msg.Payload["text"]
	if !ok {
		// A schematized queue row carries every column of its schema (null when unset):
		// no text at all means the source table has no such column.
		return fmt.Errorf("column text: missing from the source row (its columns: %s)", columnNames(msg.Payload))
	}
	var text string
	switch v := raw.(type) {
	case nil:
		return nil
	case string:
		text = v
	case []byte:
		text = string(v)
	default:
		return fmt.Errorf("column text: want a string, got %T", v)
	}
	eachWord(text, func(w string) { ctx.AddMessage("words", flow.Row{"word": w}) })
	return nil
}

func columnNames(row flow.Row) string {
	names := make([]string, 0, len(row))
	for k := range row {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// words returns the words of text in order (see SplitWords).
func words(text string) []string {
	var ws []string
	eachWord(text, func(w string) { ws = append(ws, w) })
	return ws
}

// eachWord calls f with each word of text in order, without collecting them: the lower-cased
// text is split on every rune that is neither a letter nor a digit (an invalid UTF-8 byte
// included), as strings.FieldsFunc would.
func eachWord(text string, f func(string)) {
	text = strings.ToLower(text)
	start := -1
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			f(text[start:i])
			start = -1
		}
	}
	if start >= 0 {
		f(text[start:])
	}
}

// CountWords handles all messages of one word (key [hash, word], hash = farm_hash(word)) at once:
// it adds their number to the int64 state "count" and emits the new total as {hash, word, count}
// to stream counts — one output per key per invocation.
func CountWords(ctx *flow.Context, msgs []flow.Message) error {
	key := ctx.Key()
	if len(key) != 2 {
		return fmt.Errorf("key %v: want [hash, word]", key)
	}
	hash, ok1 := key[0].(uint64)
	word, ok2 := key[1].(string)
	if !ok1 || !ok2 {
		return fmt.Errorf("key %v: want [hash uint64, word string], got [%T, %T]", key, key[0], key[1])
	}
	count := flow.StateOf[int64](ctx, "count")
	n, _ := count.Get()
	n += int64(len(msgs))
	count.Set(n)
	ctx.AddMessage("counts", flow.Row{"hash": hash, "word": word, "count": n})
	return nil
}

// CountWordsRejecting is CountWords, except that it returns an error for a word listed in the
// processing function parameter reject (a list of strings; none when absent): a process
// function that keeps failing on chosen messages until a dynamic spec change of its
// parameters makes it accept them (see failure_policy in docs/spec.md).
func CountWordsRejecting(ctx *flow.Context, msgs []flow.Message) error {
	if len(ctx.Key()) == 2 {
		if word, ok := ctx.Key()[1].(string); ok {
			list, _ := ctx.Parameters()["reject"].([]any)
			for _, r := range list {
				if r == word {
					return fmt.Errorf("word %q is rejected (parameter reject)", word)
				}
			}
		}
	}
	return CountWords(ctx, msgs)
}

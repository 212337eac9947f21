package wordcount

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"

	farm "github.com/dgryski/go-farm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/flow/flowtest"
)

func text(s any) flow.Message { return flowtest.Msg("queue", nil, flow.Row{"text": s}) }

// keyOf is the counter's group-by key: [farm_hash(word), word].
func keyOf(word string) flow.Key { return flow.Key{farm.Fingerprint64([]byte(word)), word} }

func TestSplitWords(t *testing.T) {
	h := flowtest.New(t, "SplitWords", flowtest.Options{Swift: true})
	r := h.Run(flowtest.Epoch{Messages: []flow.Message{
		text("Hello, world! HELLO"),
		text("naïve café—x2 ... 42"),
		text(""),
		text(nil),
		text([]byte("bytes too")),
	}})
	var got []any
	for _, row := range r.Payloads("words") {
		got = append(got, row["word"])
	}
	assert.Equal(t, []any{"hello", "world", "hello", "naïve", "café", "x2", "42", "bytes", "too"}, got)

	// Each word names the line it came from, so a swift source has exactly one parent per output.
	first := r.Invocations[0].Messages[0].MessageID
	for _, o := range r.Outputs[:3] {
		assert.Equal(t, []string{first}, o.ParentIDs)
	}
	assert.Empty(t, h.Keys(), "SplitWords keeps no state")
}

func TestSplitWordsRejectsNonStringText(t *testing.T) {
	h := flowtest.New(t, "SplitWords", flowtest.Options{})
	_, err := h.TryRun(flowtest.Epoch{Messages: []flow.Message{text(int64(5))}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "SplitWords")
	assert.Contains(t, err.Error(), "column text")
	assert.Empty(t, h.Outputs())
}

func TestSplitWordsRejectsRowWithoutText(t *testing.T) {
	h := flowtest.New(t, "SplitWords", flowtest.Options{})
	_, err := h.TryRun(flowtest.Epoch{Messages: []flow.Message{{StreamID: "lines", Payload: flow.Row{"line": "a b"}}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "column text: missing")
	assert.Contains(t, err.Error(), "line")
	assert.Empty(t, h.Outputs())
}

func TestCountWordsKeepsRunningCount(t *testing.T) {
	split := flowtest.New(t, "SplitWords", flowtest.Options{})
	count := flowtest.New(t, "CountWords", flowtest.Options{})

	// feed runs one epoch of lines through SplitWords and its words through CountWords, keyed
	// as the counter's group_by_schema would key them.
	feed := func(lines ...string) *flowtest.EpochResult {
		var in []flow.Message
		for _, l := range lines {
			in = append(in, text(l))
		}
		var ws []flow.Message
		for _, row := range split.Run(flowtest.Epoch{Messages: in}).Payloads("words") {
			w := row["word"].(string)
			ws = append(ws, flowtest.Msg("words", keyOf(w), row))
		}
		return count.Run(flowtest.Epoch{Messages: ws})
	}

	r := feed("the cat and the hat", "The end")
	assert.Equal(t, []flow.Row{
		{"hash": keyOf("the")[0], "word": "the", "count": int64(3)},
		{"hash": keyOf("cat")[0], "word": "cat", "count": int64(1)},
		{"hash": keyOf("and")[0], "word": "and", "count": int64(1)},
		{"hash": keyOf("hat")[0], "word": "hat", "count": int64(1)},
		{"hash": keyOf("end")[0], "word": "end", "count": int64(1)},
	}, r.Payloads("counts"), "one output per word with its total")

	r = feed("cat, cat; the")
	assert.Equal(t, []flow.Row{
		{"hash": keyOf("cat")[0], "word": "cat", "count": int64(3)},
		{"hash": keyOf("the")[0], "word": "the", "count": int64(4)},
	}, r.Payloads("counts"))

	n, ok := flowtest.Get[int64](count, keyOf("the"), "count")
	assert.True(t, ok)
	assert.Equal(t, int64(4), n)
	n, _ = flowtest.Get[int64](count, keyOf("hat"), "count")
	assert.Equal(t, int64(1), n, "untouched keys keep their state")
	assert.Len(t, count.Keys(), 5)
	assert.Empty(t, count.PendingTimers())
}

func TestCountWordsRejectsBadKey(t *testing.T) {
	h := flowtest.New(t, "CountWords", flowtest.Options{})
	_, err := h.TryRun(flowtest.Epoch{Messages: []flow.Message{flowtest.Msg("words", flow.Key{"the"}, flow.Row{"word": "the"})}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "want [hash, word]")

	_, err = h.TryRun(flowtest.Epoch{Messages: []flow.Message{flowtest.Msg("words", flow.Key{int64(1), "the"}, flow.Row{"word": "the"})}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "int64")
	assert.False(t, errors.Is(err, flow.ErrUserPanic))
}

// FuzzSplitWords checks that every word is a non-empty, lower-cased run of letters and digits,
// that the words are exactly the text's letter/digit runs, and that they are what splitting
// with strings.FieldsFunc gives.
func FuzzSplitWords(f *testing.F) {
	for _, s := range []string{"", "Hello, world!", "naïve café—x2", "ΣΊΣΥΦΟΣ", "a\x00b\xffc", "İstanbul"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ws := words(s)
		// The same words as splitting with strings.FieldsFunc.
		want := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if !slices.Equal(ws, want) {
			t.Fatalf("words(%q) = %q, want %q", s, ws, want)
		}
		for _, w := range ws {
			if w == "" {
				t.Fatalf("empty word from %q", s)
			}
			for _, r := range w {
				if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					t.Fatalf("word %q from %q contains %q", w, s, r)
				}
			}
			if strings.ToLower(w) != w {
				t.Fatalf("word %q from %q is not lower-cased", w, s)
			}
		}
		// Splitting again changes nothing: the words are fixed points.
		if again := words(strings.Join(ws, " ")); !slices.Equal(again, ws) {
			t.Fatalf("words(join(words(%q))) = %q, want %q", s, again, ws)
		}
	})
}

func BenchmarkCountWordsInvoke(b *testing.B) {
	fn, err := flow.Lookup("CountWords")
	require.NoError(b, err)
	msgs := make([]flow.Message, 10)
	for i := range msgs {
		msgs[i] = flow.Message{StreamID: "words", MessageID: fmt.Sprintf("m%02d", i), Payload: flow.Row{"word": "the"}}
	}
	inv := &flow.Invocation{Key: keyOf("the"), Messages: msgs, State: map[string][]byte{"count": []byte("41")}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fn.Invoke(inv); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCountWordsRejecting: the words listed in the parameter reject fail the invocation with
// an error naming the word; the others are counted as CountWords counts them.
func TestCountWordsRejecting(t *testing.T) {
	h := flowtest.New(t, "CountWordsRejecting", flowtest.Options{Parameters: flow.Row{"reject": []any{"poison1", "poison2"}}})
	_, err := h.TryRun(flowtest.Epoch{Messages: []flow.Message{flowtest.Msg("words", keyOf("poison2"), flow.Row{"word": "poison2"})}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `word "poison2" is rejected`)
	r := h.Run(flowtest.Epoch{Messages: []flow.Message{flowtest.Msg("words", keyOf("cat"), flow.Row{"word": "cat"})}})
	assert.Equal(t, []flow.Row{{"hash": keyOf("cat")[0], "word": "cat", "count": int64(1)}}, r.Payloads("counts"))

	all := flowtest.New(t, "CountWordsRejecting", flowtest.Options{})
	r = all.Run(flowtest.Epoch{Messages: []flow.Message{flowtest.Msg("words", keyOf("poison1"), flow.Row{"word": "poison1"})}})
	assert.Equal(t, []flow.Row{{"hash": keyOf("poison1")[0], "word": "poison1", "count": int64(1)}}, r.Payloads("counts"), "no reject parameter: counted")
}

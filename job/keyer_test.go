package job

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytql"
)

// wordCountKeyer is the keyer of a computation keyed by [farm_hash(word), word].
func wordCountKeyer(t testing.TB) func(dest string, payload flow.Row) (flow.Key, error) {
	p := &spec.Pipeline{Computations: map[string]*spec.Computation{"count": {ID: "count"}}}
	p.Computations["count"].GroupBy.Columns = append(p.Computations["count"].GroupBy.Columns,
		schemaColumn("hash", "farm_hash(word)"), schemaColumn("word", ""))
	keyer, err := newKeyer(p)
	require.NoError(t, err)
	return keyer
}

// TestKeyerMatchesEvaluator: the keyer's computed column is what the query language's
// evaluator gives for every kind of payload value, and a value farm_hash refuses is an error
// naming the key column and the expression's position.
func TestKeyerMatchesEvaluator(t *testing.T) {
	keyer := wordCountKeyer(t)
	e, err := ytql.ParseExpression("farm_hash(word)")
	require.NoError(t, err)
	for _, w := range []any{"the", "", []byte("cat"), int64(-3), int32(7), uint64(1 << 63), uint8(9), true, nil} {
		row := flow.Row{"word": w}
		want, err := e.Eval(row)
		require.NoError(t, err)
		k, err := keyer("count", row)
		require.NoError(t, err, "word %#v", w)
		assert.Equal(t, want, k[0], "word %#v", w)
		assert.Equal(t, normalize(w), k[1], "word %#v", w)
	}
	_, err = keyer("count", flow.Row{"word": 1.5})
	assert.ErrorIs(t, err, ytql.ErrType)
	assert.EqualError(t, err, "key column hash: ytql: type error at 10: farm_hash accepts int64, uint64, boolean and string arguments, got double")
}

// BenchmarkKeyer: the key [farm_hash(word), word] of one payload.
func BenchmarkKeyer(b *testing.B) {
	keyer := wordCountKeyer(b)
	row := flow.Row{"word": "some_word_of_moderate_length"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := keyer("count", row); err != nil {
			b.Fatal(err)
		}
	}
}

package ytql

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
)

// compiledValues are column values of every kind a payload holds, farm_hash's refused ones
// included.
var compiledValues = []any{
	nil, "", "word", "some_word_of_moderate_length", []byte("word"), []byte{},
	int64(0), int64(-1), int64(math.MinInt64), int64(math.MaxInt64), uint64(0), uint64(math.MaxUint64),
	int(-7), int8(-8), int16(300), int32(-70000), uint(7), uint8(255), uint16(65535), uint32(1 << 31),
	true, false, 2.5, float32(1.5), math.NaN(), []any{int64(1)}, map[string]any{"a": int64(1)},
}

var compiledExprs = []string{
	"word", "a", "`b c`", "[$tablet_index]",
	"farm_hash(word)", "farm_hash(a)", "FARM_HASH(a)", "farm_hash(a, b)", "farm_hash(a, word, b)",
	"farm_hash(a, a)", "farm_hash(`b c`, [$tablet_index])", "farm_hash(missing)",
	// Generic: not a shape the compiler recognises.
	"farm_hash(a, 1)", "farm_hash(a) % 16u", "a + 1", "lower(word)", "farm_hash(lower(word))", "1",
}

// sameEval fails t unless the compiled evaluation of e over row returns what Eval returns:
// the same Go type and value (NaN equal to NaN), or the same error.
func sameEval(t *testing.T, e *Expr, c *Compiled, row map[string]any) {
	t.Helper()
	want, wantErr := e.Eval(row)
	got, gotErr := c.Eval(row)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%q over %v: compiled error %v, Eval error %v", e, row, gotErr, wantErr)
	}
	if wantErr != nil {
		var we, ge *Error
		if !errors.As(wantErr, &we) || !errors.As(gotErr, &ge) || *we != *ge {
			t.Fatalf("%q over %v: compiled error %#v, Eval error %#v", e, row, gotErr, wantErr)
		}
		return
	}
	if reflect.TypeOf(got) != reflect.TypeOf(want) {
		t.Fatalf("%q over %v: compiled %T %v, Eval %T %v", e, row, got, got, want, want)
	}
	if f, ok := want.(float64); ok && math.IsNaN(f) && math.IsNaN(got.(float64)) {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q over %v: compiled %v, Eval %v", e, row, got, want)
	}
}

func TestCompiledMatchesEval(t *testing.T) {
	direct := 0
	rows := 0
	for _, text := range compiledExprs {
		e, err := ParseExpression(text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		c := e.Compile()
		if c.Direct() {
			direct++
		}
		// Every combination of values for a, b and word; the other columns take the value of a.
		for _, a := range compiledValues {
			for _, b := range compiledValues {
				for _, w := range []any{"the", []byte("cat"), nil, int64(3), 1.0} {
					row := map[string]any{"a": a, "b": b, "word": w, "b c": a, "$tablet_index": b}
					sameEval(t, e, c, row)
					rows++
				}
			}
		}
		sameEval(t, e, c, nil)
	}
	// The key shapes compile; the rest fall back to Eval.
	if want := 12; direct != want {
		t.Fatalf("%d of the expressions compiled to a direct path, want %d", direct, want)
	}
	if rows < 10000 {
		t.Fatalf("only %d rows compared", rows)
	}
}

// TestCompiledFarmHashValues pins the direct path against YTsaurus' farm_hash values (the
// same vectors as TestFarmHashCrossCheck's) and names a refused value like Eval does.
func TestCompiledFarmHashValues(t *testing.T) {
	e, err := ParseExpression("farm_hash(word)")
	if err != nil {
		t.Fatal(err)
	}
	c := e.Compile()
	for _, w := range []any{"the", []byte("the"), int64(5), uint64(5), true, nil} {
		got, err := c.Eval(map[string]any{"word": w})
		if err != nil {
			t.Fatalf("farm_hash(%v): %v", w, err)
		}
		if want := FarmHash(w); got != want {
			t.Fatalf("farm_hash(%#v) = %v, want %v", w, got, want)
		}
	}
	_, err = c.Eval(map[string]any{"word": 2.5})
	if !errors.Is(err, ErrType) || err.Error() != "ytql: type error at 10: farm_hash accepts int64, uint64, boolean and string arguments, got double" {
		t.Fatalf("farm_hash of a double: %v", err)
	}
}

// FuzzCompiledMatchesEval: over arbitrary expressions and rows built from the fuzzer's bytes,
// the compiled evaluation returns exactly what Eval returns.
func FuzzCompiledMatchesEval(f *testing.F) {
	for _, s := range append(compiledExprs, fuzzSeeds...) {
		f.Add(s, []byte{0, 1, 2, 3, 4, 5})
	}
	f.Add("farm_hash(a, b, c, d)", []byte{6, 200, 17, 3, 44, 9, 0xff, 'x', 'y'})
	f.Fuzz(func(t *testing.T, text string, data []byte) {
		e, err := ParseExpression(text)
		if err != nil {
			return
		}
		c := e.Compile()
		row := map[string]any{}
		for i, col := range e.Columns() {
			if i >= len(data) {
				break // the remaining columns are missing: NULL
			}
			b := data[i]
			switch {
			case int(b) < len(compiledValues):
				row[col] = compiledValues[b]
			case b < 128:
				row[col] = string(data[i:]) // a string of the fuzzer's bytes
			case b < 192:
				row[col] = int64(b) * -1_000_003
			default:
				row[col] = fmt.Appendf(nil, "%x", data)
			}
		}
		sameEval(t, e, c, row)
	})
}

// BenchmarkFarmHashKey: farm_hash(word) of one row, through Eval and compiled.
func BenchmarkFarmHashKey(b *testing.B) {
	e, err := ParseExpression("farm_hash(word)")
	if err != nil {
		b.Fatal(err)
	}
	row := map[string]any{"word": "some_word_of_moderate_length"}
	for _, c := range []struct {
		name string
		eval func(map[string]any) (any, error)
	}{{"eval", e.Eval}, {"compiled", e.Compile().Eval}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.eval(row); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

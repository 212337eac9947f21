package ybin

import (
	"fmt"
	"math"
	"reflect"
	"testing"
)

// fieldValue is f as DecodeMap's value of the key (present reports whether the key is there).
func fieldValue(f Field) (v any, present bool) {
	switch f.Kind {
	case FieldMissing:
		return nil, false
	case FieldNull:
		return nil, true
	case FieldString:
		return string(f.Str), true
	case FieldInt64:
		return f.Int, true
	case FieldUint64:
		return f.Uint, true
	case FieldDouble:
		return f.Float, true
	case FieldBool:
		return f.Bool, true
	}
	panic(fmt.Sprintf("kind %d", f.Kind))
}

// checkFields fails t unless Fields agrees with DecodeMap on b for keys: it accepts what
// DecodeMap decodes (unless the map has more than maxFieldKeys entries), refuses what
// DecodeMap refuses, and finds each key's value as DecodeMap's map holds it.
func checkFields(t *testing.T, b []byte, keys []string) {
	t.Helper()
	vals := make([]Field, len(keys))
	ok := Fields(b, keys, vals)
	m, dok := DecodeMap(b)
	switch {
	case ok && !dok:
		t.Fatalf("Fields accepts %q, DecodeMap refuses it", b)
	case !ok && dok && len(m) <= maxFieldKeys:
		t.Fatalf("DecodeMap decodes %q, Fields refuses it", b)
	case !ok:
		return
	}
	for i, k := range keys {
		v, present := fieldValue(vals[i])
		want, wantPresent := m[k]
		if present != wantPresent || !reflect.DeepEqual(v, want) && !(isNaN(v) && isNaN(want)) {
			t.Fatalf("%q key %q: Fields finds %#v (present %v), DecodeMap %#v (present %v)", b, k, v, present, want, wantPresent)
		}
	}
}

func isNaN(v any) bool { f, ok := v.(float64); return ok && math.IsNaN(f) }

// TestFieldsMatchesDecodeMap: Fields finds what DecodeMap decodes, and refuses what it refuses.
func TestFieldsMatchesDecodeMap(t *testing.T) {
	keys := []string{"word", "n", "u", "f", "t", "z", "e", "", "absent"}
	for _, m := range samples {
		b, _ := AppendMap(nil, m)
		checkFields(t, b, keys)
		vals := make([]Field, len(keys))
		if !Fields(b, keys, vals) {
			t.Fatalf("Fields refuses %q", b)
		}
	}
	word, _ := AppendMap(nil, map[string]any{"word": "hello", "n": int64(4)})
	vals := make([]Field, 3)
	if !Fields(word, []string{"n", "word", "x"}, vals) {
		t.Fatal("Fields refuses a map of two entries")
	}
	if vals[0].Kind != FieldInt64 || vals[0].Int != 4 || vals[1].Kind != FieldString || string(vals[1].Str) != "hello" || vals[2].Kind != FieldMissing {
		t.Fatalf("Fields found %+v", vals)
	}
	bad := [][]byte{
		nil, []byte("{"), []byte("{}x"), []byte("[]"),
		[]byte("{\x01\x02a=\x02\x02;\x01\x02a=\x02\x04;}"), // a repeated key
		[]byte("{\x01\x02a=\x09;}"),                        // an unknown marker
		[]byte("{\x01\x02a=\x01\x10ab;}"),                  // a string past the end
		word[:len(word)-1],
	}
	for _, b := range bad {
		if Fields(b, []string{"a"}, make([]Field, 1)) {
			t.Errorf("Fields accepts %q", b)
		}
		checkFields(t, b, []string{"a"})
	}
	big := map[string]any{}
	for i := range maxFieldKeys + 1 {
		big[fmt.Sprint("k", i)] = int64(i)
	}
	b, _ := AppendMap(nil, big)
	if Fields(b, []string{"k1"}, make([]Field, 1)) {
		t.Errorf("Fields accepts a map of %d entries", len(big))
	}
}

// FuzzFields: Fields accepts exactly what DecodeMap decodes (up to maxFieldKeys entries) and
// finds the same values.
func FuzzFields(f *testing.F) {
	for _, m := range samples {
		b, _ := AppendMap(nil, m)
		f.Add(b, "word", "n")
	}
	f.Add([]byte("{\x01\x02a=\x02\x02;\x01\x02a=\x02\x04;}"), "a", "")
	f.Fuzz(func(t *testing.T, b []byte, k1, k2 string) {
		checkFields(t, b, []string{k1, k2, "word", ""})
	})
}

func BenchmarkFields(b *testing.B) {
	row, _ := AppendMap(nil, map[string]any{"key": "word-000123", "value": "word-000123:42", "count": int64(42)})
	keys := []string{"value", "key"}
	b.Run("Fields", func(b *testing.B) {
		b.ReportAllocs()
		vals := make([]Field, 2)
		for b.Loop() {
			if !Fields(row, keys, vals) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("DecodeMap", func(b *testing.B) {
		b.ReportAllocs()
		var dec Decoder
		for b.Loop() {
			m, ok := dec.DecodeMap(row)
			if !ok {
				b.Fatal("refused")
			}
			_, _ = m["value"], m["key"]
			dec.Spare = append(dec.Spare[:0], m)
		}
	})
}

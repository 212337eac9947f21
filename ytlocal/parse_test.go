package ytlocal

import (
	"bytes"
	"reflect"
	"testing"

	"go.ytsaurus.tech/yt/go/yson"
)

// rowBodies are request bodies of row commands: binary rows as the SDK writes them, text
// rows, rows the fast path does not take (nested values, entities), and broken ones.
func rowBodies(t testing.TB) [][]byte {
	enc := func(rows ...any) []byte {
		var b []byte
		for _, r := range rows {
			v, err := yson.MarshalFormat(r, yson.FormatBinary)
			if err != nil {
				t.Fatal(err)
			}
			b = append(append(b, v...), ';')
		}
		return b
	}
	scalar := map[string]any{"k": uint64(7), "s": "word", "i": int64(-3), "d": 1.5, "b": true, "n": nil}
	nested := map[string]any{"k": uint64(1), "v": map[string]any{"x": []any{int64(1), "y"}}}
	return [][]byte{
		nil,
		[]byte("  "),
		enc(scalar),
		enc(scalar, map[string]any{}, scalar),
		enc(scalar, nested, scalar),
		enc(nested, scalar),
		append(enc(scalar), enc(nil)...),
		enc(scalar)[:len(enc(scalar))-1], // last item without ";"
		[]byte("{k=1;s=x};{k=2}"),
		append(enc(scalar), "{k="...), // broken after a good row
		[]byte("{\x01\x02a=\x02\x02;\x01\x02a=\x02\x04;};"), // duplicate key
	}
}

// TestParseListFragmentMatchesGeneric: the fast row parser gives what the SDK's generic
// decoder gives, errors included.
func TestParseListFragmentMatchesGeneric(t *testing.T) {
	for i, b := range rowBodies(t) {
		checkParse(t, i, b)
	}
}

func checkParse(t *testing.T, i int, b []byte) {
	t.Helper()
	got, err := parseListFragment(b)
	want, werr := parseListFragmentGeneric(b)
	if (err == nil) != (werr == nil) {
		t.Fatalf("body %d %q: fast error %v, generic error %v", i, b, err, werr)
	}
	if err != nil {
		if err.Error() != werr.Error() {
			t.Fatalf("body %d %q: fast error %q, generic error %q", i, b, err, werr)
		}
		return
	}
	if len(got) != 0 || len(want) != 0 {
		if !reflect.DeepEqual(got, want) && !sameEncoding(t, got, want) { // NaN != NaN
			t.Fatalf("body %d %q: fast %#v, generic %#v", i, b, got, want)
		}
	}
}

// FuzzParseListFragment: for any body, the fast row parser and the SDK's generic decoder
// agree on the rows or on the error.
func FuzzParseListFragment(f *testing.F) {
	for _, b := range rowBodies(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkParse(t, 0, b) })
}

func sameEncoding(t *testing.T, a, b any) bool {
	ea, err1 := yson.Marshal(a)
	eb, err2 := yson.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatalf("marshal: %v %v", err1, err2)
	}
	return string(ea) == string(eb)
}

// TestBinaryRowsMatchWriter: the row responses written without the SDK's writer are
// byte-identical to what it writes, and rows it must write itself are left to it.
func TestBinaryRowsMatchWriter(t *testing.T) {
	cols := []string{"z", "a", "hash", "bytes", "f", "ok", "null"}
	rows := []any{
		rowValues{cols: cols, vals: []any{int64(-1), "x", uint64(1 << 63), []byte{0, 1}, 2.5, true, nil}},
		nil,
		rowValues{cols: cols[:1], vals: []any{int64(0)}},
		rowValues{},
	}
	got, ok := appendBinaryRows(nil, rows)
	if !ok {
		t.Fatal("scalar rows not taken by the fast path")
	}
	var want bytes.Buffer
	w := yson.NewWriterConfig(&want, yson.WriterConfig{Format: yson.FormatBinary, Kind: yson.StreamListFragment})
	for _, r := range rows {
		w.Any(r)
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("fast %q\nwriter %q", got, want.Bytes())
	}
	nested := []any{rowValues{cols: []string{"v"}, vals: []any{map[string]any{"x": int64(1)}}}}
	if _, ok := appendBinaryRows(nil, nested); ok {
		t.Fatal("a nested value taken by the fast path")
	}
	enc, err := encodeRows(nested, "yson")
	if err != nil || !bytes.Contains(enc, []byte("x")) {
		t.Fatalf("nested row through the writer: %q, %v", enc, err)
	}
}

// TestEncodeValueMatchesSDK: answers encoded without the SDK's writer (scalars, maps of
// scalars) are byte-identical to what it writes; others go through it.
func TestEncodeValueMatchesSDK(t *testing.T) {
	values := []any{
		nil, "1-2-3-4", []byte{0, 1}, int64(-5), 7, int32(3), uint64(1 << 63), uint32(9), 2.5, true, false,
		map[string]any{},
		map[string]any{"transaction_id": "1-2-3-4", "timestamp": uint64(42), "ok": true, "n": nil},
		map[string]any{"nested": map[string]any{"x": int64(1)}},
		[]any{int64(1), "a"},
	}
	for _, v := range values {
		got, err := encodeValue(v, "yson")
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		want, err := yson.MarshalFormat(v, yson.FormatBinary)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%#v: got %q, the SDK writes %q", v, got, want)
		}
	}
}

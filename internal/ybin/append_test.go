package ybin

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"go.ytsaurus.tech/yt/go/yson"
)

// writerMap is what the SDK's binary writer writes for the map of one entry per encoder.
func writerMap(t testing.TB, s string, bs []byte, i int64, u uint64, f float64, v bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := yson.NewWriterFormat(&buf, yson.FormatBinary)
	w.BeginMap()
	w.MapKeyString("s")
	w.String(s)
	w.MapKeyString(s) // a key of any length
	w.Bytes(bs)
	w.MapKeyString("i")
	w.Int64(i)
	w.MapKeyString("u")
	w.Uint64(u)
	w.MapKeyString("f")
	w.Float64(f)
	w.MapKeyString("v")
	w.Bool(v)
	w.MapKeyString("e")
	w.Entity()
	w.EndMap()
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func appendMap(s string, bs []byte, i int64, u uint64, f float64, v bool) []byte {
	b := []byte{'{'}
	b = append(AppendString(append(b, Key("s")...), s), ';')
	b = append(AppendBytes(append(b, Key(s)...), bs), ';')
	b = append(AppendInt64(append(b, Key("i")...), i), ';')
	b = append(AppendUint64(append(b, Key("u")...), u), ';')
	b = append(AppendFloat64(append(b, Key("f")...), f), ';')
	b = append(AppendBool(append(b, Key("v")...), v), ';')
	b = append(AppendEntity(append(b, Key("e")...)), ';')
	return append(b, '}')
}

// TestAppendMatchesWriter: the append encoders write what the SDK's binary writer writes,
// for edge values: empty and nil bytes (nil is the entity), zero, extreme integers, strings
// whose length takes one, two and three varint bytes.
func TestAppendMatchesWriter(t *testing.T) {
	for _, tc := range []struct {
		s  string
		bs []byte
		i  int64
		u  uint64
		f  float64
		v  bool
	}{
		{},
		{s: "", bs: []byte{}, v: true},
		{s: "x", bs: []byte{0}, i: -1, u: 1, f: -0.5},
		{s: strings.Repeat("a", 63), bs: bytes.Repeat([]byte{1}, 64), i: math.MinInt64, u: math.MaxUint64, f: math.Inf(1)},
		{s: strings.Repeat("b", 64), bs: bytes.Repeat([]byte{2}, 8191), i: math.MaxInt64, u: 1 << 63, f: math.NaN()},
		{s: strings.Repeat("c", 8192), bs: bytes.Repeat([]byte{3}, 300), i: 64, u: 127},
	} {
		want := writerMap(t, tc.s, tc.bs, tc.i, tc.u, tc.f, tc.v)
		got := appendMap(tc.s, tc.bs, tc.i, tc.u, tc.f, tc.v)
		if !bytes.Equal(got, want) {
			t.Fatalf("len(s)=%d len(bs)=%d nil=%v:\n got %q\nwant %q", len(tc.s), len(tc.bs), tc.bs == nil, got, want)
		}
	}
}

// FuzzAppend: for any values the append encoders write what the SDK's binary writer writes.
func FuzzAppend(f *testing.F) {
	f.Add("", []byte(nil), true, int64(0), uint64(0), 0.0, false)
	f.Add("key", []byte{}, false, int64(-1), uint64(1<<63), 1.5, true)
	f.Add(strings.Repeat("k", 200), []byte("payload"), false, int64(math.MinInt64), uint64(math.MaxUint64), math.Inf(-1), true)
	f.Fuzz(func(t *testing.T, s string, bs []byte, isNil bool, i int64, u uint64, fl float64, v bool) {
		if isNil {
			bs = nil
		} else if bs == nil {
			bs = []byte{}
		}
		want := writerMap(t, s, bs, i, u, fl, v)
		if got := appendMap(s, bs, i, u, fl, v); !bytes.Equal(got, want) {
			t.Fatalf("got %q\nwant %q", got, want)
		}
	})
}

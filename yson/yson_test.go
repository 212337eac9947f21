package yson

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeKeepsKeyOrder(t *testing.T) {
	n, err := Decode([]byte(`{z=1; a="x"; m=<k=%true>[1u; 2.5; #]}`))
	require.NoError(t, err)
	require.Equal(t, KindMap, n.Kind)
	var keys []string
	for _, f := range n.Map {
		keys = append(keys, f.Key)
	}
	assert.Equal(t, []string{"z", "a", "m"}, keys)
	m := n.Get("m")
	require.NotNil(t, m)
	assert.Equal(t, KindList, m.Kind)
	assert.Equal(t, "k", m.Attrs[0].Key)
	assert.Equal(t, uint64(1), m.List[0].Uint64)
	assert.Equal(t, 2.5, m.List[1].Float64)
	assert.Equal(t, KindEntity, m.List[2].Kind)
	assert.Nil(t, n.Get("missing"))
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{a=1;a=2}`, "a: duplicate key"},
		{`{a={b=1;b=2}}`, "a/b: duplicate key"},
		{`{a=[{c=1;c=1}]}`, "a/0/c: duplicate key"},
		{`{a=1`, "/: invalid YSON"},
		{`{a=1} {b=2}`, "/: invalid YSON"},
		{``, "/: invalid YSON"},
	} {
		_, err := Decode([]byte(tc.in))
		require.Error(t, err, tc.in)
		var ye *Error
		require.True(t, errors.As(err, &ye), tc.in)
		assert.Contains(t, err.Error(), tc.want, tc.in)
	}
}

func TestDecodeDepthLimit(t *testing.T) {
	deep := make([]byte, 0, 2*(MaxDepth+10))
	for i := 0; i < MaxDepth+10; i++ {
		deep = append(deep, '[')
	}
	for i := 0; i < MaxDepth+10; i++ {
		deep = append(deep, ']')
	}
	_, err := Decode(deep)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nesting deeper")
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"100ms": 100 * time.Millisecond, "1s": time.Second, "5m": 5 * time.Minute,
		"1h30m": 90 * time.Minute, "2d": 48 * time.Hour, "250": 250 * time.Millisecond, "0": 0,
	} {
		got, err := ParseDuration(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "-1s", "-5", "abc", "1x", "d", "-1d"} {
		_, err := ParseDuration(in)
		assert.ErrorIs(t, err, ErrBadValue, in)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "50K": 50000, "10M": 10000000, "1G": 1e9, "1Ki": 1024, "100Mi": 100 << 20, "1Gi": 1 << 30, "2Ti": 2 << 40,
	} {
		got, err := ParseSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "K", "-1", "+1", "1.5M", "10X", "9223372036854775807Ki", "1 M"} {
		_, err := ParseSize(in)
		assert.ErrorIs(t, err, ErrBadValue, in)
	}
}

func TestFieldsStrict(t *testing.T) {
	n, err := Decode([]byte(`{name="x"; period=100; limit="10M"; flag="yes"; extra=1; mode="b"; empty=""; list=["a";"a";3]}`))
	require.NoError(t, err)
	var w Walker
	f := w.Fields(n, "root")
	assert.Equal(t, "x", f.String("name", ""))
	assert.Equal(t, 100*time.Millisecond, f.Duration("period", 0))
	assert.Equal(t, int64(10e6), f.Size("limit", 0))
	assert.True(t, f.Bool("flag", true), "malformed value keeps the default")
	assert.Equal(t, "a", f.Enum("mode", "a", "a", "c"))
	f.RequiredString("empty")
	f.RequiredString("absent")
	assert.Equal(t, []string{"a"}, f.Strings("list", true))
	f.Close()
	var got []string
	for _, p := range w.Problems() {
		got = append(got, p.String())
	}
	assert.Equal(t, []string{
		"root/absent: required",
		"root/empty: must not be empty",
		"root/extra: unknown key",
		"root/flag: want boolean, got string",
		"root/list/1: duplicate item \"a\"",
		"root/list/2: want string, got int64",
		"root/mode: \"b\" is not one of [\"a\" \"c\"]",
	}, got)
}

func TestWalkerRejectsAttributesOnScalars(t *testing.T) {
	n, err := Decode([]byte(`{a=<x=1>"s"}`))
	require.NoError(t, err)
	var w Walker
	f := w.Fields(n, "")
	f.String("a", "")
	f.Close()
	require.Len(t, w.Problems(), 1)
	assert.Equal(t, "a: attributes are not allowed here", w.Problems()[0].String())
}

func TestAny(t *testing.T) {
	n, err := Decode([]byte(`{a=[1;"b"];c=<q=%false>2u}`))
	require.NoError(t, err)
	m := n.Any().(map[string]any)
	assert.Equal(t, []any{int64(1), "b"}, m["a"])
	assert.NotNil(t, m["c"])
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{a=1}`, `<x=y>[1;2u;3.0;%true;#;"s"]`, `{a={b=[{}]}}`, "\x01\x02", `{a=1;a=2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := Decode(data)
		if err == nil {
			_ = n.Any()
		}
	})
}

func TestDecodeComments(t *testing.T) {
	n, err := Decode([]byte("// head\n{a=\"//not a comment\"; /* b=1; */ c=2 // tail\n}"))
	require.NoError(t, err)
	assert.Equal(t, "//not a comment", n.Get("a").String)
	assert.Nil(t, n.Get("b"))
	assert.Equal(t, int64(2), n.Get("c").Int64)
	_, err = Decode([]byte("{a=1 /* unterminated"))
	require.Error(t, err)
	// An escaped quote does not end the string.
	n, err = Decode([]byte(`{a="x\"//y"}`))
	require.NoError(t, err)
	assert.Equal(t, `x"//y`, n.Get("a").String)
}

func TestDecodeSyntaxErrorLocation(t *testing.T) {
	for in, want := range map[string]string{
		"{a=1;\n  b=2;\n  c==3}":      "/: invalid YSON at line 3, column 5: ",
		"{a=1;\n b=[1;2;3}":           "/: invalid YSON at line 2, column 10: ",
		"{a=1}\n{b=2}":                "/: invalid YSON at line 2, column 1: ",
		"{a=1;\n b=\"unterminated}\n": "/: invalid YSON at line 3, column 1: ",
	} {
		_, err := Decode([]byte(in))
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), want, in)
	}
}

func TestFieldsMap(t *testing.T) {
	n, err := Decode([]byte(`{p={a=1; b="x"}; s="not a map"}`))
	require.NoError(t, err)
	var w Walker
	f := w.Fields(n, "")
	assert.Equal(t, map[string]any{"a": int64(1), "b": "x"}, w.Fields(f.Node("p"), "p").Map())
	assert.Nil(t, w.Fields(f.Node("s"), "s").Map(), "not a map")
	assert.Nil(t, w.Fields(f.Node("absent"), "absent").Map())
	f.Close()
	require.Len(t, w.Problems(), 1)
	assert.Equal(t, "s: want map, got string", w.Problems()[0].String())
}

func TestUnknownKeySuggestion(t *testing.T) {
	n, err := Decode([]byte(`{wroker=1; batch_duraton=2; finit=3; colour=4; ab=5; schema_v2=6}`))
	require.NoError(t, err)
	w := Walker{Suggest: true}
	f := w.Fields(n, "")
	f.Skip("worker", "batch_duration", "finite", "cluster_url", "a", "schema")
	f.Close()
	var got []string
	for _, p := range w.Problems() {
		got = append(got, p.String())
	}
	assert.Equal(t, []string{
		`ab: unknown key`, // one edit in two characters is no typo
		`batch_duraton: unknown key (did you mean "batch_duration"?)`,
		`colour: unknown key`,
		`finit: unknown key (did you mean "finite"?)`,
		`schema_v2: unknown key`,
		`wroker: unknown key (did you mean "worker"?)`,
	}, got)
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"worker", "wroker", 1}, {"kitten", "sitting", 3}, {"abc", "abc", 0}, {"ca", "abc", 3}} {
		assert.Equal(t, c.d, editDistance(c.a, c.b), "%q %q", c.a, c.b)
	}
}

package flow

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestColumn(t *testing.T) {
	row := Row{
		"i": int64(-3), "u": uint64(7), "big": uint64(math.MaxUint64), "s": "x", "b": []byte("y"),
		"f": 1.5, "ok": true, "null": nil, "list": []any{int64(1)},
	}
	check := func(name string, got any, err error, want any) {
		t.Helper()
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("column %s = %#v, %v; want %#v", name, got, err, want)
		}
	}
	i, err := Column[int64](row, "i")
	check("i", i, err, int64(-3))
	i, err = Column[int64](row, "u")
	check("u as int64", i, err, int64(7))
	u, err := Column[uint64](row, "u")
	check("u", u, err, uint64(7))
	n, err := Column[int](row, "u")
	check("u as int", n, err, 7)
	f, err := Column[float64](row, "i")
	check("i as float64", f, err, float64(-3))
	s, err := Column[string](row, "b")
	check("b as string", s, err, "y")
	b, err := Column[[]byte](row, "s")
	check("s as bytes", b, err, []byte("x"))
	ok, err := Column[bool](row, "ok")
	check("ok", ok, err, true)
	l, err := Column[[]any](row, "list")
	check("list", l, err, []any{int64(1)})
	a, err := Column[any](row, "f")
	check("f as any", a, err, 1.5)

	for _, tc := range []struct {
		name, want string
		get        func() error
	}{
		{"missing", "missing or null", func() error { _, err := Column[string](row, "nope"); return err }},
		{"null", "missing or null", func() error { _, err := Column[string](row, "null"); return err }},
		{"type", "want string, got int64", func() error { _, err := Column[string](row, "i"); return err }},
		{"negative as uint", "want uint64, got int64", func() error { _, err := Column[uint64](row, "i"); return err }},
		{"overflow", "want int64, got uint64", func() error { _, err := Column[int64](row, "big"); return err }},
		{"float as int", "want int64, got float64", func() error { _, err := Column[int64](row, "f"); return err }},
	} {
		err := tc.get()
		if !errors.Is(err, ErrColumn) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want ErrColumn with %q", tc.name, err, tc.want)
		}
	}
}

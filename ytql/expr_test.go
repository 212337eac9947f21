package ytql

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseExpressionFarmHash(t *testing.T) {
	e, err := ParseExpression("farm_hash(word)")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Columns(); !reflect.DeepEqual(got, []string{"word"}) {
		t.Errorf("Columns() = %v", got)
	}
	v, err := e.Eval(map[string]any{"word": "abc"})
	if err != nil {
		t.Fatal(err)
	}
	if v != FarmHash("abc") {
		t.Errorf("Eval = %v, want %v", v, FarmHash("abc"))
	}

	e, err = ParseExpression("farm_hash(a, [$tablet_index], `b c`) % 16")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Columns(); !reflect.DeepEqual(got, []string{"a", "$tablet_index", "b c"}) {
		t.Errorf("Columns() = %v", got)
	}
	row := map[string]any{"a": "x", "$tablet_index": int64(3), "b c": uint64(7)}
	v, err = e.Eval(row)
	if err != nil {
		t.Fatal(err)
	}
	if want := FarmHash("x", int64(3), uint64(7)) % 16; v != want {
		t.Errorf("Eval = %v, want %v", v, want)
	}
}

func TestEvalExpressions(t *testing.T) {
	row := map[string]any{
		"i": int64(7), "u": uint64(10), "d": 2.5, "s": "Hello", "b": true, "n": nil,
		"k": 3, // Go int is widened to int64
	}
	for _, tc := range []struct {
		text string
		want any
	}{
		{"i", int64(7)},
		{"k", int64(3)},
		{"missing", nil},
		{"[$row_index]", nil},
		{"$row_index", nil},
		{"1 + 2 * 3", int64(7)},
		{"(1 + 2) * 3", int64(9)},
		{"-5 / 2", int64(-2)},
		{"-5 % 2", int64(-1)},
		{"-9223372036854775808", int64(-9223372036854775808)},
		{"10u / 3u", uint64(3)},
		{"u + 1", uint64(11)},
		{"u = 5 + 5", true},
		{"u - (2 * 3) = 4", true},
		{"u % 4", uint64(2)},
		{"d * 2", 5.0},
		{"1.5e1", 15.0},
		{".5", 0.5},
		{"i + n", nil},
		{"'a\\'b\\n'", "a'b\n"},
		{`"x\"y\\"`, `x"y\`},
		{"'\\x41'", "A"},
		{"%true", true},
		{"%false", false},
		{"TRUE", true},
		{"#", nil},
		{"null", nil},
		{"i = 7", true},
		{"i <> 7", false},
		{"i != 8", true},
		{"u = 10", true},
		{"u > 9", true},
		{"d >= 2.5", true},
		{"d < 3", true},
		{"s = 'Hello'", true},
		{"s < 'Z'", true},
		{"n = #", true},
		{"n < 1", true},
		{"n > 1", false},
		{"1 > n", true},
		{"b AND i > 1", true},
		{"NOT b", false},
		{"not n", nil},
		{"n AND %false", false},
		{"n AND %true", nil},
		{"n OR %true", true},
		{"n OR %false", nil},
		{"%false AND (1/0 = 1)", false}, // short-circuit
		{"i IN (1, 7, 9)", true},
		{"i NOT IN (1, 9)", true},
		{"u IN (10)", true},
		{"s in ('a', 'Hello')", true},
		{"n IN (#)", true},
		{"(i, s) IN ((7, 'Hello'), (1, 'x'))", true},
		{"(i, s) IN ((7, 'hello'))", false},
		{"(i, u) > (7, 9)", true},
		{"(i, u) > (7, 10)", false},
		{"(i, u) >= (7, 10)", true},
		{"(i, s) < (8, 'A')", true},
		{"i BETWEEN 1 AND 7", true},
		{"i BETWEEN 8 AND 9", false},
		{"i NOT BETWEEN 8 AND 9", true},
		{"(i, u) BETWEEN (7, 1) AND (7, 10)", true},
		{"i BETWEEN 1 AND 10 AND b", true},
		{"i BETWEEN (1 AND 2, 6 AND 8)", true},
		{"i BETWEEN (1 AND 2, 8 AND 9)", false},
		{"i NOT BETWEEN (1 AND 2, 8 AND 9)", true},
		{"(i, s) BETWEEN ((7, 'A') AND (7, 'Z'))", true},
		{"(i, u) BETWEEN (7, 1) AND (7, 10)", true},
		{"i IN (-1, +7)", true},
		{"i | 8", int64(15)},
		{"i & 3", int64(3)},
		{"1 << 4", int64(16)},
		{"u >> 1", uint64(5)},
		{"~0", int64(-1)},
		{"~0u", uint64(18446744073709551615)},
		{"1 | 2 = 3", true},
		{"1 < 2 = 3 < 4", true},
		{"i = 7 = %true", true},
		{"i - 1 << 1", int64(12)},
		{"u = 1 << 3 | 2", true},
		{"n IS NULL", true},
		{"i IS NULL", false},
		{"i IS NOT NULL", true},
		{"is_null(n)", true},
		{"is_null(i)", false},
		{"if(b, 'y', 'n')", "y"},
		{"if(n, 1, 2)", nil},
		{"if(i = 1, 1 / 0, 2)", int64(2)},
		{"if(b, 5, u)", uint64(5)},
		{"CASE WHEN i > 5 THEN 'big' WHEN i > 0 THEN 'small' ELSE 'none' END", "big"},
		{"CASE WHEN i > 50 THEN 'big' END", nil},
		{"CASE WHEN n THEN 1 ELSE 2 END", int64(2)},
		{"CASE i WHEN 1 THEN 'one' WHEN 7 THEN 'seven' END", "seven"},
		{"CASE n WHEN # THEN 'null' ELSE 'x' END", "null"},
		{"case s when 'Hello' then u else 0 end", uint64(10)},
		{"CASE WHEN %false THEN u ELSE 3 END", uint64(3)},
		{"CASE WHEN %true THEN 1 ELSE 1 / 0 END", int64(1)},
		{"if(%false, 1, 2)", int64(2)},
		{"if_null(n, 5)", int64(5)},
		{"if_null(u, 5)", uint64(10)},
		{"if_null(n, u)", uint64(10)},
		{"coalesce(n, n, s)", "Hello"},
		{"coalesce(n, #)", nil},
		{"coalesce(n, 3, u)", uint64(3)},
		{"is_nan(d)", false},
		{"is_nan(double(0) / 0)", true},
		{"is_substr('ell', s)", true},
		{"is_substr('x', s)", false},
		{"if(b, u, 1)", uint64(10)},
		{"lower(s)", "hello"},
		{"lower(n)", nil},
		{"concat(s, '!')", "Hello!"},
		{"s || '!' || s", "Hello!Hello"},
		{"d = 2.5 AND d > 2", true},
		{"is_prefix('He', s)", true},
		{"int64(u)", int64(10)},
		{"uint64(i)", uint64(7)},
		{"double(i) / 2", 3.5},
		{"farm_hash(s, i) = farm_hash('Hello', 7)", true},
		{"FARM_HASH(n)", FarmHash(nil)},
		{"-i", int64(-7)},
		{"- -i", int64(7)},
		{"+d", 2.5},
	} {
		t.Run(tc.text, func(t *testing.T) {
			e, err := ParseExpression(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Eval(row)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s = %#v, want %#v", tc.text, got, tc.want)
			}
		})
	}
}

func TestEvalPlaceholders(t *testing.T) {
	e, err := ParseExpression("(a, b) IN ({p1}, {p2}) AND c > {min}")
	if err != nil {
		t.Fatal(err)
	}
	row := map[string]any{"a": int64(1), "b": "x", "c": uint64(5)}
	ph := map[string]any{"p1": []any{0, "y"}, "p2": []any{1, "x"}, "min": 3}
	got, err := e.EvalWith(row, ph)
	if err != nil {
		t.Fatal(err)
	}
	if got != true {
		t.Errorf("got %v, want true", got)
	}
	if _, err := e.Eval(row); !errors.Is(err, ErrEval) || !strings.Contains(err.Error(), "{p1}") {
		t.Errorf("missing placeholder: err = %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		text string
		pos  int
		msg  string
	}{
		{"", 0, "unexpected end of text"},
		{"farm_hash(", 10, "unexpected end of text"},
		{"farm_hash(a", 11, `expected "," or ")", found end of text`},
		{"(a, b", 5, `expected "," or ")"`},
		{"a IN (1 2)", 8, `expected "," or ")"`},
		{"a +", 3, "unexpected end of text"},
		{"a b", 2, "after the expression"},
		{"nosuch(a)", 0, `unknown function "nosuch"`},
		{"is_null(a, b)", 0, "takes 1 argument"},
		{"sum(a)", 0, "aggregate function sum is not allowed here"},
		{"'abc", 0, "unterminated string"},
		{"[abc", 0, "unterminated [bracketed] name"},
		{"a = 'x\\q'", 6, "unknown escape"},
		{"9223372036854775808", 0, "out of int64 range"},
		{"99999999999999999999u", 0, "out of range"},
		{"a ? b", 2, "unexpected character"},
		{"a ~ b", 2, "after the expression"},
		{"a IN (b)", 6, "IN list items must be constants"},
		{"a IN (1 + 2)", 8, "IN list items must be constants"},
		{"a BETWEEN b AND 2", 10, "BETWEEN bounds must be constants"},
		{"a BETWEEN (1 AND 2, 3)", 21, "expected AND"},
		{"a IN 1", 5, `expected "("`},
		{"a BETWEEN 1 OR 2", 12, "expected AND"},
		{"a IS 1", 5, "expected NULL"},
		{"where", 0, "unexpected keyword WHERE"},
		{"{bad name}", 0, "bad placeholder name"},
		{"t.a = 1", 0, "qualified column name t.a outside a query"},
		{"CASE END", 5, "unexpected keyword END"},
		{"CASE x END", 7, "expected WHEN"},
		{"CASE WHEN a 1 END", 12, "expected THEN"},
		{"CASE WHEN a THEN 1", 18, "expected END"},
		{"12abc", 0, "bad number"},
	} {
		t.Run(tc.text, func(t *testing.T) {
			_, err := ParseExpression(tc.text)
			if !errors.Is(err, ErrParse) {
				t.Fatalf("err = %v, want ErrParse", err)
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.Pos != tc.pos {
				t.Errorf("err = %v, want position %d", err, tc.pos)
			}
			if !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "ytql: parse error at ") {
				t.Errorf("err = %q, want it to contain %q", err, tc.msg)
			}
		})
	}
}

func TestEvalErrors(t *testing.T) {
	row := map[string]any{"i": int64(1), "u": uint64(1), "s": "x", "d": 1.0, "l": []any{1}}
	for _, tc := range []struct {
		text string
		kind error
		msg  string
	}{
		{"i / 0", ErrEval, "division by zero"},
		{"u % 0u", ErrEval, "division by zero"},
		{"-9223372036854775808 / -1", ErrEval, "INT_MIN"},
		{"1 << -1", ErrEval, "negative shift count"},
		{"d | 1", ErrType, "operator | does not apply to double"},
		{"d & d", ErrType, "operator & does not apply to double"},
		{"~d", ErrType, "unary ~ needs an integer"},
		{"i = u", ErrType, "int64 vs uint64"},
		{"s + 1", ErrType, "string vs int64"},
		{"s + s", ErrType, "operator + does not apply to string"},
		{"d % 2.0", ErrType, "does not apply to double"},
		{"-1 = u", ErrType, "int64 vs uint64"},
		{"i = 7.0", ErrType, "int64 vs double"},
		{"d = 9007199254740993", ErrType, "double vs int64"},
		{"s || 1", ErrType, "string vs int64"},
		{"i || i", ErrType, "operator || needs strings"},
		{"NOT i", ErrType, "NOT needs a boolean"},
		{"i AND %true", ErrType, "AND needs boolean"},
		{"(i, u) = i", ErrType, "tuple with a scalar"},
		{"(i, u) = (1, 2, 3)", ErrType, "sizes 2 and 3"},
		{"farm_hash(d)", ErrType, "farm_hash accepts"},
		{"farm_hash(l)", ErrType, "farm_hash accepts"},
		{"(i, u)", ErrType, "tuple is not a value"},
		{"lower(i)", ErrType, "lower needs a string"},
		{"if(i, 1, 2)", ErrType, "if condition"},
		{"coalesce(i, u)", ErrType, "coalesce arguments"},
		{"is_nan(i)", ErrType, "is_nan needs a double"},
		{"double('x')", ErrType, "cannot cast"},
		{"CASE WHEN i THEN 1 END", ErrType, "WHEN condition must be boolean"},
		{"CASE i WHEN 's' THEN 1 END", ErrType, "int64 vs string"},
	} {
		t.Run(tc.text, func(t *testing.T) {
			e, err := ParseExpression(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Eval(row)
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want %v containing %q", err, tc.kind, tc.msg)
			}
		})
	}
}

// TestEvalNormalizesGoKinds: rows built by Go code may hold any integer
// kind, float32 or []byte; references see them as int64, uint64, double
// and string.
func TestEvalNormalizesGoKinds(t *testing.T) {
	for _, tc := range []struct {
		in, want any
	}{
		{int8(-3), int64(-3)}, {int16(300), int64(300)}, {int32(-70000), int64(-70000)}, {int(5), int64(5)},
		{uint(7), uint64(7)}, {uint8(255), uint64(255)}, {uint16(65535), uint64(65535)}, {uint32(1 << 31), uint64(1 << 31)},
		{float32(1.5), 1.5}, {[]byte("raw"), "raw"}, {true, true}, {map[string]any{"k": 1}, map[string]any{"k": 1}},
	} {
		e, err := ParseExpression("x")
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Eval(map[string]any{"x": tc.in})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("x = %#v: Eval = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

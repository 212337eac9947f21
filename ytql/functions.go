package ytql

import (
	"math"
	"strconv"
	"strings"
)

// function describes a scalar built-in.
type function struct {
	minArgs, maxArgs int // maxArgs < 0: variadic
	call             func(n *node, args []any) (any, error)
}

func (f function) arity() string {
	switch {
	case f.maxArgs < 0:
		return "at least " + strconv.Itoa(f.minArgs) + " argument(s)"
	case f.minArgs == f.maxArgs:
		return strconv.Itoa(f.minArgs) + " argument(s)"
	}
	return strconv.Itoa(f.minArgs) + ".." + strconv.Itoa(f.maxArgs) + " arguments"
}

var functions map[string]function

func init() {
	functions = map[string]function{
		"farm_hash": {1, -1, callFarmHash},
		"is_null": {1, 1, func(_ *node, a []any) (any, error) {
			return a[0] == nil, nil
		}},
		"if":        {3, 3, nil}, // evaluated lazily by evalIf
		"lower":     {1, 1, stringFunc("lower", strings.ToLower)},
		"concat":    {2, 2, callConcat},
		"is_prefix": {2, 2, callIsPrefix},
		"is_substr": {2, 2, callIsSubstr},
		"is_nan":    {1, 1, callIsNaN},
		"if_null":   {2, 2, callCoalesce},
		"coalesce":  {1, -1, callCoalesce},
		"int64":     {1, 1, castFunc("int64")},
		"uint64":    {1, 1, castFunc("uint64")},
		"double":    {1, 1, castFunc("double")},
	}
}

func callFarmHash(n *node, args []any) (any, error) {
	for i, a := range args {
		switch a.(type) {
		case nil, int64, uint64, bool, string:
		default:
			return nil, typeErrorf(n.args[i].pos, "farm_hash accepts int64, uint64, boolean and string arguments, got %s", typeName(a))
		}
	}
	return RowFingerprint(args...)
}

// evalIf evaluates if(c, a, b) lazily, like YTsaurus: a NULL condition
// gives NULL and only the chosen branch is evaluated.
func evalIf(n *node, en *env) (any, error) {
	c, err := eval(n.args[0], en)
	if err != nil {
		return nil, err
	}
	switch b := c.(type) {
	case nil:
		return nil, nil
	case bool:
		branches := []*node{n.args[1], n.args[2]}
		if b {
			return evalBranch(n.args[1], branches, en)
		}
		return evalBranch(n.args[2], branches, en)
	}
	return nil, typeErrorf(n.args[0].pos, "if condition must be boolean, got %s", typeName(c))
}

// callCoalesce returns the first non-NULL argument; all arguments must share
// one type (constants adapt).
func callCoalesce(n *node, a []any) (any, error) {
	var first any
	firstConst := true
	for i, v := range a {
		if v == nil {
			continue
		}
		if first == nil {
			first, firstConst = v, n.args[i].constant()
			continue
		}
		if _, _, err := unify(n.args[i].pos, first, firstConst, v, n.args[i].constant(), n.name+" arguments"); err != nil {
			return nil, err
		}
	}
	for i, v := range a {
		if v != nil {
			// Convert a constant to the type of the column-valued argument.
			for j, w := range a {
				if j != i && w != nil && !n.args[j].constant() && n.args[i].constant() {
					if c, ok := convertConst(v, w); ok {
						return c, nil
					}
				}
			}
			return v, nil
		}
	}
	return nil, nil
}

func callIsNaN(n *node, a []any) (any, error) {
	switch x := a[0].(type) {
	case nil:
		return false, nil
	case float64:
		return math.IsNaN(x), nil
	}
	return nil, typeErrorf(n.args[0].pos, "is_nan needs a double, got %s", typeName(a[0]))
}

func callIsSubstr(n *node, a []any) (any, error) {
	if a[0] == nil || a[1] == nil {
		return nil, nil
	}
	sub, ok1 := a[0].(string)
	s, ok2 := a[1].(string)
	if !ok1 || !ok2 {
		return nil, typeErrorf(n.pos, "is_substr needs strings, got %s and %s", typeName(a[0]), typeName(a[1]))
	}
	return strings.Contains(s, sub), nil
}

func stringFunc(name string, f func(string) string) func(*node, []any) (any, error) {
	return func(n *node, a []any) (any, error) {
		switch s := a[0].(type) {
		case nil:
			return nil, nil
		case string:
			return f(s), nil
		default:
			return nil, typeErrorf(n.args[0].pos, "%s needs a string, got %s", name, typeName(s))
		}
	}
}

func callConcat(n *node, a []any) (any, error) {
	if a[0] == nil || a[1] == nil {
		return nil, nil
	}
	x, ok1 := a[0].(string)
	y, ok2 := a[1].(string)
	if !ok1 || !ok2 {
		return nil, typeErrorf(n.pos, "concat needs strings, got %s and %s", typeName(a[0]), typeName(a[1]))
	}
	return x + y, nil
}

func callIsPrefix(n *node, a []any) (any, error) {
	if a[0] == nil || a[1] == nil {
		return nil, nil
	}
	p, ok1 := a[0].(string)
	s, ok2 := a[1].(string)
	if !ok1 || !ok2 {
		return nil, typeErrorf(n.pos, "is_prefix needs strings, got %s and %s", typeName(a[0]), typeName(a[1]))
	}
	return strings.HasPrefix(s, p), nil
}

func castFunc(to string) func(*node, []any) (any, error) {
	return func(n *node, a []any) (any, error) {
		switch x := a[0].(type) {
		case nil:
			return nil, nil
		case int64:
			switch to {
			case "int64":
				return x, nil
			case "uint64":
				return uint64(x), nil
			default:
				return float64(x), nil
			}
		case uint64:
			switch to {
			case "int64":
				return int64(x), nil
			case "uint64":
				return x, nil
			default:
				return float64(x), nil
			}
		case float64:
			switch to {
			case "int64":
				return int64(x), nil
			case "uint64":
				return uint64(x), nil
			default:
				return x, nil
			}
		}
		return nil, typeErrorf(n.args[0].pos, "cannot cast %s to %s", typeName(a[0]), to)
	}
}

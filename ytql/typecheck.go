package ytql

import (
	"math"
	"strings"

	"go.ytsaurus.tech/yt/go/schema"
)

// vtype is a static value type for CheckSchema. tUnknown (placeholders) and
// tAny (YSON any columns) are compatible with everything.
type vtype int

const (
	tUnknown vtype = iota
	tNull
	tInt64
	tUint64
	tDouble
	tBool
	tString
	tAny
)

func (t vtype) String() string {
	return [...]string{"unknown", "null", "int64", "uint64", "double", "boolean", "string", "any"}[t]
}

func (t vtype) numeric() bool { return t == tInt64 || t == tUint64 || t == tDouble }

// open reports whether t is compatible with any type.
func (t vtype) open() bool { return t == tUnknown || t == tNull || t == tAny }

// styp is the static type of an expression: adapt marks a constant integer
// that may take the other operand's numeric type, tuple the element types
// of a tuple.
type styp struct {
	t       vtype
	adapt   bool
	noFlip  bool // an adaptable integer that does not fit the other integer type
	inexact bool // an adaptable integer that a double cannot hold exactly
	tuple   []styp
}

// adaptsTo reports whether constant integer a may take type t.
func (a styp) adaptsTo(t vtype) bool {
	if !a.adapt || (a.t != tInt64 && a.t != tUint64) || !t.numeric() {
		return false
	}
	if t == tDouble {
		return !a.inexact
	}
	return !a.noFlip
}

// schemaType maps a column's schema type onto a query value type.
func schemaType(c schema.Column) vtype {
	t := c.Type
	if t == "" {
		switch x := c.ComplexType.(type) {
		case schema.Type:
			t = x
		case schema.Optional:
			if it, ok := x.Item.(schema.Type); ok {
				t = it
			}
		case schema.Tagged:
			if it, ok := x.Item.(schema.Type); ok {
				t = it
			}
		}
	}
	switch t {
	case schema.TypeInt64, schema.TypeInt32, schema.TypeInt16, schema.TypeInt8, schema.TypeInterval:
		return tInt64
	case schema.TypeUint64, schema.TypeUint32, schema.TypeUint16, schema.TypeUint8,
		schema.TypeDate, schema.TypeDatetime, schema.TypeTimestamp:
		return tUint64
	case schema.TypeFloat32, schema.TypeFloat64:
		return tDouble
	case schema.TypeBoolean, "bool":
		return tBool
	case schema.TypeBytes, schema.TypeString:
		return tString
	case schema.TypeNull, "void":
		return tNull
	}
	return tAny
}

// systemColumnTypes are the types of the system columns of ordered tables.
var systemColumnTypes = map[string]vtype{
	"$tablet_index": tInt64,
	"$row_index":    tInt64,
	"$timestamp":    tUint64,
}

type checker struct {
	cols       map[string]vtype
	aggs       []styp // types of a grouped query's aggregates by slot; nil outside
	aliasDepth int
}

func (c *checker) columnType(n *node) (vtype, error) {
	if t, ok := c.cols[n.name]; ok {
		return t, nil
	}
	if n.alias != nil {
		if c.aliasDepth >= maxAliasDepth {
			return 0, queryErrorf(n.pos, "alias %q refers to itself", n.name)
		}
		c.aliasDepth++
		defer func() { c.aliasDepth-- }()
		t, err := c.scalar(n.alias)
		return t.t, err
	}
	if t, ok := systemColumnTypes[n.name]; ok {
		return t, nil
	}
	if strings.HasPrefix(n.name, "$") {
		return tAny, nil
	}
	return 0, queryErrorf(n.pos, "undefined reference %q", n.name)
}

// unifyTypes is the static counterpart of unify.
func unifyTypes(pos int, a, b styp, what string) (styp, error) {
	if a.tuple != nil || b.tuple != nil {
		return styp{}, typeErrorf(pos, "a tuple is not allowed in %s", what)
	}
	switch {
	case a.t.open():
		if a.t == tAny && b.t != tNull && !b.t.open() {
			return styp{t: tAny}, nil
		}
		return b, nil
	case b.t.open():
		if b.t == tAny {
			return styp{t: tAny}, nil
		}
		return a, nil
	case a.t == b.t:
		return styp{t: a.t, adapt: a.adapt && b.adapt, noFlip: a.noFlip || b.noFlip, inexact: a.inexact || b.inexact}, nil
	case a.adaptsTo(b.t):
		return styp{t: b.t}, nil
	case b.adaptsTo(a.t):
		return styp{t: a.t}, nil
	}
	return styp{}, typeErrorf(pos, "type mismatch in %s: %s vs %s", what, a.t, b.t)
}

// compareTypes checks that two operands (scalars or tuples) can be compared.
func compareTypes(pos int, a, b styp) error {
	if (a.tuple != nil) != (b.tuple != nil) {
		scalar := a
		if a.tuple != nil {
			scalar = b
		}
		if scalar.t == tUnknown {
			return nil // a placeholder may hold a tuple
		}
		return typeErrorf(pos, "cannot compare a tuple with a scalar")
	}
	if a.tuple == nil {
		_, err := unifyTypes(pos, a, b, "comparison")
		return err
	}
	if len(a.tuple) != len(b.tuple) {
		return typeErrorf(pos, "cannot compare tuples of sizes %d and %d", len(a.tuple), len(b.tuple))
	}
	for i := range a.tuple {
		if _, err := unifyTypes(pos, a.tuple[i], b.tuple[i], "tuple comparison"); err != nil {
			return err
		}
	}
	return nil
}

// constType is the static type of a known constant value.
func constType(v any) styp {
	switch x := v.(type) {
	case nil:
		return styp{t: tNull}
	case int64:
		// A negative constant does not fit uint64 (see convertConst).
		_, exact := convertConst(x, 0.0)
		return styp{t: tInt64, adapt: true, noFlip: x < 0, inexact: !exact}
	case uint64:
		_, exact := convertConst(x, 0.0)
		return styp{t: tUint64, adapt: true, noFlip: x > math.MaxInt64, inexact: !exact}
	case float64:
		return styp{t: tDouble}
	case bool:
		return styp{t: tBool}
	default:
		return styp{t: tString}
	}
}

func (c *checker) infer(n *node) (styp, error) {
	if n.kind != nLiteral && n.kind != nTuple && n.constant() && len(placeholdersOf([]*node{n})) == 0 {
		// Constant arithmetic is folded, so its value decides how it adapts.
		if v, err := eval(n, &env{}); err == nil {
			if _, isTuple := v.(tuple); !isTuple {
				return constType(v), nil
			}
		}
	}
	switch n.kind {
	case nLiteral:
		return constType(n.value), nil
	case nColumn:
		t, err := c.columnType(n)
		return styp{t: t}, err
	case nPlaceholder:
		return styp{t: tUnknown, adapt: true}, nil
	case nTuple:
		out := styp{t: tUnknown, tuple: make([]styp, len(n.args))}
		for i, a := range n.args {
			at, err := c.infer(a)
			if err != nil {
				return styp{}, err
			}
			if at.tuple != nil {
				return styp{}, typeErrorf(a.pos, "nested tuples are not supported")
			}
			out.tuple[i] = at
		}
		return out, nil
	case nUnary:
		x, err := c.scalar(n.args[0])
		if err != nil {
			return styp{}, err
		}
		if n.op == "not" {
			if !x.t.open() && x.t != tBool {
				return styp{}, typeErrorf(n.pos, "NOT needs a boolean, got %s", x.t)
			}
			return styp{t: tBool}, nil
		}
		if n.op == "~" {
			if !x.t.open() && x.t != tInt64 && x.t != tUint64 {
				return styp{}, typeErrorf(n.pos, "unary ~ needs an integer, got %s", x.t)
			}
			return x, nil
		}
		if !x.t.open() && !x.t.numeric() {
			return styp{}, typeErrorf(n.pos, "unary %s needs a number, got %s", n.op, x.t)
		}
		return x, nil
	case nBinary:
		return c.inferBinary(n)
	case nIn:
		l, err := c.infer(n.args[0])
		if err != nil {
			return styp{}, err
		}
		for _, item := range n.list {
			r, err := c.infer(item)
			if err != nil {
				return styp{}, err
			}
			if err := compareTypes(item.pos, l, r); err != nil {
				return styp{}, err
			}
		}
		return styp{t: tBool}, nil
	case nBetween:
		v, err := c.infer(n.args[0])
		if err != nil {
			return styp{}, err
		}
		for _, bound := range n.list {
			t, err := c.infer(bound)
			if err != nil {
				return styp{}, err
			}
			if err := compareTypes(n.pos, v, t); err != nil {
				return styp{}, err
			}
		}
		return styp{t: tBool}, nil
	case nIsNull:
		if _, err := c.infer(n.args[0]); err != nil {
			return styp{}, err
		}
		return styp{t: tBool}, nil
	case nFunc:
		return c.inferFunc(n)
	case nAggregate:
		return c.inferAggregate(n)
	case nCase:
		return c.inferCase(n)
	}
	return styp{t: tUnknown}, nil
}

// scalar infers n and rejects tuples.
func (c *checker) scalar(n *node) (styp, error) {
	t, err := c.infer(n)
	if err == nil && t.tuple != nil {
		err = typeErrorf(n.pos, "a tuple is not a value here")
	}
	return t, err
}

func (c *checker) inferBinary(n *node) (styp, error) {
	if _, ok := comparisonOps[n.op]; ok {
		l, err := c.infer(n.args[0])
		if err != nil {
			return styp{}, err
		}
		r, err := c.infer(n.args[1])
		if err != nil {
			return styp{}, err
		}
		return styp{t: tBool}, compareTypes(n.pos, l, r)
	}
	l, err := c.scalar(n.args[0])
	if err != nil {
		return styp{}, err
	}
	r, err := c.scalar(n.args[1])
	if err != nil {
		return styp{}, err
	}
	switch n.op {
	case "and", "or":
		for _, x := range []styp{l, r} {
			if !x.t.open() && x.t != tBool {
				return styp{}, typeErrorf(n.pos, "%s needs boolean operands, got %s", strings.ToUpper(n.op), x.t)
			}
		}
		return styp{t: tBool}, nil
	}
	u, err := unifyTypes(n.pos, l, r, "operator "+n.op)
	if err != nil {
		return styp{}, err
	}
	switch {
	case u.t.open():
	case n.op == "||":
		if u.t != tString {
			return styp{}, typeErrorf(n.pos, "operator || needs strings, got %s", u.t)
		}
	case n.op == "%" || n.op == "|" || n.op == "&" || n.op == "<<" || n.op == ">>":
		if u.t != tInt64 && u.t != tUint64 {
			return styp{}, typeErrorf(n.pos, "operator %s does not apply to %s", n.op, u.t)
		}
	default:
		if !u.t.numeric() {
			return styp{}, typeErrorf(n.pos, "operator %s does not apply to %s", n.op, u.t)
		}
	}
	return u, nil
}

func (c *checker) inferFunc(n *node) (styp, error) {
	args := make([]styp, len(n.args))
	for i, a := range n.args {
		t, err := c.scalar(a)
		if err != nil {
			return styp{}, err
		}
		args[i] = t
	}
	want := func(i int, ok func(vtype) bool, what string) error {
		if args[i].t.open() || ok(args[i].t) {
			return nil
		}
		return typeErrorf(n.args[i].pos, "%s needs %s, got %s", n.name, what, args[i].t)
	}
	isString := func(t vtype) bool { return t == tString }
	switch n.name {
	case "farm_hash":
		for i := range args {
			if err := want(i, func(t vtype) bool { return t != tDouble }, "int64, uint64, boolean or string arguments"); err != nil {
				return styp{}, err
			}
		}
		return styp{t: tUint64}, nil
	case "is_null":
		return styp{t: tBool}, nil
	case "if":
		if err := want(0, func(t vtype) bool { return t == tBool }, "a boolean condition"); err != nil {
			return styp{}, err
		}
		return unifyTypes(n.pos, args[1], args[2], "if branches")
	case "if_null", "coalesce":
		r := args[0]
		for i := 1; i < len(args); i++ {
			var err error
			if r, err = unifyTypes(n.args[i].pos, r, args[i], n.name+" arguments"); err != nil {
				return styp{}, err
			}
		}
		return r, nil
	case "lower":
		return styp{t: tString}, want(0, isString, "a string")
	case "concat":
		if err := want(0, isString, "strings"); err != nil {
			return styp{}, err
		}
		return styp{t: tString}, want(1, isString, "strings")
	case "is_prefix", "is_substr":
		if err := want(0, isString, "strings"); err != nil {
			return styp{}, err
		}
		return styp{t: tBool}, want(1, isString, "strings")
	case "is_nan":
		return styp{t: tBool}, want(0, func(t vtype) bool { return t == tDouble }, "a double")
	case "int64", "uint64", "double":
		if err := want(0, vtype.numeric, "a number"); err != nil {
			return styp{}, err
		}
		return styp{t: map[string]vtype{"int64": tInt64, "uint64": tUint64, "double": tDouble}[n.name]}, nil
	}
	return styp{t: tUnknown}, nil
}

func (c *checker) inferAggregate(n *node) (styp, error) {
	if c.aggs != nil && n.slot < len(c.aggs) {
		return c.aggs[n.slot], nil
	}
	if n.name == "count" {
		if len(n.args) > 0 {
			if _, err := c.scalar(n.args[0]); err != nil {
				return styp{}, err
			}
		}
		return styp{t: tInt64}, nil
	}
	x, err := c.scalar(n.args[0])
	if err != nil {
		return styp{}, err
	}
	switch n.name {
	case "avg":
		// YTsaurus registers avg for int64 arguments only.
		if !x.t.open() && x.t != tInt64 {
			return styp{}, typeErrorf(n.pos, "avg needs int64 values, got %s", x.t)
		}
		return styp{t: tDouble}, nil
	case "sum":
		if !x.t.open() && !x.t.numeric() {
			return styp{}, typeErrorf(n.pos, "%s needs numbers, got %s", n.name, x.t)
		}
	default: // min, max
		if x.t == tAny {
			return styp{}, typeErrorf(n.pos, "%s needs comparable values, got any", n.name)
		}
	}
	return styp{t: x.t}, nil
}

// predicate checks that n is boolean (WHERE, HAVING).
func (c *checker) predicate(n *node) error {
	if n == nil {
		return nil
	}
	t, err := c.scalar(n)
	if err == nil && !t.t.open() && t.t != tBool {
		err = typeErrorf(n.pos, "predicate must be boolean, got %s", t.t)
	}
	return err
}

func (c *checker) inferCase(n *node) (styp, error) {
	var operand styp
	if n.args[0] != nil {
		var err error
		if operand, err = c.infer(n.args[0]); err != nil {
			return styp{}, err
		}
	}
	result := styp{t: tNull}
	merge := func(r *node) error {
		t, err := c.scalar(r)
		if err == nil {
			result, err = unifyTypes(r.pos, result, t, "CASE results")
		}
		return err
	}
	for i := 0; i+1 < len(n.list); i += 2 {
		w, err := c.infer(n.list[i])
		if err != nil {
			return styp{}, err
		}
		if n.args[0] != nil {
			if err := compareTypes(n.list[i].pos, operand, w); err != nil {
				return styp{}, err
			}
		} else if w.tuple != nil || (!w.t.open() && w.t != tBool) {
			return styp{}, typeErrorf(n.list[i].pos, "WHEN condition must be boolean, got %s", w.t)
		}
		if err := merge(n.list[i+1]); err != nil {
			return styp{}, err
		}
	}
	if n.args[1] != nil {
		if err := merge(n.args[1]); err != nil {
			return styp{}, err
		}
	}
	return result, nil
}

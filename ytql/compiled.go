// Compiled evaluation of the expressions that key every message: a column reference and
// farm_hash over columns, evaluated without the generic tree walk.

package ytql

import (
	"unsafe"

	farm "github.com/dgryski/go-farm"
)

// Compiled evaluates one expression like Expr.Eval, with the shapes that compute a message's
// key recognised at Compile and evaluated directly: a column reference, and farm_hash over
// column references. Anything else, and any row for which the direct path would not return a
// plain result (a value farm_hash cannot hash), goes through the generic evaluator, so results
// and errors are exactly Eval's (TestCompiledMatchesEval, FuzzCompiledMatchesEval).
//
// A Compiled is immutable and safe for concurrent use.
type Compiled struct {
	e    *Expr
	kind compiledKind
	cols []string // kindColumn: the column; kindFarmHash: the arguments' columns
}

type compiledKind int

const (
	kindGeneric  compiledKind = iota // Expr.Eval
	kindColumn                       // a column reference
	kindFarmHash                     // farm_hash(c1, …, cn) of column references
)

// Compile returns the compiled form of e.
func (e *Expr) Compile() *Compiled {
	c := &Compiled{e: e}
	switch n := e.root; {
	case n.kind == nColumn && n.op == "" && n.alias == nil:
		c.kind, c.cols = kindColumn, []string{n.name}
	case n.kind == nFunc && n.name == "farm_hash" && len(n.args) >= 1:
		cols := make([]string, len(n.args))
		for i, a := range n.args {
			if a.kind != nColumn || a.op != "" || a.alias != nil {
				return c
			}
			cols[i] = a.name
		}
		c.kind, c.cols = kindFarmHash, cols
	}
	return c
}

// Direct reports whether c evaluates without the generic evaluator (for rows whose values
// it can hash).
func (c *Compiled) Direct() bool { return c.kind != kindGeneric }

// String returns the text the expression was parsed from.
func (c *Compiled) String() string { return c.e.text }

// Eval evaluates the expression over row: exactly what Expr.Eval returns.
func (c *Compiled) Eval(row map[string]any) (any, error) {
	switch c.kind {
	case kindColumn:
		return normalize(row[c.cols[0]]), nil
	case kindFarmHash:
		result := uint64(0xdeadc0de)
		for _, col := range c.cols {
			h, ok := hashColumn(row[col])
			if !ok {
				// A value farm_hash refuses: the evaluator names it and its position.
				return c.e.Eval(row)
			}
			result = fingerprintPair(result, h)
		}
		return result ^ uint64(len(c.cols)), nil
	}
	return c.e.Eval(row)
}

// hashColumn is ValueFingerprint of a column value that farm_hash accepts (after normalize:
// NULL, int64, uint64, boolean, string); ok is false for any other value (a double, a
// composite), which farm_hash refuses. A []byte hashes its bytes, as the string normalize
// makes of it would, without the copy.
func hashColumn(v any) (h uint64, ok bool) {
	switch x := v.(type) {
	case nil:
		return fingerprintUint64(0), true
	case string:
		return farm.Fingerprint64(unsafe.Slice(unsafe.StringData(x), len(x))), true
	case []byte:
		return farm.Fingerprint64(x), true
	case int64:
		return fingerprintUint64(uint64(x)), true
	case uint64:
		return fingerprintUint64(x), true
	case bool:
		if x {
			return fingerprintUint64(1), true
		}
		return fingerprintUint64(0), true
	case int:
		return fingerprintUint64(uint64(int64(x))), true
	case int32:
		return fingerprintUint64(uint64(int64(x))), true
	case int16:
		return fingerprintUint64(uint64(int64(x))), true
	case int8:
		return fingerprintUint64(uint64(int64(x))), true
	case uint:
		return fingerprintUint64(uint64(x)), true
	case uint32:
		return fingerprintUint64(uint64(x)), true
	case uint16:
		return fingerprintUint64(uint64(x)), true
	case uint8:
		return fingerprintUint64(uint64(x)), true
	}
	return 0, false
}

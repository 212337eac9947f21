// The key of a message: a computation's group_by_schema compiled into an epoch.Keyer.

package job

import (
	"fmt"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytql"
)

// keyColumn computes one group-by column: a computed expression or a payload column.
type keyColumn struct {
	name string
	// expr is the column's expression compiled (ytql.Compiled): the usual farm_hash of
	// columns evaluates without the generic evaluator, with the same value and errors.
	expr *ytql.Compiled
}

// newKeyer compiles the group_by_schema of every computation of p into an epoch.Keyer.
func newKeyer(p *spec.Pipeline) (epoch.Keyer, error) {
	cols := map[string][]keyColumn{}
	for id, c := range p.Computations {
		cs, err := compileKey(c.GroupBy)
		if err != nil {
			return nil, fmt.Errorf("computation %s: group_by_schema %w", id, err)
		}
		cols[id] = cs
	}
	return func(dest string, payload flow.Row) (flow.Key, error) {
		cs, ok := cols[dest]
		if !ok {
			return nil, fmt.Errorf("unknown computation %s", dest)
		}
		return keyOf(cs, payload)
	}, nil
}

// compileKey compiles a key schema's columns (group_by_schema, key_schema_override).
func compileKey(s schema.Schema) ([]keyColumn, error) {
	var cs []keyColumn
	for _, col := range s.Columns {
		kc := keyColumn{name: col.Name}
		if col.Expression != "" {
			e, err := ytql.ParseExpression(col.Expression)
			if err != nil {
				return nil, fmt.Errorf("column %s: expression %q: %w", col.Name, col.Expression, err)
			}
			kc.expr = e.Compile()
		}
		cs = append(cs, kc)
	}
	return cs, nil
}

// keyOf is the key of payload by the compiled columns cs.
//
// Invariant: a computed key column is what the query language's evaluator gives for the
// payload (TestCompiledMatchesEval, TestKeyerMatchesEvaluator).
func keyOf(cs []keyColumn, payload flow.Row) (flow.Key, error) {
	key := make(flow.Key, 0, len(cs))
	for _, c := range cs {
		if c.expr == nil {
			key = append(key, normalize(payload[c.name]))
			continue
		}
		v, err := c.expr.Eval(payload)
		if err != nil {
			return nil, fmt.Errorf("key column %s: %w", c.name, err)
		}
		key = append(key, normalize(v))
	}
	return key, nil
}

// normalize maps Go integer and byte types onto the YSON value types a decoded key holds, so
// that a key computed from a fresh payload and the same key decoded from storage are equal.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case int16:
		return int64(x)
	case int8:
		return int64(x)
	case uint:
		return uint64(x)
	case uint32:
		return uint64(x)
	case uint16:
		return uint64(x)
	case uint8:
		return uint64(x)
	case float32:
		return float64(x)
	case []byte:
		return string(x)
	}
	return v
}

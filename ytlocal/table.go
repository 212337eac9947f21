package ytlocal

import (
	"fmt"
	"math"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yterrors"
)

const defaultMaxRowWeight = 16 << 20

var tableAttrNames = []string{"row_count", "chunk_count", "dynamic", "schema_mode", "sorted",
	"sorted_by", "key_columns", "data_weight", "uncompressed_data_size", "compressed_data_size",
	"compression_codec", "erasure_codec", "optimize_for"}

// emptySchema is the schema of a table created without one.
func emptySchema() any {
	return &yson.ValueWithAttrs{Attrs: map[string]any{"strict": false, "unique_keys": false}, Value: []any{}}
}

// tableSchema returns the parsed schema of a table node (empty non-strict when unset).
func (s *Server) tableSchema(n *node, tx *masterTx) schema.Schema {
	v, ok := s.tree.attrOf(n, tx, "schema")
	if !ok {
		return schema.Schema{Strict: ptrBool(false), UniqueKeys: false}
	}
	sc, err := parseSchemaValue(v)
	if err != nil {
		return schema.Schema{Strict: ptrBool(false)}
	}
	return sc
}

func ptrBool(b bool) *bool { return &b }

func parseSchemaValue(v any) (schema.Schema, error) {
	var sc schema.Schema
	raw, err := yson.Marshal(v)
	if err != nil {
		return sc, err
	}
	err = yson.Unmarshal(raw, &sc)
	return sc, err
}

func dynamicOf(s *Server, n *node, tx *masterTx) bool {
	v, _ := s.tree.attrOf(n, tx, "dynamic")
	b, _ := v.(bool)
	return b
}

// normalizeSchemaAttr validates a schema attribute value and returns its canonical form.
// Sorted dynamic tables always have unique keys.
func normalizeSchemaAttr(v any, dynamic bool) (any, error) {
	sc, err := parseSchemaValue(v)
	if err != nil {
		return nil, ytErr(yterrors.CodeGeneric, "Error parsing table schema: %v", err)
	}
	seen := map[string]bool{}
	sortedDone := false
	for _, c := range sc.Columns {
		if c.Name == "" {
			return nil, ytErr(yterrors.CodeGeneric, "Invalid table schema: column name cannot be empty")
		}
		if seen[c.Name] {
			return nil, ytErr(yterrors.CodeGeneric, "Invalid table schema: duplicate column %q", c.Name)
		}
		seen[c.Name] = true
		if c.SortOrder != schema.SortNone {
			if sortedDone {
				return nil, ytErr(yterrors.CodeGeneric, "Invalid table schema: key column %q follows a non-key column", c.Name)
			}
		} else {
			sortedDone = true
		}
	}
	if dynamic && len(sc.KeyColumns()) > 0 {
		sc.UniqueKeys = true
	}
	raw, err := yson.Marshal(sc)
	if err != nil {
		return nil, err
	}
	var out any
	if err := yson.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// prepareNodeAttrs validates and canonicalises creation attributes.
func (s *Server) prepareNodeAttrs(typ string, attrs map[string]any) error {
	switch typ {
	case "queue_consumer":
		attrs["dynamic"] = true
		attrs["treat_as_queue_consumer"] = true
		attrs["schema"] = consumerSchema()
	case "queue_producer":
		attrs["dynamic"] = true
		attrs["treat_as_queue_producer"] = true
		attrs["schema"] = producerSchema()
	}
	if err := checkCreationTablets(typ, attrs); err != nil {
		return err
	}
	if v, ok := attrs["schema"]; ok && storedType(typ) == "table" {
		dyn, _ := attrs["dynamic"].(bool)
		norm, err := normalizeSchemaAttr(v, dyn)
		if err != nil {
			return err
		}
		attrs["schema"] = norm
	}
	return nil
}

func col(name, typ string, sorted bool, required bool) map[string]any {
	m := map[string]any{"name": name, "type": typ, "required": required}
	if sorted {
		m["sort_order"] = "ascending"
	}
	return m
}

func consumerSchema() any {
	return &yson.ValueWithAttrs{Attrs: map[string]any{"strict": true, "unique_keys": true}, Value: []any{
		col("queue_cluster", "string", true, true),
		col("queue_path", "string", true, true),
		col("partition_index", "uint64", true, true),
		col("offset", "uint64", false, true),
		col("meta", "any", false, false),
	}}
}

func producerSchema() any {
	return &yson.ValueWithAttrs{Attrs: map[string]any{"strict": true, "unique_keys": true}, Value: []any{
		col("queue_cluster", "string", true, true),
		col("queue_path", "string", true, true),
		col("session_id", "string", true, true),
		col("sequence_number", "int64", false, true),
		col("epoch", "int64", false, true),
		col("user_meta", "any", false, false),
		col("system_meta", "any", false, false),
	}}
}

// TableMounter is implemented by the dynamic-table extension to mount tables that
// ytlocal creates already mounted (queue_consumer, queue_producer).
type TableMounter interface {
	MountCreatedTable(id guid.GUID) error
}

// afterCreate runs creation side effects inside tx.
func (s *Server) afterCreate(tx *masterTx, n *node, requestedType string) {
	if requestedType != "queue_consumer" && requestedType != "queue_producer" {
		return
	}
	tx.afterCommit = append(tx.afterCommit, func() {
		for _, name := range s.extOrder {
			if m, ok := s.exts[name].(TableMounter); ok {
				if err := m.MountCreatedTable(n.id); err != nil {
					s.log.Warn("ytlocal: auto-mount failed")
				}
			}
		}
	})
}

func (s *Server) tableAttr(n *node, tx *masterTx, name string) (any, bool) {
	c := s.tree.contentOf(n, tx)
	switch name {
	case "schema":
		if v, ok := s.tree.attrOf(n, tx, "schema"); ok {
			return v, true
		}
		return emptySchema(), true
	case "schema_mode":
		if _, ok := s.tree.attrOf(n, tx, "schema"); ok {
			return "strong", true
		}
		return "weak", true
	case "dynamic":
		return dynamicOf(s, n, tx), true
	case "row_count":
		return int64(len(c.rows)), true
	case "chunk_count":
		if len(c.rows) == 0 {
			return int64(0), true
		}
		return int64(1), true
	case "data_weight", "uncompressed_data_size", "compressed_data_size":
		var w int64
		for _, r := range c.rows {
			w += valueWeight(r)
		}
		return w, true
	case "sorted", "sorted_by", "key_columns":
		sc := s.tableSchema(n, tx)
		keys := []any{}
		for _, col := range sc.Columns {
			if col.SortOrder != schema.SortNone {
				keys = append(keys, col.Name)
			}
		}
		if name == "sorted" {
			return len(keys) > 0, true
		}
		if name == "sorted_by" && len(keys) == 0 {
			return nil, false
		}
		return keys, true
	case "compression_codec":
		return "lz4", true
	case "erasure_codec":
		return "none", true
	case "optimize_for":
		return "lookup", true
	}
	return nil, false
}

// valueWeight approximates YTsaurus data weight of a value.
func valueWeight(v any) int64 {
	switch x := v.(type) {
	case nil:
		return 1
	case string:
		return int64(len(x))
	case []byte:
		return int64(len(x))
	case map[string]any:
		var w int64 = 1
		for k, e := range x {
			w += int64(len(k)) + valueWeight(e)
		}
		return w
	case []any:
		var w int64 = 1
		for _, e := range x {
			w += valueWeight(e)
		}
		return w
	case *yson.ValueWithAttrs:
		return valueWeight(x.Value) + valueWeight(x.Attrs)
	}
	return 8
}

// convertValue coerces v to the column's physical type.
func convertValue(c *schema.Column, v any) (any, error) {
	if v == nil {
		if c.Required {
			return nil, fmt.Errorf("required column %q is null or missing", c.Name)
		}
		return nil, nil
	}
	if c.ComplexType != nil && c.Type == "" {
		return v, nil
	}
	bad := func() error {
		return fmt.Errorf("column %q of type %s got a value of type %s", c.Name, c.Type, ysonTypeName(v))
	}
	switch c.Type {
	case schema.TypeInt64, schema.TypeInt32, schema.TypeInt16, schema.TypeInt8, schema.TypeInterval:
		switch x := v.(type) {
		case int64:
			return x, nil
		case uint64:
			if x > math.MaxInt64 {
				return nil, bad()
			}
			return int64(x), nil
		}
		return nil, bad()
	case schema.TypeUint64, schema.TypeUint32, schema.TypeUint16, schema.TypeUint8,
		schema.TypeDate, schema.TypeDatetime, schema.TypeTimestamp:
		switch x := v.(type) {
		case uint64:
			return x, nil
		case int64:
			if x < 0 {
				return nil, bad()
			}
			return uint64(x), nil
		}
		return nil, bad()
	case schema.TypeFloat64, schema.TypeFloat32:
		switch x := v.(type) {
		case float64:
			return x, nil
		case int64:
			return float64(x), nil
		case uint64:
			return float64(x), nil
		}
		return nil, bad()
	case schema.TypeBoolean:
		if _, ok := v.(bool); ok {
			return v, nil
		}
		return nil, bad()
	case schema.TypeBytes, schema.TypeString:
		if _, ok := v.(string); ok {
			return v, nil
		}
		return nil, bad()
	}
	return v, nil
}

// validateRows checks and converts rows for a table with schema sc.
func validateRows(sc schema.Schema, rows []any, maxWeight int64, path string) ([]any, error) {
	strict := sc.Strict == nil || *sc.Strict
	cols := map[string]*schema.Column{}
	for i := range sc.Columns {
		cols[sc.Columns[i].Name] = &sc.Columns[i]
	}
	out := make([]any, len(rows))
	for i, r := range rows {
		m, ok := yson.ValueOf(r).(map[string]any)
		if !ok {
			return nil, withAttrs(ytErr(yterrors.CodeGeneric, "Row %d written to %s is %s, expected a map", i, path, ysonTypeName(r)), "path", path, "row_index", int64(i))
		}
		if w := valueWeight(m); w > maxWeight {
			return nil, withAttrs(ytErr(yterrors.CodeRowWeightLimitExceeded,
				"Row weight is too large (%d > %d) in row %d written to %s", w, maxWeight, i, path), "path", path, "row_weight", w, "row_weight_limit", maxWeight)
		}
		if len(sc.Columns) == 0 {
			out[i] = m
			continue
		}
		nm := make(map[string]any, len(m))
		for k, v := range m {
			c, ok := cols[k]
			if !ok {
				if strict {
					return nil, withAttrs(ytErr(yterrors.CodeSchemaViolation, "Unknown column %q in row %d written to %s (strict schema)", k, i, path), "path", path)
				}
				nm[k] = v
				continue
			}
			cv, err := convertValue(c, v)
			if err != nil {
				return nil, withAttrs(ytErr(yterrors.CodeSchemaViolation, "Schema violation in row %d written to %s: %v", i, path, err), "path", path)
			}
			if cv != nil {
				nm[k] = cv
			}
		}
		for _, c := range sc.Columns {
			if _, ok := nm[c.Name]; !ok && c.Required {
				return nil, withAttrs(ytErr(yterrors.CodeSchemaViolation, "Schema violation in row %d written to %s: required column %q is missing", i, path, c.Name), "path", path)
			}
		}
		out[i] = nm
	}
	return out, nil
}

func rowKey(row any, keys []string) []any {
	m, _ := row.(map[string]any)
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

func init() {
	registerCommand("write_table", commandOpts{Mutating: true, Heavy: true}, cmdWriteTable)
	registerCommand("read_table", commandOpts{Heavy: true}, cmdReadTable)
	registerCommand("write_file", commandOpts{Mutating: true, Heavy: true}, cmdWriteFile)
	registerCommand("read_file", commandOpts{Heavy: true}, cmdReadFile)
}

// checkCreationTablets validates the tablet_count and pivot_keys attributes of a table
// being created: a positive integer, a list of keys whose first is empty, not both, and only
// on dynamic tables (dynExt.ensureTable reshards the new table by them; the engine checks
// the keys against the schema).
func checkCreationTablets(typ string, attrs map[string]any) error {
	count, hasCount := attrs["tablet_count"]
	pivots, hasPivots := attrs["pivot_keys"]
	if !hasCount && !hasPivots {
		return nil
	}
	if dyn, _ := attrs["dynamic"].(bool); storedType(typ) != "table" || !dyn {
		return ytErr(yterrors.CodeGeneric, "Attributes \"tablet_count\" and \"pivot_keys\" are valid only for dynamic tables")
	}
	if hasCount && hasPivots {
		return ytErr(yterrors.CodeGeneric, "Cannot specify both \"tablet_count\" and \"pivot_keys\"")
	}
	if hasCount {
		switch v := yson.ValueOf(count).(type) {
		case int64:
			if v >= 1 {
				return nil
			}
		case uint64:
			if v >= 1 {
				return nil
			}
		}
		return ytErr(yterrors.CodeGeneric, "Error parsing attribute \"tablet_count\": %v is not a positive integer", count)
	}
	list, ok := yson.ValueOf(pivots).([]any)
	if !ok || len(list) == 0 {
		return ytErr(yterrors.CodeGeneric, "Error parsing attribute \"pivot_keys\": not a non-empty list of keys")
	}
	for i, item := range list {
		key, ok := yson.ValueOf(item).([]any)
		if !ok {
			return ytErr(yterrors.CodeGeneric, "Error parsing attribute \"pivot_keys\": pivot key %d is %s, not a list", i, ysonTypeName(item))
		}
		if i == 0 && len(key) != 0 {
			return ytErr(yterrors.CodeGeneric, "First pivot key must be empty")
		}
	}
	return nil
}

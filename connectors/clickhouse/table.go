package clickhouse

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/registry"
)

// ErrTarget is wrapped by the errors of a target table the sink cannot write exactly as
// asked: a missing table, a rejected engine, a column that is missing or of another type.
// Another attempt repeats them; the table must change, then the pipeline be paused and
// started.
var ErrTarget = errors.New("unsuitable ClickHouse table")

// Engine is what the session learns of the table's engine from system.tables.
type Engine struct {
	// Name is system.tables.engine ("MergeTree", "ReplicatedMergeTree", "Distributed").
	Name string
	// Full is system.tables.engine_full (with its SETTINGS clause).
	Full string
	// DefaultWindow is the server's non_replicated_deduplication_window
	// (system.merge_tree_settings), used when the table does not set its own.
	DefaultWindow int64
}

// Dedup is how the table deduplicates inserted blocks.
type Dedup struct {
	// Deduplicates tells whether a repeat of a block with the same token is dropped.
	Deduplicates bool
	// Setting names the setting that sets the window ("non_replicated_deduplication_window",
	// "replicated_deduplication_window_seconds"), "" when the engine's own.
	Setting string
	// Blocks is the window in blocks (non-replicated MergeTree), 0 when not counted in
	// blocks; Window the window in time when known, else 0.
	Blocks int64
	Window time.Duration
}

var windowSetting = regexp.MustCompile(`\b(non_replicated_deduplication_window|replicated_deduplication_window_seconds)\s*=\s*'?(\d+)`)

// CheckHosts refuses a failover list of several hosts in front of a table that is not
// replicated: each server's table would be another table, whose deduplication does not know
// the tokens the others got, so a failover could insert a block twice. Pure.
func CheckHosts(e Engine, hosts []string) error {
	if len(hosts) < 2 || strings.HasPrefix(e.Name, "Replicated") || strings.HasPrefix(e.Name, "Shared") {
		return nil
	}
	return fmt.Errorf("%w: hosts lists %d servers (%s) but engine %s is not replicated: a failover would insert into an independent table that cannot deduplicate what the others hold", ErrTarget, len(hosts), strings.Join(hosts, ", "), e.Name)
}

// CheckEngine decides whether the batching sink may write exactly once into a table of
// engine e: Replicated*MergeTree and Shared*MergeTree deduplicate; a non-replicated
// *MergeTree deduplicates when its non_replicated_deduplication_window (its own or the
// server's) is positive, and is accepted without deduplication otherwise (warn says so:
// exactly-once degrades to at-least-once); Distributed and engines outside the MergeTree
// family are rejected with an error wrapping ErrTarget. Pure.
func CheckEngine(e Engine) (d Dedup, warn string, err error) {
	switch {
	case e.Name == "Distributed":
		return d, "", fmt.Errorf("%w: engine Distributed is not accepted: insert into the shards' local tables (TShardedClickHouseBatchingSink), whose engine deduplicates blocks", ErrTarget)
	case !strings.HasSuffix(e.Name, "MergeTree"):
		return d, "", fmt.Errorf("%w: engine %s is not of the MergeTree family, which alone deduplicates inserted blocks", ErrTarget, e.Name)
	}
	settings := map[string]int64{}
	for _, m := range windowSetting.FindAllStringSubmatch(e.Full, -1) {
		v, _ := strconv.ParseInt(m[2], 10, 64)
		settings[m[1]] = v
	}
	if strings.HasPrefix(e.Name, "Replicated") || strings.HasPrefix(e.Name, "Shared") {
		d = Dedup{Deduplicates: true}
		if s, ok := settings["replicated_deduplication_window_seconds"]; ok {
			d.Setting, d.Window = "replicated_deduplication_window_seconds", time.Duration(s)*time.Second
		}
		return d, "", nil
	}
	w, ok := settings["non_replicated_deduplication_window"]
	if !ok {
		w = e.DefaultWindow
	}
	if w <= 0 {
		return d, fmt.Sprintf("engine %s without non_replicated_deduplication_window does not deduplicate inserted blocks: exactly-once degrades to at-least-once", e.Name), nil
	}
	return Dedup{Deduplicates: true, Setting: "non_replicated_deduplication_window", Blocks: w}, "", nil
}

// Column is a column of the table, from system.columns.
type Column struct {
	Name, Type string
	// DefaultKind is "", "DEFAULT", "MATERIALIZED", "ALIAS" or "EPHEMERAL".
	DefaultKind string
}

// kind is the Go value class a ClickHouse base type takes.
type kind uint8

const (
	kInt kind = iota + 1
	kUint
	kFloat
	kBool
	kString
	kDate     // Date, Date32
	kDateTime // DateTime, DateTime64
)

// chType is a column's type reduced to what conversion needs.
type chType struct {
	base     string // "UInt64", "FixedString(8)", "DateTime64(6, 'UTC')"
	kind     kind
	bits     int // integer and float widths
	nullable bool
}

// parseType reduces a ClickHouse type; ok is false for a type the sinks do not write.
func parseType(t string) (c chType, ok bool) {
	for {
		switch {
		case strings.HasPrefix(t, "LowCardinality(") && strings.HasSuffix(t, ")"):
			t = t[len("LowCardinality(") : len(t)-1]
			continue
		case strings.HasPrefix(t, "Nullable(") && strings.HasSuffix(t, ")"):
			t, c.nullable = t[len("Nullable("):len(t)-1], true
			continue
		}
		break
	}
	c.base = t
	name := t
	if i := strings.IndexByte(t, '('); i >= 0 {
		name = t[:i]
	}
	switch name {
	case "Int8", "Int16", "Int32", "Int64":
		c.kind, c.bits = kInt, atoi(name[3:])
	case "UInt8", "UInt16", "UInt32", "UInt64":
		c.kind, c.bits = kUint, atoi(name[4:])
	case "Float32", "Float64":
		c.kind, c.bits = kFloat, atoi(name[5:])
	case "Bool":
		c.kind = kBool
	case "String", "FixedString":
		c.kind = kString
	case "Date", "Date32":
		c.kind = kDate
	case "DateTime", "DateTime64":
		c.kind = kDateTime
	default:
		return c, false
	}
	return c, true
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// streamKinds are the stream column types the sinks write and the ClickHouse kinds each
// may go to.
var streamKinds = map[schema.Type][]kind{
	schema.TypeInt8: {kInt, kUint, kFloat}, schema.TypeInt16: {kInt, kUint, kFloat}, schema.TypeInt32: {kInt, kUint, kFloat}, schema.TypeInt64: {kInt, kUint, kFloat},
	schema.TypeUint8: {kInt, kUint, kFloat}, schema.TypeUint16: {kInt, kUint, kFloat}, schema.TypeUint32: {kInt, kUint, kFloat}, schema.TypeUint64: {kInt, kUint, kFloat},
	schema.TypeFloat32: {kFloat}, schema.TypeFloat64: {kFloat},
	schema.TypeBoolean: {kBool, kUint},
	schema.TypeBytes:   {kString}, schema.TypeString: {kString},
	schema.TypeDate: {kDate}, schema.TypeDatetime: {kDateTime}, schema.TypeTimestamp: {kDateTime},
}

// plan is how rows go into the table: the insert's columns and each one's conversion.
type plan struct {
	cols   []string // table column names, in insert order
	types  []chType
	stream []schema.Type // the stream column type of each
}

// planColumns maps the sink's input stream columns onto the table's columns: each stream
// column needs a table column of the same name that is not MATERIALIZED or ALIAS, of a type
// its values convert to, Nullable when the stream column is optional. Table columns no
// stream has take their defaults. All problems are reported together, wrapping ErrTarget.
// Pure.
func planColumns(inputs []registry.Input, table []Column) (*plan, error) {
	byName := map[string]Column{}
	for _, c := range table {
		byName[c.Name] = c
	}
	p := &plan{}
	seen := map[string]bool{}
	var problems []string
	for _, in := range inputs {
		for _, sc := range in.Schema.Columns {
			if seen[sc.Name] {
				continue
			}
			seen[sc.Name] = true
			tc, ok := byName[sc.Name]
			if !ok {
				problems = append(problems, fmt.Sprintf("stream %q column %q: the table has no such column", in.ID, sc.Name))
				continue
			}
			if tc.DefaultKind == "MATERIALIZED" || tc.DefaultKind == "ALIAS" {
				problems = append(problems, fmt.Sprintf("stream %q column %q: the table's column is %s and cannot be inserted", in.ID, sc.Name, tc.DefaultKind))
				continue
			}
			ct, ok := parseType(tc.Type)
			kinds := streamKinds[sc.Type]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("column %q: table type %s is not one the sink writes", sc.Name, tc.Type))
				continue
			case !containsKind(kinds, ct.kind):
				problems = append(problems, fmt.Sprintf("stream %q column %q of type %s does not convert to table type %s", in.ID, sc.Name, sc.Type, tc.Type))
				continue
			case !sc.Required && !ct.nullable:
				problems = append(problems, fmt.Sprintf("stream %q column %q is optional but table type %s is not Nullable", in.ID, sc.Name, tc.Type))
				continue
			}
			p.cols, p.types, p.stream = append(p.cols, sc.Name), append(p.types, ct), append(p.stream, sc.Type)
		}
	}
	if len(inputs) == 0 {
		problems = append(problems, "the sink's input stream schemas are unknown (the spec was not validated)")
	} else if len(p.cols) == 0 && len(problems) == 0 {
		problems = append(problems, "no stream column to insert")
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrTarget, strings.Join(problems, "; "))
	}
	return p, nil
}

func containsKind(ks []kind, k kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// convert turns a row value (as decoded from YSON: int64, uint64, float64, bool, string,
// []byte or nil) of a stream column of type st into the Go value the driver appends to a
// column of type t. Pure.
func convert(v any, st schema.Type, t chType) (any, error) {
	if v == nil {
		if t.nullable {
			return nil, nil
		}
		return nil, fmt.Errorf("null into %s", t.base)
	}
	switch t.kind {
	case kInt:
		var n int64
		switch x := v.(type) {
		case int64:
			n = x
		case uint64:
			if x > math.MaxInt64 {
				return nil, fmt.Errorf("%d overflows %s", x, t.base)
			}
			n = int64(x)
		default:
			return nil, fmt.Errorf("%T into %s", v, t.base)
		}
		if t.bits < 64 && (n < -(1<<(t.bits-1)) || n >= 1<<(t.bits-1)) {
			return nil, fmt.Errorf("%d overflows %s", n, t.base)
		}
		switch t.bits {
		case 8:
			return int8(n), nil
		case 16:
			return int16(n), nil
		case 32:
			return int32(n), nil
		}
		return n, nil
	case kUint:
		var n uint64
		switch x := v.(type) {
		case uint64:
			n = x
		case int64:
			if x < 0 {
				return nil, fmt.Errorf("%d overflows %s", x, t.base)
			}
			n = uint64(x)
		case bool:
			if x {
				n = 1
			}
		default:
			return nil, fmt.Errorf("%T into %s", v, t.base)
		}
		if t.bits < 64 && n >= 1<<t.bits {
			return nil, fmt.Errorf("%d overflows %s", n, t.base)
		}
		switch t.bits {
		case 8:
			return uint8(n), nil
		case 16:
			return uint16(n), nil
		case 32:
			return uint32(n), nil
		}
		return n, nil
	case kFloat:
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case int64:
			f = float64(x)
		case uint64:
			f = float64(x)
		default:
			return nil, fmt.Errorf("%T into %s", v, t.base)
		}
		if t.bits == 32 {
			return float32(f), nil
		}
		return f, nil
	case kBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case kString:
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return string(x), nil
		}
	case kDate, kDateTime:
		var n int64
		switch x := v.(type) {
		case uint64:
			n = int64(x)
		case int64:
			n = x
		default:
			return nil, fmt.Errorf("%T into %s", v, t.base)
		}
		switch st {
		case schema.TypeDate:
			return time.Unix(n*86400, 0).UTC(), nil
		case schema.TypeDatetime:
			return time.Unix(n, 0).UTC(), nil
		default: // timestamp: microseconds
			return time.UnixMicro(n).UTC(), nil
		}
	}
	return nil, fmt.Errorf("%T into %s", v, t.base)
}

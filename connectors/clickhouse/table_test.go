package clickhouse

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/registry"
)

// TestCheckEngine: the engines that deduplicate blocks are accepted, plain MergeTree with a
// warning, Distributed and non-MergeTree engines rejected.
func TestCheckEngine(t *testing.T) {
	for _, tc := range []struct {
		e       Engine
		want    Dedup
		warn    bool
		reject  bool
		message string
	}{
		{e: Engine{Name: "ReplicatedMergeTree", Full: "ReplicatedMergeTree('/ch/t', '{replica}') ORDER BY id"}, want: Dedup{Deduplicates: true}},
		{e: Engine{Name: "ReplicatedReplacingMergeTree", Full: "ReplicatedReplacingMergeTree ORDER BY id SETTINGS replicated_deduplication_window_seconds = 600"},
			want: Dedup{Deduplicates: true, Setting: "replicated_deduplication_window_seconds", Window: 10 * time.Minute}},
		{e: Engine{Name: "SharedMergeTree"}, want: Dedup{Deduplicates: true}},
		{e: Engine{Name: "MergeTree", Full: "MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 1000, index_granularity = 8192"},
			want: Dedup{Deduplicates: true, Setting: "non_replicated_deduplication_window", Blocks: 1000}},
		{e: Engine{Name: "ReplacingMergeTree", Full: "ReplacingMergeTree ORDER BY id", DefaultWindow: 100},
			want: Dedup{Deduplicates: true, Setting: "non_replicated_deduplication_window", Blocks: 100}},
		{e: Engine{Name: "MergeTree", Full: "MergeTree ORDER BY id"}, warn: true},
		{e: Engine{Name: "MergeTree", Full: "MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 0", DefaultWindow: 5}, warn: true},
		{e: Engine{Name: "Distributed", Full: "Distributed('c', 'db', 't')"}, reject: true, message: "engine Distributed is not accepted"},
		{e: Engine{Name: "Log"}, reject: true, message: "engine Log is not of the MergeTree family"},
		{e: Engine{Name: "Memory"}, reject: true, message: "engine Memory is not of the MergeTree family"},
	} {
		d, warn, err := CheckEngine(tc.e)
		if tc.reject {
			require.Error(t, err, tc.e.Name)
			assert.True(t, errors.Is(err, ErrTarget))
			assert.Contains(t, err.Error(), tc.message)
			continue
		}
		require.NoError(t, err, tc.e.Full)
		assert.Equal(t, tc.want, d, tc.e.Full)
		assert.Equal(t, tc.warn, warn != "", "%s: warning %q", tc.e.Full, warn)
	}
}

func input(cols ...schema.Column) []registry.Input {
	return []registry.Input{{ID: "rows", Schema: schema.Schema{Columns: cols}}}
}

// TestPlanColumns: stream columns map onto table columns by name and convertible type;
// every problem is reported at once.
func TestPlanColumns(t *testing.T) {
	table := []Column{
		{Name: "id", Type: "UInt64"}, {Name: "name", Type: "LowCardinality(String)"}, {Name: "score", Type: "Nullable(Float64)"},
		{Name: "at", Type: "DateTime64(6)"}, {Name: "day", Type: "Date", DefaultKind: "MATERIALIZED"}, {Name: "note", Type: "String", DefaultKind: "DEFAULT"},
		{Name: "tags", Type: "Array(String)"},
	}
	p, err := planColumns(input(
		schema.Column{Name: "id", Type: schema.TypeUint64, Required: true},
		schema.Column{Name: "name", Type: schema.TypeString, Required: true},
		schema.Column{Name: "score", Type: schema.TypeFloat64},
		schema.Column{Name: "at", Type: schema.TypeTimestamp, Required: true},
	), table)
	require.NoError(t, err)
	assert.Equal(t, []string{"id", "name", "score", "at"}, p.cols)

	_, err = planColumns(input(
		schema.Column{Name: "id", Type: schema.TypeString, Required: true},
		schema.Column{Name: "name", Type: schema.TypeString},
		schema.Column{Name: "missing", Type: schema.TypeInt64, Required: true},
		schema.Column{Name: "day", Type: schema.TypeDate, Required: true},
		schema.Column{Name: "tags", Type: schema.TypeString, Required: true},
	), table)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrTarget))
	for _, want := range []string{
		`stream "rows" column "id" of type utf8 does not convert to table type UInt64`,
		`stream "rows" column "name" is optional but table type LowCardinality(String) is not Nullable`,
		`stream "rows" column "missing": the table has no such column`,
		`stream "rows" column "day": the table's column is MATERIALIZED and cannot be inserted`,
		`column "tags": table type Array(String) is not one the sink writes`,
	} {
		assert.Contains(t, err.Error(), want)
	}

	_, err = planColumns(nil, table)
	assert.ErrorContains(t, err, "input stream schemas are unknown")
}

// TestConvert: values convert to the driver's types within their ranges.
func TestConvert(t *testing.T) {
	ty := func(s string) chType { c, ok := parseType(s); require.True(t, ok, s); return c }
	for _, tc := range []struct {
		v    any
		st   schema.Type
		ct   string
		want any
		err  string
	}{
		{uint64(7), schema.TypeUint64, "UInt64", uint64(7), ""},
		{int64(-3), schema.TypeInt64, "Int8", int8(-3), ""},
		{int64(300), schema.TypeInt64, "Int8", nil, "300 overflows Int8"},
		{int64(-1), schema.TypeInt64, "UInt32", nil, "-1 overflows UInt32"},
		{uint64(70000), schema.TypeUint64, "UInt16", nil, "70000 overflows UInt16"},
		{true, schema.TypeBoolean, "UInt8", uint8(1), ""},
		{1.5, schema.TypeFloat64, "Float32", float32(1.5), ""},
		{"x", schema.TypeString, "Nullable(String)", "x", ""},
		{nil, schema.TypeString, "Nullable(String)", nil, ""},
		{nil, schema.TypeString, "String", nil, "null into String"},
		{uint64(1), schema.TypeDate, "Date", time.Unix(86400, 0).UTC(), ""},
		{int64(1_500_000), schema.TypeTimestamp, "DateTime64(6)", time.UnixMicro(1_500_000).UTC(), ""},
		{"x", schema.TypeString, "UInt64", nil, "string into UInt64"},
	} {
		got, err := convert(tc.v, tc.st, ty(tc.ct))
		if tc.err != "" {
			assert.EqualError(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%v into %s", tc.v, tc.ct)
	}
}

// TestSplitDeterministic: a stored batch is cut by rows and bytes at the same boundaries on
// every call; a row over the byte limit goes alone.
func TestSplitDeterministic(t *testing.T) {
	sizes := []int64{10, 10, 10, 100, 10, 10, 10, 10}
	size := func(i int) int64 { return sizes[i] }
	want := []span{{0, 3}, {3, 4}, {4, 7}, {7, 8}}
	for range 3 {
		assert.Equal(t, want, split(len(sizes), size, 3, 50))
	}
	assert.Equal(t, []span{{0, 8}}, split(len(sizes), size, 1000, 1000))
	assert.Equal(t, []span{{0, 2}, {2, 3}, {3, 4}, {4, 6}, {6, 8}}, split(len(sizes), size, 2, 30))
	assert.Nil(t, split(0, size, 1, 1))
}

// TestWarnWindow: a known deduplication window shorter than replay_horizon draws one
// structured warning with the attributes Flow names; a longer one draws none.
func TestWarnWindow(t *testing.T) {
	logger, logs := observed()
	dyn := DefaultDynamic()
	tg := newTarget(Class, "out", &Params{Database: "db", Table: "t"}, &dyn, nil)
	tg.log = logger
	tg.dedup = Dedup{Deduplicates: true, Setting: "replicated_deduplication_window_seconds", Window: time.Hour}
	tg.warnWindow()
	require.Equal(t, 1, logs.Len())
	fields := logs.All()[0].ContextMap()
	assert.Equal(t, "db", fields["Database"])
	assert.Equal(t, "t", fields["Table"])
	assert.Equal(t, "replicated_deduplication_window_seconds", fields["DedupWindowSetting"])
	assert.Equal(t, 24*time.Hour, fields["ReplayHorizon"])
	assert.Equal(t, time.Hour, fields["DedupWindow"])

	tg.dedup.Window = 48 * time.Hour
	tg.warnWindow()
	assert.Equal(t, 1, logs.Len())
}

// TestCheckHosts: several hosts are accepted only in front of a replicated table.
func TestCheckHosts(t *testing.T) {
	assert.NoError(t, CheckHosts(Engine{Name: "MergeTree"}, []string{"a"}))
	assert.NoError(t, CheckHosts(Engine{Name: "ReplicatedMergeTree"}, []string{"a", "b"}))
	assert.NoError(t, CheckHosts(Engine{Name: "SharedMergeTree"}, []string{"a", "b"}))
	err := CheckHosts(Engine{Name: "MergeTree"}, []string{"a", "b"})
	assert.True(t, errors.Is(err, ErrTarget))
	assert.ErrorContains(t, err, "hosts lists 2 servers (a, b) but engine MergeTree is not replicated")
}

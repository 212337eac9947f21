package statictable

import (
	"fmt"
	"regexp"
	"time"

	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// SourceClass is the canonical name of the static table source.
const SourceClass = "static_table"

// Locator says where a table's timestamp comes from: Attribute "key" is the table's name,
// any other is that Cypress attribute of the table. A string value is parsed by Format
// ("iso8601", or a strftime pattern such as "%Y-%m-%dT%H"); an integer is unix seconds.
type Locator struct {
	Attribute string
	Format    string
}

// SourceParams are the parameters of the static table source.
type SourceParams struct {
	Tables            []string
	TablesPath        string
	TableNameFilter   string         // RE2, found anywhere in the name (anchor with ^…$); "" admits all
	NameFilter        *regexp.Regexp // compiled TableNameFilter; nil admits all
	EventTimestamp    Locator        // default {key, iso8601}
	SystemTimestamp   Locator        // default {creation_time, iso8601}
	Finite            bool
	WatermarkDelay    time.Duration // default 1h
	IgnoreSymlinks    bool
	SkipNonTableNodes bool
	// RangeRowCount is the smallest read range, in rows (yt-flow's, default 1Mi): a table is
	// cut into ranges of max(RangeRowCount, ceil(row_count/Slots)) rows.
	RangeRowCount int64
}

// IsFinite tells whether the source completes once every table is read.
func (p *SourceParams) IsFinite() bool { return p.Finite }

// String names the source: "static tables //path" or "static tables [a, b]".
func (p *SourceParams) String() string {
	if p.TablesPath != "" {
		return "static tables " + p.TablesPath
	}
	return fmt.Sprintf("static tables %v", p.Tables)
}

// SourceDynamic are the dynamic parameters of the static table source, with Flow's
// defaults. The event bounds, the rates, throttler_period and unavailable_threshold apply
// (package doc); the others do not yet.
type SourceDynamic struct {
	DesiredTableProcessTime           time.Duration // 1h
	MaxRowsPerSecond                  float64       // 1e12
	MaxBytesPerSecond                 float64       // 1e12
	MinEventTimestamp                 time.Time     // zero: no bound
	MaxEventTimestamp                 time.Time     // zero: no bound
	RestartInstant                    time.Time     // zero: epoch 0
	MaxPartitionCount                 int64         // 10000
	DesiredPartitionProcessTime       time.Duration // 10m
	DesiredPartitionRowsPerSecond     float64       // 1000
	DesiredPartitionBytesPerSecond    float64       // 1e6
	ReadTimeout, UnavailableThreshold time.Duration // 5m
	ThrottlerPeriod                   time.Duration // 10s
}

// admits tells whether a table with event timestamp ts is inside the event bounds.
func (d *SourceDynamic) admits(ts time.Time) bool {
	if d == nil {
		return true
	}
	return (d.MinEventTimestamp.IsZero() || !ts.Before(d.MinEventTimestamp)) &&
		(d.MaxEventTimestamp.IsZero() || !ts.After(d.MaxEventTimestamp))
}

func init() {
	registry.Register(registry.Class{
		Name: SourceClass, Role: registry.Source,
		FlowNames: []string{"NYT::NFlow::NStaticTableConnector::TSource", "NYT::NFlow::TStaticTableSource"},
		Guarantee: registry.ExactlyOnce, Runs: true,
		Summary:      "reads static tables (a list or a directory) by row ranges; dedup by read range",
		Parse:        parseSource,
		ParseDynamic: parseSourceDynamic,
	})
}

func parseSource(f *yson.Fields) any {
	st := &SourceParams{}
	st.Tables = f.Strings("tables", true)
	if f.Has("tables_path") {
		st.TablesPath = registry.RichPath(f, "tables_path")
	}
	for i, t := range st.Tables {
		registry.CheckRichPath(f, fmt.Sprintf("tables/%d", i), t)
	}
	st.TableNameFilter = f.String("table_name_filter", "")
	hasTables, hasPath := f.Has("tables"), f.Has("tables_path")
	switch {
	case hasTables && hasPath:
		f.Errorf("tables_path", "set either tables or tables_path, not both")
	case !hasTables && !hasPath:
		f.Errorf("tables", "required (or tables_path)")
	case hasTables && len(st.Tables) == 0:
		f.Errorf("tables", "must name at least one table")
	}
	if st.TableNameFilter != "" {
		re, err := regexp.Compile(st.TableNameFilter)
		if err != nil {
			f.Errorf("table_name_filter", "%q does not compile (RE2): %v", st.TableNameFilter, err)
		}
		st.NameFilter = re
		if hasTables {
			f.Errorf("table_name_filter", "applies to tables_path only")
		}
	}
	st.EventTimestamp = parseLocator(f, "event_timestamp_locator", Locator{Attribute: "key", Format: "iso8601"})
	st.SystemTimestamp = parseLocator(f, "system_timestamp_locator", Locator{Attribute: "creation_time", Format: "iso8601"})
	st.IgnoreSymlinks = f.Bool("ignore_symlinks", false)
	st.SkipNonTableNodes = f.Bool("skip_non_table_nodes", false)
	st.WatermarkDelay = f.Duration("watermark_delay", time.Hour)
	f.Bool("use_planned_timestamps", false)
	st.Finite = f.Bool("finite", false)
	f.Duration("update_info_period", 0)
	f.Float("byte_size_alpha", 0)
	st.RangeRowCount = f.Int("range_row_count", 1<<20, 1, 1<<40)
	return st
}

// parseLocator reads a timestamp locator map {attribute; format}; absent keys take def's.
func parseLocator(f *yson.Fields, key string, def Locator) Locator {
	ln := f.Node(key)
	if ln == nil {
		return def
	}
	lf := f.Walker().Fields(ln, f.Path(key))
	l := Locator{Attribute: lf.String("attribute", def.Attribute), Format: lf.String("format", def.Format)}
	if l.Attribute == "" {
		lf.Errorf("attribute", "must not be empty")
	}
	if _, err := layoutOf(l.Format); err != nil {
		lf.Errorf("format", "%v", err)
	}
	lf.Close()
	return l
}

func parseSourceDynamic(f *yson.Fields, _ any) any {
	d := &SourceDynamic{}
	d.DesiredTableProcessTime = f.Duration("desired_table_process_time", time.Hour)
	d.MaxRowsPerSecond = positive(f, "max_rows_per_second", 1e12)
	d.MaxBytesPerSecond = positive(f, "max_bytes_per_second", 1e12)
	d.MinEventTimestamp = instant(f, "min_event_timestamp")
	d.MaxEventTimestamp = instant(f, "max_event_timestamp")
	if !d.MinEventTimestamp.IsZero() && !d.MaxEventTimestamp.IsZero() && d.MaxEventTimestamp.Before(d.MinEventTimestamp) {
		f.Errorf("max_event_timestamp", "is before min_event_timestamp")
	}
	d.RestartInstant = instant(f, "restart_instant")
	d.MaxPartitionCount = f.Int("max_partition_count", 10000, 1, 1<<31)
	d.DesiredPartitionProcessTime = f.Duration("desired_partition_process_time", 10*time.Minute)
	d.DesiredPartitionRowsPerSecond = positive(f, "desired_partition_rows_per_second", 1000)
	d.DesiredPartitionBytesPerSecond = positive(f, "desired_partition_bytes_per_second", 1e6)
	d.ReadTimeout = f.Duration("read_timeout", 5*time.Minute)
	d.UnavailableThreshold = f.Duration("unavailable_threshold", 5*time.Minute)
	d.ThrottlerPeriod = f.Duration("throttler_period", 10*time.Second)
	return d
}

func positive(f *yson.Fields, key string, def float64) float64 {
	v := f.Float(key, def)
	if v <= 0 {
		f.Errorf(key, "must be positive")
		return def
	}
	return v
}

// instant reads an optional instant: an iso8601 string or an integer of milliseconds since
// the epoch (YTsaurus's TInstant).
func instant(f *yson.Fields, key string) time.Time {
	n := f.Node(key)
	if n == nil {
		return time.Time{}
	}
	switch n.Kind {
	case yson.KindString:
		t, err := parseISO8601(n.String)
		if err != nil {
			f.Errorf(key, "%v", err)
		}
		return t
	case yson.KindInt64, yson.KindUint64:
		ms, _ := f.Walker().Int(n, f.Path(key))
		if ms < 0 {
			f.Errorf(key, "must not be negative")
			return time.Time{}
		}
		return time.UnixMilli(ms).UTC()
	}
	f.Errorf(key, "want an iso8601 string or milliseconds since the epoch, got %s", n.Kind)
	return time.Time{}
}

// UnavailableAfter implements connector.Unavailability: unavailable_threshold.
func (d *SourceDynamic) UnavailableAfter() time.Duration { return d.UnavailableThreshold }

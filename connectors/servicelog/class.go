package servicelog

import (
	"fmt"
	"math"
	"time"

	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// Class is the canonical name of the service log source.
const Class = "service_log"

// Fetcher is one table of the table joiner.
type Fetcher struct {
	TablePath string
	// ValueColumns are the non-key columns taken (nil: all).
	ValueColumns []string
	Attempts     int64         // default 1
	RetryTimeout time.Duration // default 5s
	FetchType    string        // table_reader (default) or select_rows; both read with select_rows
	// Prefix goes before the names of the fetcher's value columns in the emitted rows.
	Prefix string
}

// Params are the parameters of TServiceLogSource.
type Params struct {
	Finite   bool
	Fetchers []Fetcher // table_joiner/fetchers
}

// IsFinite tells whether the source completes after one cycle.
func (p *Params) IsFinite() bool { return p.Finite }

// String names the source: "service log //t" or "service log [//a //b]".
func (p *Params) String() string {
	if len(p.Fetchers) == 1 {
		return "service log " + p.Fetchers[0].TablePath
	}
	var paths []string
	for _, f := range p.Fetchers {
		paths = append(paths, f.TablePath)
	}
	return fmt.Sprintf("service log %v", paths)
}

// Dynamic are the dynamic parameters of TServiceLogSource with Flow's defaults.
type Dynamic struct {
	// DesiredPartitionCount is the number of hash ranges (default 5, at most 1024); a change
	// makes new partitions that start a new cycle.
	DesiredPartitionCount int64
	// DesiredCycleTime: a partition starts a cycle no earlier than this after it started the
	// previous one (default 12h).
	DesiredCycleTime time.Duration
	// UnavailableThreshold: reads failing this long report the partition unavailable
	// (default 5m; connector.Unavailability). ThrottlerPeriod is accepted and not applied.
	UnavailableThreshold, ThrottlerPeriod time.Duration
}

func defaultDynamic() *Dynamic {
	return &Dynamic{DesiredPartitionCount: 5, DesiredCycleTime: 12 * time.Hour, UnavailableThreshold: 5 * time.Minute, ThrottlerPeriod: 10 * time.Second}
}

func init() {
	registry.Register(registry.Class{
		Name: Class, Role: registry.Source, FlowNames: []string{"NYT::NFlow::TServiceLogSource"},
		Guarantee: registry.ExactlyOnce, Runs: true,
		Summary:      "emits every row of sorted dynamic tables joined by key once per cycle; dedup by read range within a cycle",
		Parse:        parse,
		ParseDynamic: parseDynamic,
		CheckTables:  checkTables,
	})
}

func parse(f *yson.Fields) any {
	sl := &Params{Finite: f.Bool("finite", false)}
	w := f.Walker()
	if jn := f.Required("table_joiner"); jn != nil {
		jf := w.Fields(jn, f.Path("table_joiner"))
		if fn := jf.Required("fetchers"); fn != nil {
			fp := jf.Path("fetchers")
			if fn.Kind != yson.KindList {
				w.Errorf(fp, "want list, got %s", fn.Kind)
			} else {
				if len(fn.List) == 0 {
					w.Errorf(fp, "at least one fetcher is required")
				}
				prefixes := map[string]int{}
				for i, item := range fn.List {
					path := yson.Join(fp, fmt.Sprint(i))
					ff := w.Fields(item, path)
					ft := Fetcher{}
					ft.TablePath = ff.RequiredString("table_path")
					ft.ValueColumns = ff.Strings("value_columns", true)
					ft.Attempts = ff.Int("attempts", 1, 1, math.MaxInt32)
					ft.RetryTimeout = ff.Duration("retry_timeout", 5*time.Second)
					ft.FetchType = ff.Enum("fetch_type", "table_reader", "table_reader", "select_rows")
					ft.Prefix = ff.String("prefix", "")
					if j, ok := prefixes[ft.Prefix]; ok && len(fn.List) > 1 {
						ff.Errorf("prefix", "%q is the prefix of fetcher %d too: the value columns of joined tables need distinct prefixes", ft.Prefix, j)
					}
					prefixes[ft.Prefix] = i
					ff.Close()
					sl.Fetchers = append(sl.Fetchers, ft)
				}
			}
		}
		jf.Close()
	}
	f.Duration("update_info_period", 0)
	f.Float("byte_size_alpha", 0)
	return sl
}

func parseDynamic(f *yson.Fields, _ any) any {
	d := defaultDynamic()
	d.DesiredPartitionCount = f.Int("desired_partition_count", d.DesiredPartitionCount, 1, MaxPartitions)
	d.DesiredCycleTime = f.Duration("desired_cycle_time", d.DesiredCycleTime)
	d.UnavailableThreshold = f.Duration("unavailable_threshold", d.UnavailableThreshold)
	d.ThrottlerPeriod = f.Duration("throttler_period", d.ThrottlerPeriod)
	return d
}

// UnavailableAfter implements connector.Unavailability: unavailable_threshold.
func (d *Dynamic) UnavailableAfter() time.Duration { return d.UnavailableThreshold }

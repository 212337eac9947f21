// Package servicelog is the service log source (TServiceLogSource): an infinite source that
// cycles through tables with a table joiner. The spec accepts and validates it; the runtime
// does not run it yet.
package servicelog

import (
	"fmt"
	"math"

	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// Class is the canonical name of the service log source.
const Class = "service_log"

// Params are the parameters of TServiceLogSource.
type Params struct {
	Finite     bool
	TablePaths []string // table_joiner/fetchers/*/table_path
}

// IsFinite tells whether the source completes after one cycle.
func (p *Params) IsFinite() bool { return p.Finite }

func init() {
	registry.Register(registry.Class{
		Name: Class, Role: registry.Source, FlowNames: []string{"NYT::NFlow::TServiceLogSource"},
		Guarantee: registry.ExactlyOnce,
		Summary:   "cycles through tables joined by key; dedup by read range within a cycle",
		Parse:     parse,
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
				for i, item := range fn.List {
					ff := w.Fields(item, yson.Join(fp, fmt.Sprint(i)))
					sl.TablePaths = append(sl.TablePaths, ff.RequiredString("table_path"))
					ff.Strings("value_columns", true)
					ff.Int("attempts", 1, 1, math.MaxInt32)
					ff.Duration("retry_timeout", 0)
					ff.Enum("fetch_type", "table_reader", "table_reader", "select_rows")
					ff.String("prefix", "")
					ff.Close()
				}
			}
		}
		jf.Close()
	}
	f.Duration("update_info_period", 0)
	f.Float("byte_size_alpha", 0)
	return sl
}

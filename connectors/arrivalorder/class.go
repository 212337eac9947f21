package arrivalorder

import (
	"fmt"
	"strings"
	"time"

	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// Class is the canonical name of the arrival-order table sink.
const Class = "arrival_order_table"

// MaxTablesPerTTL is Flow's bound on table_ttl / table_period.
const MaxTablesPerTTL = 40000

// Params are the parameters of TArrivalOrderTableSink.
type Params struct {
	OutputDirectory string        // required
	TablePeriod     time.Duration // default 5m
	TableTTL        time.Duration // required, at most MaxTablesPerTTL periods
	// TableNameFormat is a strftime pattern (default "%Y-%m-%dT%H:%M:%SZ"), applied to the
	// table's slot start in UTC.
	TableNameFormat string
	// DataWeightColumn names an int64 or uint64 column of the input stream whose value is
	// a row's data weight for max_data_weight (null: the row's YSON size); "" (default):
	// every row weighs its YSON size.
	DataWeightColumn string
}

// Name is the table name of the slot that starts at slot.
func (p *Params) Name(slot time.Time) string { return formatName(slot, p.TableNameFormat) }

// Dynamic are the dynamic parameters of TArrivalOrderTableSink with Flow's defaults.
type Dynamic struct {
	// MaxRowCount is the most rows one master transaction appends (default 10000); a
	// delivery of more takes several transactions, each advancing the progress.
	MaxRowCount int64
	// MaxDataWeight is the most data weight one master transaction appends (default 1 GiB;
	// a row's weight is its data_weight_column, else its YSON size).
	MaxDataWeight int64
	// TransactionTimeout is the timeout of the sink's master transactions (default 5m).
	TransactionTimeout time.Duration
	// RetryBackoff is the longest wait between attempts when another partition holds the
	// directory's lock (default 1s).
	RetryBackoff time.Duration
}

func defaultDynamic() *Dynamic {
	return &Dynamic{MaxRowCount: 10000, MaxDataWeight: 1 << 30, TransactionTimeout: 5 * time.Minute, RetryBackoff: time.Second}
}

func init() {
	registry.Register(registry.Class{
		Name: Class, Role: registry.Sink, FlowNames: []string{"NYT::NFlow::TArrivalOrderTableSink"},
		Guarantee: registry.ExactlyOnce, Kind: registry.AsyncSink, SingleInput: true, Runs: true,
		Summary:      "writes time-sliced static tables; table and progress commit in one master transaction",
		Parse:        parse,
		ParseDynamic: parseDynamic,
		Validate:     validate,
	})
}

func parse(f *yson.Fields) any {
	a := &Params{}
	a.OutputDirectory = registry.RichPath(f, "output_directory")
	a.TablePeriod = f.Duration("table_period", 5*time.Minute)
	if f.Required("table_ttl") != nil {
		a.TableTTL = f.Duration("table_ttl", 0)
		if a.TableTTL <= 0 {
			f.Errorf("table_ttl", "must be positive")
		}
	}
	a.TableNameFormat = f.String("table_name_format", "%Y-%m-%dT%H:%M:%SZ")
	a.DataWeightColumn = f.String("data_weight_column", "")
	switch {
	case a.TablePeriod <= 0:
		f.Errorf("table_period", "must be positive")
	case a.TableTTL/a.TablePeriod > MaxTablesPerTTL || (a.TableTTL/a.TablePeriod == MaxTablesPerTTL && a.TableTTL%a.TablePeriod != 0):
		f.Errorf("table_ttl", "table_ttl / table_period is %.0f, must be at most %d", float64(a.TableTTL)/float64(a.TablePeriod), MaxTablesPerTTL)
	}
	if err := checkFormat(a.TableNameFormat); err != nil {
		f.Errorf("table_name_format", "%v", err)
	}
	return a
}

func parseDynamic(f *yson.Fields, _ any) any {
	d := defaultDynamic()
	d.MaxRowCount = f.Int("max_row_count", d.MaxRowCount, 1, 1<<40)
	d.MaxDataWeight = f.Size("max_data_weight", d.MaxDataWeight)
	d.TransactionTimeout = f.Duration("transaction_timeout", d.TransactionTimeout)
	if d.TransactionTimeout <= 0 {
		f.Errorf("transaction_timeout", "must be positive")
		d.TransactionTimeout = 5 * time.Minute
	}
	d.RetryBackoff = f.Duration("retry_backoff", d.RetryBackoff)
	if d.RetryBackoff <= 0 {
		f.Errorf("retry_backoff", "must be positive")
		d.RetryBackoff = time.Second
	}
	return d
}

// validate checks data_weight_column against the input stream: an int64 or uint64 column.
func validate(params any, inputs []registry.Input, report func(key, format string, args ...any)) {
	a := params.(*Params)
	if a.DataWeightColumn == "" || len(inputs) != 1 {
		return
	}
	for _, c := range inputs[0].Schema.Columns {
		if c.Name == a.DataWeightColumn {
			if c.Type != schema.TypeInt64 && c.Type != schema.TypeUint64 {
				report("data_weight_column", "column %q of stream %q is %s, want int64 or uint64", c.Name, inputs[0].ID, c.Type)
			}
			return
		}
	}
	report("data_weight_column", "stream %q has no column %q", inputs[0].ID, a.DataWeightColumn)
}

// directives are the strftime directives a table name format may use.
const directives = "YmdHMSyj%"

// checkFormat checks a table name format: strftime directives among directives, literal
// text other than "/".
func checkFormat(format string) error {
	if format == "" {
		return fmt.Errorf("must not be empty")
	}
	if strings.Contains(format, "/") {
		return fmt.Errorf("%q makes table names with a \"/\"", format)
	}
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		if i+1 == len(format) {
			return fmt.Errorf("%q ends in %%", format)
		}
		i++
		if strings.IndexByte(directives, format[i]) < 0 {
			return fmt.Errorf("%q: unsupported directive %%%c (want %%Y %%m %%d %%H %%M %%S %%y %%j %%%%)", format, format[i])
		}
	}
	return nil
}

// formatName formats t (in UTC) by a format checkFormat accepted.
func formatName(t time.Time, format string) string {
	t = t.UTC()
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		default:
			b.WriteByte(format[i])
		}
	}
	return b.String()
}

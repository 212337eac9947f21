package arrivalorder

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/ytstore"
)

// ProgressAttribute is the output directory's attribute that holds the sink's Progress.
const ProgressAttribute = "progress"

// dirUpdater runs one master transaction on a directory (ytstore.Store.UpdateDir): plan
// reads the directory's attribute and returns the tables to write and the attribute's new
// value, which commit together. ytstore.ErrConflict: another transaction holds the
// directory; ytstore.ErrCommitUnknown: the commit may or may not have happened.
type dirUpdater interface {
	UpdateDir(ctx context.Context, dir, attr string, timeout time.Duration, plan func(cur yson.RawValue) (ytstore.DirUpdate, error)) error
}

func init() {
	connector.RegisterSink(Class, connector.Constructors{
		AsyncSink: func(env connector.Env, params any) (connector.AsyncSink, error) {
			dyn, _ := env.Dynamic.(*Dynamic)
			if dyn == nil {
				dyn = defaultDynamic()
			}
			return &Sink{
				dir: env.Store, params: params.(*Params), dyn: dyn, partition: env.PartitionID, now: time.Now,
				owner: Owner{Pipeline: env.PipelinePath, Computation: env.ComputationID, Sink: env.SinkID},
			}, nil
		},
	})
}

// Sink is the arrival-order table sink of one partition.
type Sink struct {
	dir       dirUpdater
	params    *Params
	dyn       *Dynamic
	owner     Owner
	partition string
	now       func() time.Time
}

// Deliver writes the batches' rows, in transactions of at most max_row_count rows and
// max_data_weight bytes (a batch is never split), each of which appends the rows to their slot tables and moves the
// partition's frontier in @progress. Rows the frontier covers are skipped. It returns how
// many leading batches are committed.
//
// Invariant: the rows of a batch and the frontier past them commit in one master
// transaction, so every row is in exactly one output table however often a delivery is
// repeated (TestArrivalOrderSinkConformance, TestArrivalOrderEndToEnd).
func (s *Sink) Deliver(ctx context.Context, batches []connector.Batch) (int, error) {
	done := 0
	for done < len(batches) {
		n, rows, weight := 0, int64(0), int64(0)
		for done+n < len(batches) {
			b := &batches[done+n]
			w, err := s.batchWeight(b)
			if err != nil {
				return done, err
			}
			if n > 0 && (rows+int64(len(b.Rows)) > s.dyn.MaxRowCount || weight+w > s.dyn.MaxDataWeight) {
				break
			}
			rows, weight = rows+int64(len(b.Rows)), weight+w
			n++
		}
		if err := s.commit(ctx, batches[done:done+n]); err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// commit writes batches in one transaction, retrying while another partition holds the
// directory.
func (s *Sink) commit(ctx context.Context, batches []connector.Batch) error {
	var rows []Row
	for _, b := range batches {
		for _, d := range b.Rows {
			cols := d.Row
			if d.Encoded != nil {
				if err := yson.Unmarshal(d.Encoded, &cols); err != nil {
					return fmt.Errorf("%s: message %s: decode payload: %w", s, d.MessageID, err)
				}
			}
			rows = append(rows, Row{SystemTimestamp: d.SystemTimestamp, MessageID: d.MessageID, SequenceNumber: d.SequenceNumber, Columns: cols})
		}
	}
	wait := 10 * time.Millisecond
	for {
		err := s.dir.UpdateDir(ctx, s.params.OutputDirectory, ProgressAttribute, s.dyn.TransactionTimeout, func(cur yson.RawValue) (ytstore.DirUpdate, error) {
			var pr *Progress
			if cur != nil {
				pr = &Progress{}
				if err := yson.Unmarshal(cur, pr); err != nil {
					return ytstore.DirUpdate{}, fmt.Errorf("@%s does not decode: %w", ProgressAttribute, err)
				}
			}
			p, err := plan(pr, s.owner, s.partition, rows, s.now(), s.params)
			if err != nil {
				return ytstore.DirUpdate{}, err
			}
			u := ytstore.DirUpdate{Attribute: p.Progress}
			for _, w := range p.Writes {
				u.Tables = append(u.Tables, ytstore.TableAppend{Name: w.Slot.Name, Attributes: w.Attributes, Rows: w.Rows, Require: "table_timestamp"})
			}
			return u, nil
		})
		if err == nil {
			return nil
		}
		if !errors.Is(err, ytstore.ErrConflict) {
			return fmt.Errorf("%s: %w", s, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, s.dyn.RetryBackoff)
	}
}

// String names the sink for errors: "arrival-order sink //dir (partition p)".
func (s *Sink) String() string {
	return fmt.Sprintf("arrival-order sink %s (partition %s)", s.params.OutputDirectory, s.partition)
}

// batchWeight is the data weight of a batch: the sum of its rows' data_weight_column values,
// or of the bytes of their YSON (a row without the column's value weighs its YSON).
func (s *Sink) batchWeight(b *connector.Batch) (int64, error) {
	var n int64
	for _, d := range b.Rows {
		if col := s.params.DataWeightColumn; col != "" {
			v, ok := d.Row[col]
			if d.Encoded != nil {
				var cols map[string]any
				if err := yson.Unmarshal(d.Encoded, &cols); err != nil {
					return 0, fmt.Errorf("%s: message %s: decode payload: %w", s, d.MessageID, err)
				}
				v, ok = cols[col]
			}
			if ok && v != nil {
				w, err := dataWeight(v)
				if err != nil {
					return 0, fmt.Errorf("%s: message %s: data_weight_column %q: %w", s, d.MessageID, col, err)
				}
				n += w
				continue
			}
		}
		if d.Encoded != nil {
			n += int64(len(d.Encoded))
			continue
		}
		enc, err := yson.Marshal(d.Row)
		if err == nil {
			n += int64(len(enc))
		}
	}
	return n, nil
}

// ErrBadDataWeight: a row's data_weight_column is not a non-negative integer.
var ErrBadDataWeight = errors.New("data weight must be a non-negative integer")

// dataWeight reads a data_weight_column value.
func dataWeight(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		if x >= 0 {
			return x, nil
		}
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), nil
		}
	case int:
		if x >= 0 {
			return int64(x), nil
		}
	}
	return 0, fmt.Errorf("%w, got %v (%T)", ErrBadDataWeight, v, v)
}

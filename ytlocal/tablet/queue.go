package tablet

import (
	"fmt"

	"go.ytsaurus.tech/yt/go/schema"
	"go.ytsaurus.tech/yt/go/yterrors"
)

// ConsumerSchema is the schema of a queue_consumer table.
func ConsumerSchema() schema.Schema {
	return schema.Schema{
		UniqueKeys: true,
		Strict:     ptrTrue(),
		Columns: []schema.Column{
			{Name: "queue_cluster", Type: schema.TypeBytes, Required: true, SortOrder: schema.SortAscending},
			{Name: "queue_path", Type: schema.TypeBytes, Required: true, SortOrder: schema.SortAscending},
			{Name: "partition_index", Type: schema.TypeUint64, Required: true, SortOrder: schema.SortAscending},
			{Name: "offset", Type: schema.TypeUint64, Required: true},
			{Name: "meta", Type: schema.TypeAny},
		},
	}
}

// ProducerSchema is the schema of a queue_producer table.
func ProducerSchema() schema.Schema {
	return schema.Schema{
		UniqueKeys: true,
		Strict:     ptrTrue(),
		Columns: []schema.Column{
			{Name: "queue_cluster", Type: schema.TypeBytes, Required: true, SortOrder: schema.SortAscending},
			{Name: "queue_path", Type: schema.TypeBytes, Required: true, SortOrder: schema.SortAscending},
			{Name: "session_id", Type: schema.TypeBytes, Required: true, SortOrder: schema.SortAscending},
			{Name: "sequence_number", Type: schema.TypeInt64, Required: true},
			{Name: "epoch", Type: schema.TypeInt64, Required: true},
			{Name: "user_meta", Type: schema.TypeAny},
			{Name: "system_meta", Type: schema.TypeAny},
		},
	}
}

func ptrTrue() *bool { b := true; return &b }

// RegisterConsumer registers consumer for queue (both table ids; the paths
// are kept for messages).
func (e *Engine) RegisterConsumer(r Registration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	q, err := e.table(r.Queue)
	if err != nil {
		return err
	}
	if q.sorted {
		return yterrors.Err(yterrors.CodeGeneric, fmt.Sprintf("Table %s is not an ordered table and cannot be a queue", r.QueuePath))
	}
	if _, err := e.table(r.Consumer); err != nil {
		return err
	}
	return e.commit(&Record{Kind: RecordRegisterConsumer, Registration: &r})
}

// UnregisterConsumer removes a registration; an unknown one is an error.
func (e *Engine) UnregisterConsumer(queue, consumer string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.registrations[queue][consumer]
	if !ok {
		return yterrors.Err(yterrors.CodeResolveError, fmt.Sprintf("Consumer %s is not registered for queue %s", consumer, queue))
	}
	return e.commit(&Record{Kind: RecordUnregisterConsumer, Registration: r})
}

// Registrations lists the consumers registered for a queue.
func (e *Engine) Registrations(queue string) []Registration {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Registration
	for _, r := range e.registrations[queue] {
		out = append(out, *r)
	}
	return out
}

// PullOptions bound a pull_queue_consumer read.
type PullOptions struct {
	Offset        int64
	MaxRowCount   int64 // default 1000
	MaxDataWeight int64 // default 16 MiB; at least one row is returned
}

// PullConsumer reads rows of one queue partition (tablet) starting at
// Offset, or at the first row not trimmed away. The consumer must be
// registered for the queue (901 otherwise).
func (e *Engine) PullConsumer(consumer, consumerPath, queue, queuePath string, partition int, o PullOptions) (*RowSet, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.registrations[queue][consumer]; !ok {
		return nil, yterrors.Err(yterrors.CodeAuthorizationError,
			fmt.Sprintf("Consumer %s is not registered for queue %s", consumerPath, queuePath))
	}
	t, err := e.readableTable(queue)
	if err != nil {
		return nil, err
	}
	if partition < 0 || partition >= len(t.tablets) {
		return nil, yterrors.Err(yterrors.CodeGeneric, fmt.Sprintf("Invalid partition index %d for queue %s with %d partitions", partition, queuePath, len(t.tablets)))
	}
	if o.MaxRowCount <= 0 {
		o.MaxRowCount = 1000
	}
	if o.MaxDataWeight <= 0 {
		o.MaxDataWeight = 16 << 20
	}
	tb := t.tablets[partition]
	out := &RowSet{Columns: t.starColumns()}
	start := max(o.Offset, tb.trimmed)
	// The rows' values share one block (a row keeps its part when the block grows), and the
	// partition index one boxed value. The first block holds at most pullBlockRows rows: the
	// data weight limit may end the read long before the row count does.
	n := max(0, min(o.MaxRowCount, int64(len(tb.rows))-(start-tb.trimmed), pullBlockRows))
	width := len(t.cols) + 2
	block := make([]any, 0, n*int64(width))
	out.Rows = make([][]any, 0, n)
	part := any(int64(partition))
	var weight int64
	for i := start - tb.trimmed; i < int64(len(tb.rows)) && int64(len(out.Rows)) < o.MaxRowCount; i++ {
		r := tb.rows[i]
		at := len(block)
		values := append(block, part, tb.trimmed+i)
		for j, c := range t.cols {
			if c.name == "$timestamp" {
				values = append(values, uint64(r.ts))
			} else {
				values = append(values, r.values[j])
			}
		}
		block = values
		values = values[at:len(values):len(values)]
		w := dataWeight(values)
		if len(out.Rows) > 0 && weight+w > o.MaxDataWeight {
			break
		}
		weight += w
		out.Rows = append(out.Rows, values)
	}
	return out, nil
}

// pullBlockRows bounds the rows a pull allocates room for at once.
const pullBlockRows = 1024

func dataWeight(values []any) int64 {
	var w int64 = 1
	for _, v := range values {
		switch x := v.(type) {
		case string:
			w += int64(len(x))
		case nil:
		default:
			w += 8
		}
	}
	return w
}

// currentRow returns a row of a sorted table as the transaction sees it: its
// own buffered writes, else the snapshot at its start timestamp. Caller holds e.mu.
func (e *Engine) currentRow(tx *Tx, t *table, key []any) []any {
	last, end := len(tx.ops)-1, 0
	if last >= 0 {
		end = len(tx.ops[last])
	}
	return e.currentRowBefore(tx, t, key, last, end)
}

// currentRowBefore is currentRow as of the buffered operations before operation end of call
// seg (tx.ops[seg][end]).
func (e *Engine) currentRowBefore(tx *Tx, t *table, key []any, seg, end int) []any {
	k := encodeKey(key)
	for s := seg; s >= 0; s-- {
		ops := tx.ops[s]
		if s != seg {
			end = len(ops)
		}
		for i := end - 1; i >= 0; i-- {
			o := &ops[i]
			if o.t != t || (o.kind != opWrite && o.kind != opDelete) || o.enc != k {
				continue
			}
			if o.kind == opDelete {
				return nil
			}
			if o.update {
				base := e.currentRowBefore(tx, t, key, s, i)
				if base != nil {
					merged := make([]any, len(o.values))
					for j := range merged {
						if o.present[j] || j < t.keys {
							merged[j] = o.values[j]
						} else {
							merged[j] = base[j]
						}
					}
					return merged
				}
			}
			return o.values
		}
	}
	if r := t.rows[k]; r != nil {
		return r.at(tx.start)
	}
	return nil
}

// AdvanceConsumer moves the offset of one partition of consumer for the
// queue at queuePath inside a transaction. With oldOffset set, the current
// offset must equal it (3100 otherwise). A missing offset row means 0.
func (e *Engine) AdvanceConsumer(txID, consumer, consumerPath, queuePath string, partition int, oldOffset *int64, newOffset int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	tx, err := e.tx(txID)
	if err != nil {
		return err
	}
	t, err := e.table(consumer)
	if err != nil {
		return err
	}
	if err := checkWritable(t); err != nil {
		return err
	}
	keyRow := map[string]any{"queue_cluster": e.cfg.Cluster, "queue_path": queuePath, "partition_index": uint64(partition)}
	key, err := t.keyOf(keyRow)
	if err != nil {
		return schemaError(t, err)
	}
	var current int64
	if values := e.currentRow(tx, t, key); values != nil {
		if i, ok := t.byName["offset"]; ok {
			if u, ok := values[i].(uint64); ok {
				current = int64(u)
			}
		}
	}
	if oldOffset != nil && *oldOffset != current {
		return yterrors.Err(yterrors.CodeConsumerOffsetConflict,
			fmt.Sprintf("Offset conflict at partition %d of consumer %s: expected offset %d, found offset %d", partition, consumerPath, *oldOffset, current),
			yterrors.Attr("partition", partition), yterrors.Attr("consumer", consumerPath),
			yterrors.Attr("expected_offset", *oldOffset), yterrors.Attr("current_offset", current))
	}
	if newOffset < 0 {
		return yterrors.Err(yterrors.CodeGeneric, fmt.Sprintf("Negative offset %d for partition %d of consumer %s", newOffset, partition, consumerPath))
	}
	keyRow["offset"] = uint64(newOffset)
	ops, err := e.insertOps(t, []map[string]any{keyRow}, InsertOptions{Update: true})
	if err != nil {
		return err
	}
	tx.add(ops)
	return nil
}

// ConsumerOffset returns the committed offset of one partition (0 if none).
func (e *Engine) ConsumerOffset(consumer, queuePath string, partition int) (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.table(consumer)
	if err != nil {
		return 0, err
	}
	key, err := t.keyOf(map[string]any{"queue_cluster": e.cfg.Cluster, "queue_path": queuePath, "partition_index": uint64(partition)})
	if err != nil {
		return 0, schemaError(t, err)
	}
	if r := t.rows[encodeKey(key)]; r != nil {
		if values := r.latest(); values != nil {
			if u, ok := values[t.byName["offset"]].(uint64); ok {
				return int64(u), nil
			}
		}
	}
	return 0, nil
}

// Session is the state of a queue producer session.
type Session struct {
	Epoch          int64
	SequenceNumber int64
	UserMeta       any
}

func (e *Engine) session(tx *Tx, t *table, queuePath, sessionID string) ([]any, map[string]any, error) {
	keyRow := map[string]any{"queue_cluster": e.cfg.Cluster, "queue_path": queuePath, "session_id": sessionID}
	key, err := t.keyOf(keyRow)
	if err != nil {
		return nil, nil, schemaError(t, err)
	}
	return e.currentRow(tx, t, key), keyRow, nil
}

func sessionOf(t *table, values []any) Session {
	s := Session{}
	s.Epoch, _ = values[t.byName["epoch"]].(int64)
	s.SequenceNumber, _ = values[t.byName["sequence_number"]].(int64)
	s.UserMeta = values[t.byName["user_meta"]]
	return s
}

// CreateProducerSession creates a session (epoch 0, sequence number -1) or
// bumps the epoch of an existing one, keeping its sequence number; userMeta
// replaces the stored meta when hasMeta. It commits on its own.
func (e *Engine) CreateProducerSession(producer, queuePath, sessionID string, userMeta any, hasMeta bool) (Session, error) {
	var out Session
	_, err := e.Run(func(txID string) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		tx, err := e.tx(txID)
		if err != nil {
			return err
		}
		t, err := e.table(producer)
		if err != nil {
			return err
		}
		values, row, err := e.session(tx, t, queuePath, sessionID)
		if err != nil {
			return err
		}
		if values == nil {
			out = Session{Epoch: 0, SequenceNumber: -1, UserMeta: userMeta}
		} else {
			out = sessionOf(t, values)
			out.Epoch++
			if hasMeta {
				out.UserMeta = userMeta
			}
		}
		row["epoch"], row["sequence_number"], row["user_meta"] = out.Epoch, out.SequenceNumber, out.UserMeta
		ops, err := e.insertOps(t, []map[string]any{row}, InsertOptions{Update: true})
		if err != nil {
			return err
		}
		tx.add(ops)
		return nil
	})
	return out, err
}

// RemoveProducerSession deletes a session; the next create starts at epoch 0.
func (e *Engine) RemoveProducerSession(producer, queuePath, sessionID string) error {
	_, err := e.Run(func(txID string) error {
		return e.Delete(txID, producer, []map[string]any{{"queue_cluster": e.Cluster(), "queue_path": queuePath, "session_id": sessionID}})
	})
	return err
}

// PushOptions are the push_queue_producer options.
type PushOptions struct {
	// SequenceNumber numbers the rows start, start+1, …; when nil every row
	// must carry an increasing int64 $sequence_number.
	SequenceNumber *int64
	UserMeta       any
	HasUserMeta    bool
}

// PushResult is the push_queue_producer response.
type PushResult struct {
	LastSequenceNumber int64
	SkippedRowCount    int64
}

// PushProducer appends rows to a queue on behalf of a producer session in a
// transaction. The epoch must equal the session's (3101 newer, 3102 older);
// rows with sequence numbers not above the stored one are skipped; the
// session row is updated in the same transaction.
//
// Invariant: a row pushed twice with the same sequence number is stored once
// (TestPushSkipsDuplicates).
func (e *Engine) PushProducer(txID, producer, producerPath, queue, queuePath, sessionID string, epoch int64, rows []map[string]any, o PushOptions) (PushResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	tx, err := e.tx(txID)
	if err != nil {
		return PushResult{}, err
	}
	pt, err := e.table(producer)
	if err != nil {
		return PushResult{}, err
	}
	qt, err := e.table(queue)
	if err != nil {
		return PushResult{}, err
	}
	if qt.sorted {
		return PushResult{}, yterrors.Err(yterrors.CodeGeneric, fmt.Sprintf("Table %s is not an ordered table and cannot be a queue", queuePath))
	}
	if err := checkWritable(qt); err != nil {
		return PushResult{}, err
	}
	values, sessionRow, err := e.session(tx, pt, queuePath, sessionID)
	if err != nil {
		return PushResult{}, err
	}
	if values == nil {
		return PushResult{}, yterrors.Err(yterrors.CodeGeneric,
			fmt.Sprintf("Queue producer session %q for queue %s is not found in producer %s", sessionID, queuePath, producerPath))
	}
	s := sessionOf(pt, values)
	switch {
	case epoch > s.Epoch:
		return PushResult{}, yterrors.Err(yterrors.CodeQueueClientInvalidEpoch,
			fmt.Sprintf("Invalid epoch %d of session %q: current epoch is %d", epoch, sessionID, s.Epoch))
	case epoch < s.Epoch:
		return PushResult{}, yterrors.Err(yterrors.CodeZombieEpoch,
			fmt.Sprintf("Zombie epoch %d of session %q: current epoch is %d", epoch, sessionID, s.Epoch))
	}
	seqs := make([]int64, len(rows))
	for i, r := range rows {
		v, has := r["$sequence_number"]
		if o.SequenceNumber != nil {
			if has {
				return PushResult{}, invalidSeq("rows carry $sequence_number while the sequence_number option is given")
			}
			seqs[i] = *o.SequenceNumber + int64(i)
			continue
		}
		if !has {
			return PushResult{}, invalidSeq("row %d has no $sequence_number and no sequence_number option is given", i)
		}
		n, ok := v.(int64)
		if !ok {
			u, isUint := v.(uint64)
			if !isUint {
				return PushResult{}, invalidSeq("Error parsing sequence number from row %d: %T is not an integer", i, v)
			}
			n = int64(u)
		}
		if i > 0 && n <= seqs[i-1] {
			return PushResult{}, invalidSeq("sequence numbers must increase: row %d has %d after %d", i, n, seqs[i-1])
		}
		seqs[i] = n
	}
	res := PushResult{LastSequenceNumber: s.SequenceNumber}
	appended := make([]map[string]any, 0, len(rows))
	for i, r := range rows {
		if seqs[i] <= s.SequenceNumber {
			res.SkippedRowCount++
			continue
		}
		// $sequence_number goes no further: the insert reads schema columns and
		// $tablet_index only.
		appended = append(appended, r)
		res.LastSequenceNumber = seqs[i]
	}
	ops, err := e.insertOps(qt, appended, InsertOptions{})
	if err != nil {
		return PushResult{}, err
	}
	sessionRow["sequence_number"], sessionRow["epoch"] = res.LastSequenceNumber, s.Epoch
	if o.HasUserMeta {
		sessionRow["user_meta"] = o.UserMeta
	}
	sops, err := e.insertOps(pt, []map[string]any{sessionRow}, InsertOptions{Update: true})
	if err != nil {
		return PushResult{}, err
	}
	tx.add(ops)
	tx.add(sops)
	return res, nil
}

func invalidSeq(format string, args ...any) error {
	return yterrors.Err(yterrors.CodeInvalidRowSequenceNumbers, fmt.Sprintf(format, args...))
}

package ytlocal

import (
	"go.ytsaurus.tech/library/go/core/log"
	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/yterrors"

	"github.com/ytflow/yt-flow/ytlocal/tablet"
)

func init() {
	registerCommand("register_queue_consumer", commandOpts{Mutating: true}, cmdRegisterQueueConsumer)
	registerCommand("unregister_queue_consumer", commandOpts{Mutating: true}, cmdUnregisterQueueConsumer)
	registerCommand("pull_queue_consumer", commandOpts{Heavy: true}, cmdPullQueueConsumer)
	registerCommand("advance_queue_consumer", commandOpts{Mutating: true, NoTxCheck: true}, cmdAdvanceQueueConsumer)
	registerCommand("create_queue_producer_session", commandOpts{Mutating: true}, cmdCreateQueueProducerSession)
	registerCommand("remove_queue_producer_session", commandOpts{Mutating: true}, cmdRemoveQueueProducerSession)
	registerCommand("push_queue_producer", commandOpts{Heavy: true, NoTxCheck: true}, cmdPushQueueProducer)
}

func (c *call) queueAndConsumer() (queue, consumer dynTable, err error) {
	if queue, err = c.dynTable("queue_path"); err != nil {
		return
	}
	consumer, err = c.dynTable("consumer_path")
	return
}

func cmdRegisterQueueConsumer(c *call) (any, error) {
	q, cons, err := c.queueAndConsumer()
	if err != nil {
		return nil, err
	}
	if !c.has("vital") {
		return nil, ytErr(yterrors.CodeGeneric, "Missing required parameter \"vital\" of command %q", c.name)
	}
	vital, err := c.boolean("vital", false)
	if err != nil {
		return nil, err
	}
	var partitions []int
	if _, err := c.decode("partitions", &partitions); err != nil {
		return nil, err
	}
	return nil, c.s.dyn().eng.RegisterConsumer(tablet.Registration{
		Queue: q.id, QueuePath: q.path, Consumer: cons.id, ConsumerPath: cons.path,
		Vital: vital, Partitions: partitions,
	})
}

func cmdUnregisterQueueConsumer(c *call) (any, error) {
	q, cons, err := c.queueAndConsumer()
	if err != nil {
		return nil, err
	}
	return nil, c.s.dyn().eng.UnregisterConsumer(q.id, cons.id)
}

func cmdPullQueueConsumer(c *call) (any, error) {
	q, cons, err := c.queueAndConsumer()
	if err != nil {
		return nil, err
	}
	if !c.has("offset") || !c.has("partition_index") {
		return nil, ytErr(yterrors.CodeGeneric, "Command pull_queue_consumer needs parameters \"offset\" and \"partition_index\"")
	}
	var o tablet.PullOptions
	if o.Offset, err = c.int64p("offset", 0); err != nil {
		return nil, err
	}
	partition, err := c.int64p("partition_index", 0)
	if err != nil {
		return nil, err
	}
	if o.MaxRowCount, err = c.int64p("max_row_count", 0); err != nil {
		return nil, err
	}
	if o.MaxDataWeight, err = c.int64p("max_data_weight", 0); err != nil {
		return nil, err
	}
	rs, err := c.s.dyn().eng.PullConsumer(cons.id, cons.path, q.id, q.path, int(partition), o)
	if err != nil {
		return nil, err
	}
	out := rowsOf(rs)
	if len(rs.Rows) > 0 {
		out.Params = map[string]any{"start_offset": rs.Rows[0][1]}
	}
	return out, nil
}

func cmdAdvanceQueueConsumer(c *call) (any, error) {
	q, err := c.path("queue_path")
	if err != nil {
		return nil, err
	}
	queue, err := c.s.resolveDynamic(q, "queue_path")
	if err != nil {
		return nil, err
	}
	cons, err := c.dynTable("consumer_path")
	if err != nil {
		return nil, err
	}
	partition, err := c.int64p("partition_index", -1)
	if err != nil {
		return nil, err
	}
	newOffset, err := c.int64p("new_offset", -1)
	if err != nil {
		return nil, err
	}
	if partition < 0 || newOffset < 0 {
		return nil, ytErr(yterrors.CodeGeneric, "Command advance_queue_consumer needs parameters \"partition_index\" and \"new_offset\"")
	}
	var old *int64
	if c.has("old_offset") {
		v, err := c.int64p("old_offset", 0)
		if err != nil {
			return nil, err
		}
		old = &v
	}
	err = c.inTabletTx(func(tx string) error {
		return c.s.dyn().eng.AdvanceConsumer(tx, cons.id, cons.path, queue.path, int(partition), old, newOffset)
	})
	if err == nil {
		c.s.dyn().autoTrim(queue.id)
	}
	return nil, err
}

// autoTrim trims a queue whose @auto_trim_config/enable is %true, as YT's queue agent does:
// every tablet loses the rows below the smallest committed offset of the queue's vital
// consumers (none trimmed without a vital consumer). The trims are journaled.
func (d *dynExt) autoTrim(queueID string) {
	id, err := guid.ParseString(queueID)
	if err != nil {
		return
	}
	info, ok := d.s.NodeByID(id)
	if !ok {
		return
	}
	cfg, _ := info.Attrs["auto_trim_config"].(map[string]any)
	if enable, _ := cfg["enable"].(bool); !enable {
		return
	}
	var vital []tablet.Registration
	for _, r := range d.eng.Registrations(queueID) {
		if r.Vital {
			vital = append(vital, r)
		}
	}
	if len(vital) == 0 {
		return
	}
	tablets, err := d.eng.Tablets(queueID)
	if err != nil {
		return
	}
	for _, tb := range tablets {
		upTo := tb.RowCount
		for _, r := range vital {
			off, err := d.eng.ConsumerOffset(r.Consumer, r.QueuePath, tb.Index)
			if err != nil {
				return
			}
			upTo = min(upTo, off)
		}
		if upTo > tb.TrimmedRowCount {
			if err := d.eng.Trim(queueID, tb.Index, upTo); err != nil {
				d.s.log.Warn("queue auto-trim failed", log.String("path", info.Path), log.Int("tablet", tb.Index), log.Error(err))
			}
		}
	}
}

func (c *call) producerSession() (producer, queue dynTable, session string, err error) {
	if producer, err = c.dynTable("producer_path"); err != nil {
		return
	}
	if queue, err = c.dynTable("queue_path"); err != nil {
		return
	}
	session, err = c.requiredStr("session_id")
	return
}

func cmdCreateQueueProducerSession(c *call) (any, error) {
	p, q, session, err := c.producerSession()
	if err != nil {
		return nil, err
	}
	meta, hasMeta := c.param("user_meta")
	s, err := c.s.dyn().eng.CreateProducerSession(p.id, q.path, session, meta, hasMeta)
	if err != nil {
		return nil, err
	}
	return map[string]any{"epoch": s.Epoch, "sequence_number": s.SequenceNumber, "user_meta": s.UserMeta}, nil
}

func cmdRemoveQueueProducerSession(c *call) (any, error) {
	p, q, session, err := c.producerSession()
	if err != nil {
		return nil, err
	}
	return nil, c.s.dyn().eng.RemoveProducerSession(p.id, q.path, session)
}

func cmdPushQueueProducer(c *call) (any, error) {
	p, q, session, err := c.producerSession()
	if err != nil {
		return nil, err
	}
	if !c.has("epoch") {
		return nil, ytErr(yterrors.CodeGeneric, "Missing required parameter \"epoch\" of command %q", c.name)
	}
	epoch, err := c.int64p("epoch", 0)
	if err != nil {
		return nil, err
	}
	var o tablet.PushOptions
	if c.has("sequence_number") {
		seq, err := c.int64p("sequence_number", 0)
		if err != nil {
			return nil, err
		}
		o.SequenceNumber = &seq
	}
	o.UserMeta, o.HasUserMeta = c.param("user_meta")
	rows, err := c.inputMaps()
	if err != nil {
		return nil, err
	}
	var res tablet.PushResult
	err = c.inTabletTx(func(tx string) error {
		var err error
		res, err = c.s.dyn().eng.PushProducer(tx, p.id, p.path, q.id, q.path, session, epoch, rows, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"last_sequence_number": res.LastSequenceNumber, "skipped_row_count": res.SkippedRowCount}, nil
}

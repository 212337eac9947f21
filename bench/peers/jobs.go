package peers

import (
	"context"
	"errors"
	"fmt"
	"github.com/ytflow/yt-flow/job"
	"strconv"
	"sync"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Peers are the four jobs in the order they run in each round.
func Peers() []string { return []string{"raw", "franz-go", "goka", "yt-flow"} }

// Variants are further jobs a run may name (-jobs): yt-flow-before is yt-flow with the epoch
// path of earlier versions (fixed pacing, job.Config.PaceFactor < 0; unbounded top-ups,
// job.Config.TopUpWait < 0), for before/after figures side by side.
func Variants() []string { return []string{"yt-flow-before"} }

func peerByName(name string) (peer, bool) {
	switch name {
	case "raw":
		return peer{name: name, guarantee: "idempotent producer", exact: true, direct: true, run: runRaw}, true
	case "franz-go":
		return peer{name: name, guarantee: "exactly-once", exact: true, run: runFranz}, true
	case "goka":
		return peer{name: name, guarantee: "at-least-once", run: runGoka}, true
	case "yt-flow":
		return peer{name: name, guarantee: "exactly-once", exact: true, run: runYTFlow(nil)}, true
	case "yt-flow-before":
		// The epoch path of earlier versions, for before/after figures in one run: the fixed
		// pacing (half of batch_duration after every medium epoch) and top-ups of rows read
		// ahead waited for however long the source's read takes.
		return peer{name: name, guarantee: "exactly-once", exact: true, run: runYTFlow(func(c *job.Config) { c.PaceFactor, c.TopUpWait = -1, -1 })}, true
	}
	return peer{}, false
}

// runRaw is the ceiling: the feeder writes the output itself; nothing runs.
func runRaw(ctx context.Context, _ env) error {
	<-ctx.Done()
	return nil
}

// runFranz is franz-go's exactly-once consume-transform-produce: a GroupTransactSession
// reads a batch, produces one record per input (key, count so far) in a transaction and
// commits the consumed offsets with it. The counts live in memory: a batch's increments are
// applied once its transaction committed. An aborted transaction is an error here (one
// member, no faults: nothing should abort, and the in-memory counts are not rewound).
func runFranz(ctx context.Context, e env) error {
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(e.Brokers...),
		kgo.TransactionalID(e.Group+"-txn"),
		kgo.ConsumerGroup(e.Group),
		kgo.ConsumeTopics(e.In),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.DefaultProduceTopic(e.Out),
	)
	if err != nil {
		return fmt.Errorf("franz-go: session: %w", err)
	}
	defer sess.Close()
	counts := map[string]int64{}
	for {
		fs := sess.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = cmpErr(ferr, fmt.Errorf("fetch %s/%d: %w", t, p, err)) })
		if ferr != nil {
			return fmt.Errorf("franz-go: %w", ferr)
		}
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("franz-go: begin: %w", err)
		}
		delta := map[string]int64{}
		var (
			mu   sync.Mutex
			perr error
		)
		fs.EachRecord(func(r *kgo.Record) {
			k := string(r.Key)
			delta[k]++
			c := counts[k] + delta[k]
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: []byte(strconv.FormatInt(c, 10))}, func(_ *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					perr = cmpErr(perr, err)
					mu.Unlock()
				}
			})
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		if ctx.Err() != nil {
			return nil
		}
		mu.Lock()
		err = cmpErr(err, perr)
		mu.Unlock()
		if err != nil {
			return fmt.Errorf("franz-go: end transaction: %w", err)
		}
		if !committed {
			return errors.New("franz-go: transaction aborted")
		}
		for k, d := range delta {
			counts[k] += d
		}
	}
}

// gokaConfig is goka's default sarama configuration, reading a new group's input from the
// start (the warm-up records may be produced before the processor joined).
func gokaConfig() *sarama.Config {
	cfg := goka.DefaultConfig()
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	return cfg
}

// runGoka is a goka processor: input e.In, the count per key in the group table (goka's
// Persist, in memory locally, the table topic on the broker), one emit per input to e.Out.
// goka commits the input offset once the table write and the emit are acknowledged:
// at-least-once.
func runGoka(ctx context.Context, e env) error {
	cb := func(gctx goka.Context, _ any) {
		var c int64
		if v := gctx.Value(); v != nil {
			c = v.(int64)
		}
		c++
		gctx.SetValue(c)
		gctx.Emit(goka.Stream(e.Out), gctx.Key(), strconv.FormatInt(c, 10))
	}
	g := goka.DefineGroup(goka.Group(e.Group),
		goka.Input(goka.Stream(e.In), new(codec.String), cb),
		goka.Output(goka.Stream(e.Out), new(codec.String)),
		goka.Persist(new(codec.Int64)),
	)
	tmc := goka.NewTopicManagerConfig()
	tmc.Table.Replication = 1
	tmc.Stream.Replication = 1
	cfg := gokaConfig()
	p, err := goka.NewProcessor(e.Brokers, g,
		goka.WithStorageBuilder(storage.MemoryBuilder()),
		goka.WithTopicManagerBuilder(goka.TopicManagerBuilderWithConfig(cfg, tmc)),
		goka.WithConsumerGroupBuilder(goka.ConsumerGroupBuilderWithConfig(cfg)),
		goka.WithConsumerSaramaBuilder(goka.SaramaConsumerBuilderWithConfig(cfg)),
		goka.WithProducerBuilder(goka.ProducerBuilderWithConfig(cfg)),
		goka.WithLogger(quietLogger{}),
	)
	if err != nil {
		return fmt.Errorf("goka: processor: %w", err)
	}
	if err := p.Run(ctx); err != nil && ctx.Err() == nil {
		return fmt.Errorf("goka: %w", err)
	}
	return nil
}

// quietLogger drops goka's informational logs (lines per rebalance and partition).
type quietLogger struct{}

func (quietLogger) Print(...any)          {}
func (quietLogger) Println(...any)        {}
func (quietLogger) Printf(string, ...any) {}

package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ytflow/yt-flow/connectors/connector"
)

func init() {
	connector.RegisterSource(Class, connector.Constructors{
		Partitions: func(ctx context.Context, env connector.Env, params any) ([]int64, error) {
			return withClient(ctx, env, params.(*SourceParams), partitions)
		},
		Ends: func(ctx context.Context, env connector.Env, params any) (map[int64]int64, error) {
			return withClient(ctx, env, params.(*SourceParams), ends)
		},
		Source: func(env connector.Env, params any) (connector.Source, error) {
			dyn, _ := env.Dynamic.(*SourceDynamicParams)
			return NewSource(func(ctx context.Context) (*ClientConfig, error) { return ResolveClient(ctx, env) },
				params.(*SourceParams), dyn, env.SourcePartition), nil
		},
	})
	connector.RegisterSink(Class, connector.Constructors{
		AsyncSink: func(env connector.Env, params any) (connector.AsyncSink, error) {
			return newSink(env, params.(*SinkParams)), nil
		},
		BestEffort: func(env connector.Env, params any) (connector.BestEffortWriter, error) {
			p := *params.(*SinkParams)
			p.DeliveryGuarantee = AtLeastOnce
			return newSink(env, &p), nil
		},
	})
	connector.RegisterSink(AtLeastOnceSinkClass, connector.Constructors{
		AtLeastOnceSyncSink: func(env connector.Env, params any) (connector.AtLeastOnceSyncSink, error) {
			p := *params.(*SinkParams)
			p.DeliveryGuarantee = AtLeastOnce
			return newSink(env, &p), nil
		},
	})
}

// newSink opens the sink of env: its transactional id is fixed per (pipeline, partition, sink),
// so a restarted job takes it over and fences the instance it replaces.
func newSink(env connector.Env, p *SinkParams) *Sink {
	return NewSink(func(ctx context.Context) (*ClientConfig, error) { return ResolveClient(ctx, env) }, SinkConfig{
		Name: "kafka sink " + env.SinkID, Params: p,
		TransactionalID: TransactionalID(env.PipelinePath, env.PartitionID, env.SinkID),
	})
}

// withClient runs fn with an admin client of the source's connection, closed afterwards.
func withClient[T any](ctx context.Context, env connector.Env, p *SourceParams, fn func(context.Context, *kadm.Client, *SourceParams) (T, error)) (T, error) {
	var zero T
	c, err := ResolveClient(ctx, env)
	if err != nil {
		return zero, err
	}
	opts, err := c.Options()
	if err != nil {
		return zero, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.ClientID("yt-flow"))...)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", p, err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, p.MetadataTimeout)
	defer cancel()
	v, err := fn(ctx, kadm.NewClient(cl), p)
	var netErr net.Error
	if err != nil && !errors.Is(err, ErrNoTopic) && (ctx.Err() != nil || errors.As(err, &netErr)) {
		err = fmt.Errorf("%w (brokers %s, metadata_timeout %v): check bootstrap_servers of resource %s and that the brokers are up", err, c.BootstrapServers, p.MetadataTimeout, ClientResourceID)
	}
	return v, err
}

// ErrNoTopic is the error of a source whose topic does not exist.
var ErrNoTopic = errors.New("no such topic: create it, or correct topic")

// partitions lists the topic's partitions that partition_filter admits: one Flow partition
// per Kafka partition, with the same index.
func partitions(ctx context.Context, adm *kadm.Client, p *SourceParams) ([]int64, error) {
	topics, err := adm.ListTopics(ctx, p.Topic)
	if err != nil {
		return nil, fmt.Errorf("%s: metadata: %w", p, err)
	}
	td, ok := topics[p.Topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return nil, fmt.Errorf("%s: %w", p, ErrNoTopic)
	}
	if td.Err != nil {
		return nil, fmt.Errorf("%s: metadata: %w", p, td.Err)
	}
	return PartitionIndexes(len(td.Partitions), p.PartitionFilter), nil
}

// PartitionIndexes lists the partitions 0..n-1 that filter admits (nil = all).
func PartitionIndexes(n int, filter [][2]int64) []int64 {
	out := []int64{}
	for i := range int64(n) {
		if filter == nil || slices.ContainsFunc(filter, func(r [2]int64) bool { return r[0] <= i && i < r[1] }) {
			out = append(out, i)
		}
	}
	return out
}

// ends reads the end offset (high watermark) of every partition of the topic.
func ends(ctx context.Context, adm *kadm.Client, p *SourceParams) (map[int64]int64, error) {
	listed, err := adm.ListEndOffsets(ctx, p.Topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: end offsets: %w", p, err)
	}
	m := map[int64]int64{}
	listed.Each(func(o kadm.ListedOffset) { m[int64(o.Partition)] = o.Offset })
	return m, nil
}

package kafka_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/connectors/connectortest"
	"github.com/ytflow/yt-flow/connectors/kafka"
	"github.com/ytflow/yt-flow/ytstore"
)

// clientResource is the pipeline spec's resources map with the KafkaClient of c.
func clientResource(c *kafka.TestCluster) string {
	return fmt.Sprintf(`{%s = {resource_class_name = %q; parameters = {bootstrap_servers = %q}}}`, kafka.ClientResourceID, kafka.ClientResourceClass, c.Brokers())
}

// TestKafkaSourceConformance: the Kafka source delivers every record of a three-partition topic
// exactly once while workers are killed after reads, after commits and between partitions.
// The records' values are the ids as text; the suite's Map takes them out of data.
func TestKafkaSourceConformance(t *testing.T) {
	c := kafka.NewTestCluster(t)
	connectortest.RunSource(t, connectortest.Source{
		Class:     kafka.Class,
		Resources: clientResource(c),
		Unbounded: true,
		Setup: func(ctx context.Context, _ *ytstore.Store, _ string, rows int) (string, []schema.Column, error) {
			topic := c.Topic(3)
			batch := make([]*kgo.Record, 0, 500)
			for i := range rows {
				batch = append(batch, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte(strconv.Itoa(i))})
				if len(batch) == cap(batch) || i == rows-1 {
					if err := c.Client().ProduceSync(ctx, batch...).FirstErr(); err != nil {
						return "", nil, err
					}
					batch = batch[:0]
				}
			}
			params := fmt.Sprintf("{topic = %q; group_id = %q}", topic, "conformance-"+topic)
			return params, []schema.Column{{Name: "data", Type: schema.TypeString}}, nil
		},
		Map: func(cols map[string]any) (map[string]any, error) {
			data, _ := cols["data"].(string)
			id, err := strconv.ParseUint(data, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("data %q is not an id: %w", data, err)
			}
			return map[string]any{"id": id, "data": data}, nil
		},
	})
}

// TestKafkaSinkConformance: the transactional Kafka sink holds every row exactly once, as a
// read_committed consumer sees it, while workers are killed between delivery and
// acknowledgement and the target fails, takes part of a delivery, or is slow.
func TestKafkaSinkConformance(t *testing.T) { connectortest.RunSink(t, kafkaSinkCase(t, kafka.Class)) }

// TestAtLeastOnceKafkaSinkConformance: TAtLeastOnceKafkaSink loses no row while workers are
// killed between its write and the epoch's commit (repeats are allowed).
func TestAtLeastOnceKafkaSinkConformance(t *testing.T) {
	connectortest.RunSink(t, kafkaSinkCase(t, kafka.AtLeastOnceSinkClass))
}

// kafkaSinkCase is the conformance case of a Kafka sink class on an in-process broker (a real
// one with KAFKA_BROKERS), read back with a read_committed consumer.
func kafkaSinkCase(t *testing.T, class string) connectortest.Sink {
	c := kafka.NewTestCluster(t)
	topics := map[string]string{} // root -> topic
	return connectortest.Sink{
		Class:     class,
		Resources: clientResource(c),
		Setup: func(ctx context.Context, _ *ytstore.Store, root string) (string, error) {
			topics[root] = c.Topic(2)
			return fmt.Sprintf("{topic = %q; payload_column = %q}", topics[root], "id"), nil
		},
		ReadBack: func(ctx context.Context, _ *ytstore.Store, root string) ([]uint64, error) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Brokers(), ",")...), kgo.ConsumeTopics(topics[root]),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
			if err != nil {
				return nil, err
			}
			defer cl.Close()
			var ids []uint64
			for empty := 0; empty < 3; {
				pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
				f := cl.PollFetches(pctx)
				cancel()
				if f.NumRecords() == 0 {
					empty++
					continue
				}
				empty = 0
				for _, r := range f.Records() {
					id, err := strconv.ParseUint(string(r.Value), 10, 64)
					if err != nil {
						return nil, fmt.Errorf("record %d/%d: value %q: %w", r.Partition, r.Offset, r.Value, err)
					}
					ids = append(ids, id)
				}
			}
			return ids, nil
		},
	}
}

package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/connectors/kafka"
	"github.com/ytflow/yt-flow/ytstore"
)

// embeddedKafka is `yt-flow run --kafka-embedded`: a kfake broker in the process (loopback),
// the topics the spec's Kafka sources and sinks name, the input file loaded into the source
// topic, and at the end the record values of the sink topics, latest per key. It is for
// trying a Kafka pipeline on one machine, not for production.
type embeddedKafka struct {
	cluster *kfake.Cluster
	cl      *kgo.Client
	adm     *kadm.Client
	in      string   // the source topic
	group   string   // its group_id, where the source commits what the pipeline committed
	outs    []string // the sink topics
	// quiet tracks when the sink topics' end offsets last changed (see drained).
	lastEnds string
	since    time.Time
}

// kafkaQuiet is how long the sink topics must not grow, with the input consumed, before an
// embedded-Kafka run is over.
const kafkaQuiet = 2 * time.Second

// startEmbeddedKafka starts the broker, creates the topics of static (the spec; one Kafka
// source and at least one Kafka sink), loads inputFile (one record per non-empty line) into
// the source topic and returns static with resources/KafkaClient pointing at the broker.
func startEmbeddedKafka(ctx context.Context, static []byte, inputFile string) (*embeddedKafka, []byte, error) {
	var sp map[string]any
	if err := sdkyson.Unmarshal(static, &sp); err != nil {
		return nil, nil, fmt.Errorf("kafka-embedded: decode the spec: %w", err)
	}
	k := &embeddedKafka{}
	var ins []string
	comps, _ := sp["computations"].(map[string]any)
	for _, c := range comps {
		cm, _ := c.(map[string]any)
		srcs, _ := cm["source_streams"].(map[string]any)
		for _, s := range srcs {
			if topic, group := kafkaTopic(s, "source_class_name"); topic != "" {
				ins, k.group = append(ins, topic), group
			}
		}
		sinks, _ := cm["sinks"].(map[string]any)
		for _, s := range sinks {
			if topic, _ := kafkaTopic(s, "sink_class_name"); topic != "" {
				k.outs = append(k.outs, topic)
			}
		}
	}
	if len(ins) != 1 || len(k.outs) == 0 {
		return nil, nil, fmt.Errorf("kafka-embedded: want one Kafka source and a Kafka sink in the spec, found %d and %d", len(ins), len(k.outs))
	}
	k.in = ins[0]
	sort.Strings(k.outs)

	var err error
	if k.cluster, err = kfake.NewCluster(kfake.NumBrokers(1)); err != nil {
		return nil, nil, fmt.Errorf("kafka-embedded: start kfake: %w", err)
	}
	brokers := k.cluster.ListenAddrs()
	if k.cl, err = kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner())); err != nil {
		k.close()
		return nil, nil, fmt.Errorf("kafka-embedded: %w", err)
	}
	k.adm = kadm.NewClient(k.cl)
	fail := func(err error) (*embeddedKafka, []byte, error) {
		k.close()
		return nil, nil, fmt.Errorf("kafka-embedded: %w", err)
	}
	const inPartitions = 2
	for _, topic := range append([]string{k.in}, k.outs...) {
		n := int32(1)
		if topic == k.in {
			n = inPartitions
		}
		resp, err := k.adm.CreateTopic(ctx, n, 1, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fail(fmt.Errorf("create topic %s: %w", topic, err))
		}
	}
	if err := k.load(ctx, inputFile, inPartitions); err != nil {
		return fail(err)
	}

	res, _ := sp["resources"].(map[string]any)
	if res == nil {
		res = map[string]any{}
		sp["resources"] = res
	}
	client, _ := res[kafka.ClientResourceID].(map[string]any)
	if client == nil {
		client = map[string]any{"resource_class_name": kafka.ClientResourceClass}
		res[kafka.ClientResourceID] = client
	}
	params, _ := client["parameters"].(map[string]any)
	if params == nil {
		params = map[string]any{}
		client["parameters"] = params
	}
	params["bootstrap_servers"] = strings.Join(brokers, ",")
	out, err := sdkyson.Marshal(sp)
	if err != nil {
		return fail(fmt.Errorf("encode the spec: %w", err))
	}
	return k, out, nil
}

// kafkaTopic returns topic and group_id of a source or sink node of a Kafka class.
func kafkaTopic(node any, classKey string) (topic, group string) {
	m, _ := node.(map[string]any)
	cls, _ := m[classKey].(string)
	if !strings.Contains(cls, "Kafka") && cls != kafka.Class && cls != kafka.AtLeastOnceSinkClass {
		return "", ""
	}
	p, _ := m["parameters"].(map[string]any)
	topic, _ = p["topic"].(string)
	group, _ = p["group_id"].(string)
	return topic, group
}

// load writes every non-empty line of file as a record, round-robin over the partitions.
func (k *embeddedKafka) load(ctx context.Context, file string, partitions int32) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	var recs []*kgo.Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			recs = append(recs, &kgo.Record{Topic: k.in, Partition: int32(len(recs)) % partitions, Value: []byte(line)})
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	if err := k.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("load %s into topic %s: %w", file, k.in, err)
	}
	return nil
}

// drained reports whether the pipeline has consumed the whole source topic (the source
// commits to group_id what the pipeline committed) and the sink topics have not grown for
// kafkaQuiet since.
func (k *embeddedKafka) drained(ctx context.Context, now time.Time) bool {
	ends, err := k.adm.ListEndOffsets(ctx, k.in)
	if err != nil {
		return false
	}
	committed, err := k.adm.FetchOffsets(ctx, k.group)
	if err != nil {
		return false
	}
	consumed := true
	ends.Each(func(o kadm.ListedOffset) {
		c, ok := committed.Lookup(k.in, o.Partition)
		// The source commits the offset of the last row the pipeline committed.
		if o.Offset > 0 && (!ok || c.At < o.Offset-1) {
			consumed = false
		}
	})
	outEnds, err := k.adm.ListEndOffsets(ctx, k.outs...)
	if err != nil {
		return false
	}
	var b strings.Builder
	outEnds.Each(func(o kadm.ListedOffset) { fmt.Fprintf(&b, "%s/%d=%d ", o.Topic, o.Partition, o.Offset) })
	if !consumed || b.String() != k.lastEnds {
		k.lastEnds, k.since = b.String(), now
		return false
	}
	return now.Sub(k.since) >= kafkaQuiet
}

// report prints, per sink topic, the latest value of each key as a read_committed consumer
// sees it.
func (k *embeddedKafka) report(ctx context.Context, say func(string, ...any)) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.cluster.ListenAddrs()...), kgo.ConsumeTopics(k.outs...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return err
	}
	defer cl.Close()
	latest := map[string]map[string]string{}
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if latest[r.Topic] == nil {
				latest[r.Topic] = map[string]string{}
			}
			latest[r.Topic][string(r.Key)] = string(r.Value)
		})
		if n == 0 {
			break
		}
	}
	for _, topic := range k.outs {
		keys := make([]string, 0, len(latest[topic]))
		for key := range latest[topic] {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		say("\nKafka topic %s, latest value per key (%d keys):", topic, len(keys))
		for _, key := range keys {
			say("  %-20s %s", key, latest[topic][key])
		}
	}
	return nil
}

// close stops the client and the broker.
func (k *embeddedKafka) close() {
	if k.cl != nil {
		k.cl.Close()
	}
	if k.cluster != nil {
		k.cluster.Close()
	}
}

// stopDrained stops the pipeline of an embedded-Kafka run whose input is consumed: 0 once it
// is stopped, 1 when it does not stop within 30s.
func (r *runner) stopDrained(st *ytstore.Store) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := st.SetTargetState(ctx, ytstore.TargetStopped); err != nil {
		fmt.Fprintf(r.env.stderr, "yt-flow: run: stop: %v\n", err)
		return 1
	}
	for ctx.Err() == nil {
		if attrs, err := st.Attributes(ctx); err == nil && attrs.PipelineState == ytstore.StateStopped {
			return 0
		}
		time.Sleep(200 * time.Millisecond) // a poll of the pipeline state under ctx's deadline
	}
	fmt.Fprintln(r.env.stderr, "yt-flow: run: the pipeline did not stop within 30s")
	return 1
}

// fresh refuses a pipeline that exists already: its committed Kafka offsets belong to the
// broker of an earlier run, which is gone with that run.
func (k *embeddedKafka) fresh(ctx context.Context, st *ytstore.Store, path, dataDir string) error {
	_, err := st.Attributes(ctx)
	switch {
	case errors.Is(err, ytstore.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("kafka-embedded: %w", err)
	}
	return fmt.Errorf("kafka-embedded: pipeline %s exists from an earlier run, with offsets of that run's broker, which is gone: run with a fresh --data-dir (or remove %s)", path, dataDir)
}

package peers

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/bench"
	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/job"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytlocal"
	"github.com/ytflow/yt-flow/ytstore"
)

func init() {
	flow.Register("PeersKey", flow.PerMessage(Key))
	flow.Register("PeersRunningCount", flow.Batch(RunningCount))
}

// Key is the source stage of the yt-flow job: it emits the record's Kafka key as the message
// {word}, the key the keyed stage groups by — what goka's callback reads with ctx.Key() and
// franz-go's loop with the record's Key. It does no other work on the record (no lower-casing
// or splitting as examples/kafka_count's KafkaWords does), so the four jobs do the same work.
func Key(ctx *flow.Context, msg *flow.Message) error {
	k, ok := msg.Payload["key"].(string)
	if !ok {
		return fmt.Errorf("column key: want a string, got %T", msg.Payload["key"])
	}
	ctx.AddMessage("words", flow.Row{"word": k})
	return nil
}

// RunningCount is the keyed stage of the yt-flow job: like examples/word_count's CountWords it
// keeps the int64 state "count" per key [hash, word], but it emits one message
// {hash, word, count} per input message, in order, as the other three jobs do — not one per
// key per invocation.
func RunningCount(ctx *flow.Context, msgs []flow.Message) error {
	key := ctx.Key()
	if len(key) != 2 {
		return fmt.Errorf("key %v: want [hash, word]", key)
	}
	hash, ok1 := key[0].(uint64)
	word, ok2 := key[1].(string)
	if !ok1 || !ok2 {
		return fmt.Errorf("key %v: want [hash uint64, word string], got [%T, %T]", key, key[0], key[1])
	}
	count := flow.StateOf[int64](ctx, "count")
	n, _ := count.Get()
	for range msgs {
		n++
		ctx.AddMessage("counts", flow.Row{"hash": hash, "word": word, "count": n})
	}
	count.Set(n)
	return nil
}

// ytflowWorkers is how many in-process workers run the pipeline: `yt-flow run`'s default.
const ytflowWorkers = 2

// ytflowSpec is examples/kafka_count with the benchmark's topics, group and partition counts:
// TKafkaSource → Key (the record's key) → RunningCount keyed by
// [farm_hash(word), word] → TKafkaSink (Kafka transactions: exactly-once), record key the
// word and value its count so far. The dynamic spec is the example's (batch_duration 100 ms).
const ytflowSpec = `{
    path = "PATH";
    spec = {
        resources = {
            KafkaClient = {resource_class_name = "NYT::NFlow::TKafkaClient"; parameters = {bootstrap_servers = "BROKERS"}};
        };
        computations = {
            split = {
                computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation";
                processing_function = "PeersKey";
                source_streams = {
                    records = {
                        source_class_name = "NYT::NFlow::TKafkaSource";
                        parameters = {topic = "IN"; group_id = "GROUP"};
                    };
                };
                output_stream_ids = ["words"];
            };
            count = {
                computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
                processing_function = "PeersRunningCount";
                group_by_schema = [
                    {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(word)"};
                    {name = "word"; type = "string"; required = %true};
                ];
                input_stream_ids = ["words"];
                output_stream_ids = ["counts"];
                sinks = {
                    kafka = {
                        sink_class_name = "NYT::NFlow::TKafkaSink";
                        input_stream_ids = ["counts"];
                        parameters = {topic = "OUT"; key_column = "word"; payload_column = "count"};
                    };
                };
            };
        };
        streams = {
            words = {schema = [{name = "word"; type = "string"; required = %true}]};
            counts = {schema = [{name = "hash"; type = "uint64"}; {name = "word"; type = "string"}; {name = "count"; type = "int64"}]};
        };
    };
    dynamic_spec = {
        computations = {
            split = {batch_duration = 100; parameters = {desired_partition_count = PARTS}};
            count = {batch_duration = 100; parameters = {desired_partition_count = PARTS}};
        };
    };
}`

// ytflowSpecs returns the static and dynamic spec of the pipeline at path for e, checked by the spec parser.
func ytflowSpecs(e env, path string) (static, dynamic yson.RawValue, err error) {
	text := strings.NewReplacer("PATH", path, "BROKERS", strings.Join(e.Brokers, ","), "IN", e.In, "OUT", e.Out,
		"GROUP", e.Group, "PARTS", fmt.Sprint(e.Partitions)).Replace(ytflowSpec)
	if _, err := spec.ParseConfig([]byte(text)); err != nil {
		return nil, nil, fmt.Errorf("yt-flow: spec: %w", err)
	}
	var doc struct {
		Spec        any `yson:"spec"`
		DynamicSpec any `yson:"dynamic_spec"`
	}
	if err := yson.Unmarshal([]byte(text), &doc); err != nil {
		return nil, nil, fmt.Errorf("yt-flow: spec: %w", err)
	}
	if static, err = yson.Marshal(doc.Spec); err != nil {
		return nil, nil, err
	}
	if dynamic, err = yson.Marshal(doc.DynamicSpec); err != nil {
		return nil, nil, err
	}
	return static, dynamic, nil
}

// runYTFlow returns the yt-flow job: it starts the embedded server (in memory, reachable in
// process), creates and starts the pipeline and runs the controller and workers (their
// configuration passed through tune) in this process, as `yt-flow run` does, until ctx ends.
func runYTFlow(tune func(*job.Config)) func(ctx context.Context, e env) error {
	return func(ctx context.Context, e env) error { return runYTFlowWith(ctx, e, tune) }
}

func runYTFlowWith(ctx context.Context, e env, tune func(*job.Config)) error {
	path := "//home/peers/" + e.Group + "/pipeline"
	static, dynamic, err := ytflowSpecs(e, path)
	if err != nil {
		return err
	}
	srv, err := ytlocal.Start(context.WithoutCancel(ctx), ytlocal.Config{InProcess: true})
	if err != nil {
		return fmt.Errorf("yt-flow: start ytlocal: %w", err)
	}
	defer srv.Close()
	reqs, uncount, err := countRequests(srv.Addr())
	if err != nil {
		return err
	}
	defer uncount()
	e.probe.setRequests(reqs)
	st, err := ytstore.Open(ctx, ytstore.Config{Proxy: srv.Addr(), Path: path})
	if err != nil {
		return fmt.Errorf("yt-flow: open %s: %w", path, err)
	}
	defer st.Close()
	if err := st.CreatePipeline(ctx); err != nil {
		return fmt.Errorf("yt-flow: %w", err)
	}
	if err := st.SetSpecs(ctx, ytstore.SpecUpdate{Spec: static, SpecVersion: 1, DynamicSpec: dynamic, DynamicSpecVersion: 1,
		TargetState: ytstore.TargetWorking}); err != nil {
		return fmt.Errorf("yt-flow: start %s: %w", path, err)
	}
	rt := bench.StartRuntimeWith(srv.Addr(), path, ytflowWorkers, tune)
	defer rt.Stop()
	e.probe.set(rt.Stats)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := rt.Err(); err != nil {
				return fmt.Errorf("yt-flow: %w", err)
			}
		}
	}
}

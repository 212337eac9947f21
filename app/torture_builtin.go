package app

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ytflow/yt-flow/flow"
)

// The built-in pipeline of `yt-flow torture` (no --spec) uses these two functions; every
// binary built on app has them, so that torture runs without the user's own pipeline.
func init() {
	flow.Register("TortureTag", flow.PerMessage(tortureTag))
	flow.Register("TortureCount", flow.PerMessage(tortureCount))
}

// tortureTag emits the string column key of a source row as {key} to stream keys.
func tortureTag(ctx *flow.Context, msg *flow.Message) error {
	key, ok := msg.Payload["key"].(string)
	if !ok {
		return fmt.Errorf("column key: want a string, got %T", msg.Payload["key"])
	}
	ctx.AddMessage("keys", flow.Row{"key": key})
	return nil
}

// tortureCount counts the messages of its key (key [hash, key]) in the int64 state count
// and emits {hash, key, count} per message: the n-th message of a key yields count n, so the
// output does not depend on how messages are batched.
func tortureCount(ctx *flow.Context, msg *flow.Message) error {
	k := ctx.Key()
	if len(k) != 2 {
		return fmt.Errorf("key %v: want [hash, key]", k)
	}
	count := flow.StateOf[int64](ctx, "count")
	n, _ := count.Get()
	n++
	count.Set(n)
	ctx.AddMessage("counts", flow.Row{"hash": k[0], "key": k[1], "count": n})
	return nil
}

// writeBuiltinTorture writes the built-in pipeline's runner config and setup file into dir
// and returns the config's path.
func writeBuiltinTorture(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	specFile := filepath.Join(dir, "pipeline.yson")
	if err := os.WriteFile(specFile, []byte(builtinTortureSpec), 0o644); err != nil {
		return "", err
	}
	return specFile, os.WriteFile(filepath.Join(dir, "local.yson"), []byte(builtinTortureSetup), 0o644)
}

// builtinTortureSpec: queue → TortureTag (source, 2 partitions) → TortureCount (keyed by
// [farm_hash(key), key], 4 partitions) → a sorted table (sync sink) and a queue through a
// producer (async sink).
const builtinTortureSpec = `{
    path = "//home/torture/pipeline";
    spec = {
        computations = {
            tag = {
                computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation";
                processing_function = "TortureTag";
                source_streams = {
                    rows = {
                        source_class_name = "NYT::NFlow::TQueueSource";
                        parameters = {queue_path = "//home/torture/input"; consumer_path = "//home/torture/consumer"};
                    };
                };
                output_stream_ids = ["keys"];
            };
            count = {
                computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
                processing_function = "TortureCount";
                group_by_schema = [
                    {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(key)"};
                    {name = "key"; type = "string"; required = %true};
                ];
                input_stream_ids = ["keys"];
                output_stream_ids = ["counts"];
                sinks = {
                    table = {
                        sink_class_name = "NYT::NFlow::NSortedDynamicTable::TSyncSink";
                        input_stream_ids = ["counts"];
                        parameters = {table_path = "//home/torture/counts"};
                    };
                    out = {
                        sink_class_name = "NYT::NFlow::TAsyncQueueSink";
                        input_stream_ids = ["counts"];
                        parameters = {queue_path = "//home/torture/output"; producer_path = "//home/torture/producer"};
                    };
                };
            };
        };
        streams = {
            keys = {schema = [{name = "key"; type = "string"; required = %true}]};
            counts = {schema = [{name = "hash"; type = "uint64"}; {name = "key"; type = "string"}; {name = "count"; type = "int64"}]};
        };
    };
    dynamic_spec = {
        computations = {
            tag = {batch_duration = 100; parameters = {desired_partition_count = 2}};
            count = {batch_duration = 100; parameters = {desired_partition_count = 4}};
        };
    };
}
`

const builtinTortureSetup = `{
    tables = [
        {path = "//home/torture/input"; kind = queue; tablet_count = 2; schema = [{name = key; type = string}; {name = seq; type = int64}]};
        {path = "//home/torture/consumer"; kind = consumer; queue = "//home/torture/input"};
        {
            path = "//home/torture/counts";
            kind = sorted_table;
            schema = [
                {name = hash; type = uint64; sort_order = ascending};
                {name = key; type = string; sort_order = ascending};
                {name = count; type = int64};
            ];
        };
        {path = "//home/torture/output"; kind = queue; schema = [{name = hash; type = uint64}; {name = key; type = string}; {name = count; type = int64}]};
        {path = "//home/torture/producer"; kind = producer};
    ];
}
`

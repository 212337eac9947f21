package controller

import (
	"slices"
	"testing"

	"github.com/ytflow/yt-flow/spec"
)

// testSpec has a random source (one partition) feeding a keyed computation.
const testSpec = `{
    computations = {
        gen = {
            computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation";
            processing_function = "Gen";
            source_streams = {r = {source_class_name = "random"; parameters = {partition_count = 1}}};
            output_stream_ids = ["x"];
        };
        agg = {
            computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
            processing_function = "Agg";
            group_by_schema = [{name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(k)"}; {name = "k"; type = "string"; required = %true}];
            input_stream_ids = ["x"];
        };
    };
    streams = {x = {schema = [{name = "k"; type = "string"; required = %true}]}};
}`

const testDynamicSpec = `{computations = {agg = {parameters = {desired_partition_count = 2}}}}`

func TestTopologyOf(t *testing.T) {
	p, err := spec.ParsePipeline([]byte(testSpec))
	if err != nil {
		t.Fatalf("parse test spec: %v", err)
	}
	d, err := spec.ParseDynamic([]byte(testDynamicSpec))
	if err != nil {
		t.Fatalf("parse test dynamic spec: %v", err)
	}
	topo := TopologyOf(p, d)
	if len(topo.Computations) != 2 {
		t.Fatalf("computations %+v", topo.Computations)
	}
	agg, gen := topo.Computations[0], topo.Computations[1]
	if agg.ID != "agg" || len(agg.Sources) != 0 || agg.PartitionCount != 2 {
		t.Errorf("agg: %+v", agg)
	}
	if gen.ID != "gen" || len(gen.Sources) != 1 || gen.Sources[0].ID != "r" || gen.Sources[0].ListKey != "gen/src/r/" {
		t.Errorf("gen: %+v", gen)
	}
	want, _ := desiredPartitions(topo, map[string][]int64{"gen/src/r/": {0}}, nil, nil)
	if got := sortedKeys(want); !slices.Equal(got, []string{"agg/0of2", "agg/1of2", "gen/src/r/0"}) {
		t.Errorf("partitions %v", got)
	}
	if agg.Auto != nil {
		t.Errorf("a pinned count is partitioned by load: %+v", agg.Auto)
	}
	// Without desired_partition_count a keyed computation is partitioned by load with Flow's
	// defaults and starts on 3 partitions.
	auto := TopologyOf(p, nil).Computations[0]
	if auto.PartitionCount != 3 || auto.Auto == nil || auto.Auto.Min != 3 || auto.Auto.Max != 20000 || auto.Auto.Targets.Messages != 10000 {
		t.Errorf("default partitioning: count %d, %+v", auto.PartitionCount, auto.Auto)
	}
	want, _ = desiredPartitions(TopologyOf(p, nil), map[string][]int64{"gen/src/r/": {0}}, nil, nil)
	if got := sortedKeys(want); !slices.Equal(got, []string{"agg/0of3", "agg/1of3", "agg/2of3", "gen/src/r/0"}) {
		t.Errorf("default partitions %v", got)
	}
	bounded, err := spec.ParseDynamic([]byte(`{computations = {agg = {parameters = {max_partition_count = 2}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c := TopologyOf(p, bounded).Computations[0]; c.PartitionCount != 2 || c.Auto.Min != 2 || c.Auto.Max != 2 {
		t.Errorf("max_partition_count 2: count %d, %+v", c.PartitionCount, c.Auto)
	}
	if len(TopologyOf(nil, nil).Computations) != 0 {
		t.Error("nil spec has computations")
	}
}

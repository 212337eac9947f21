package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corpusExpectations reads the header comments of a testdata/flow spec: "// unsupported: PATH"
// for each feature yt-flow does not run yet, "// run: SETUP" when it runs on the embedded
// server (app's TestFlowCorpusRuns runs it with that setup file, and with the test's own
// servers where the spec names a Kafka broker, an HTTP endpoint or ClickHouse servers).
func corpusExpectations(t *testing.T, data []byte) (unsupported []string, run string) {
	t.Helper()
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "//") {
			break
		}
		if p, ok := strings.CutPrefix(line, "// unsupported: "); ok {
			unsupported = append(unsupported, p)
		}
		if s, ok := strings.CutPrefix(line, "// run: "); ok {
			run = s
		}
	}
	return unsupported, run
}

// TestFlowCorpus: specs written for YTsaurus Flow, one per Flow feature (every connector
// class, companion classes and the companion manager, throttlers, key visitor, state joiner,
// the vanilla section and runner singletons, resources, sinks on a swift source), validate
// unchanged; those using a feature yt-flow does not run yet carry exactly the
// "not supported by yt-flow yet" notes their header names, and the others name a setup file
// to run with.
func TestFlowCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/flow/*.yson")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 15)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			cfg, err := ParseConfig(data)
			require.NoError(t, err)
			want, run := corpusExpectations(t, data)
			var got []string
			for _, p := range cfg.Notes.Unsupported {
				got = append(got, p.Path)
				assert.True(t, strings.HasSuffix(p.Message, " is not supported by yt-flow yet"), p.Message)
			}
			assert.Equal(t, want, got, "the header's unsupported lines")
			if len(got) == 0 {
				require.NotEmpty(t, run, "a spec whose features yt-flow runs names its setup file (// run: …)")
				_, err := os.Stat(filepath.Join(filepath.Dir(file), run))
				require.NoError(t, err)
			} else {
				assert.Empty(t, run, "a spec yt-flow refuses does not run")
			}
		})
	}
}

// TestFlowCorpusIgnored: the runner keys Flow demos carry are accepted and each noted as
// ignored with its path.
func TestFlowCorpusIgnored(t *testing.T) {
	cfg, err := ParseConfigFile("testdata/flow/vanilla.yson")
	require.NoError(t, err)
	var paths []string
	for _, p := range cfg.Notes.Ignored {
		paths = append(paths, p.Path)
		assert.NotEmpty(t, p.Message)
	}
	assert.Equal(t, []string{
		"abort_on_specs_parseability_error", "abort_on_unrecognized_options", "address_resolver",
		"clients_cache", "direct_controller_commands", "logging", "set_flow_core_target", "vanilla",
	}, paths)
	assert.Empty(t, cfg.Notes.Unsupported)

	cfg, err = ParseConfigFile("testdata/flow/companion_transform.yson")
	require.NoError(t, err)
	paths = nil
	for _, p := range cfg.Notes.Ignored {
		paths = append(paths, p.Path)
	}
	assert.Equal(t, []string{
		"spec/computations/corpus_companion_count/required_resource_ids/CompanionManager",
		"spec/computations/corpus_companion_split/required_resource_ids/CompanionManager",
		"spec/resources/CompanionManager",
	}, paths)
	c := cfg.Spec.Computations["corpus_companion_count"]
	assert.Equal(t, KindTransform, c.Kind)
	assert.True(t, c.Companion)
	assert.Equal(t, "corpus_companion_count", c.ProcessingFunction, "a companion computation runs the function registered under its id")
	assert.Equal(t, "transform", ClassAliases()["NYT::NFlow::NCompanion::TTransformCompanionComputation"])
	assert.Equal(t, "swift_source", ClassAliases()["NCompanion::TSwiftOrderedSourceCompanionComputation"])
}

func TestDerivedStreams(t *testing.T) {
	cfg, err := ParseConfigFile("testdata/flow/derived_streams.yson")
	require.NoError(t, err)
	s := cfg.Spec.Streams["words_copy"]
	require.NotNil(t, s)
	assert.True(t, s.Derived)
	assert.Equal(t, cfg.Spec.Streams["words"].Schema, s.Schema)

	// What cannot be derived is reported where the stream is written.
	_, err = ParsePipeline([]byte(`{computations = {s = {computation_class_name = "TSwiftPassthroughOrderedSourceComputation";
		source_streams = {in = {source_class_name = "TQueueSource"; parameters = {queue_path = "//q"; consumer_path = "//c"}}};
		output_stream_ids = ["raw"]}}}`))
	require.Error(t, err)
	assert.Equal(t, `computations/s/output_stream_ids/0: stream "raw" is not declared in streams`, err.Error())
}

func TestPassthroughSubset(t *testing.T) {
	cfg, err := ParseConfigFile("testdata/flow/passthrough_subset.yson")
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{"words": {"word"}}, cfg.Spec.Computations["project"].PassthroughColumns)

	// A column the input lacks, or of another type, is still refused.
	_, err = ParsePipeline([]byte(`{computations = {
		src = {computation_class_name = "source"; processing_function = "F"; source_streams = {in = {source_class_name = "queue"; parameters = {queue_path = "//q"; consumer_path = "//c"}}}; output_stream_ids = ["a"]};
		p = {computation_class_name = "passthrough"; group_by_schema = [{name = "k"; type = "uint64"}]; input_stream_ids = ["a"]; output_stream_ids = ["b"]}};
		streams = {a = {schema = [{name = "k"; type = "uint64"}; {name = "v"; type = "string"}]}; b = {schema = [{name = "k"; type = "uint64"}; {name = "w"; type = "string"}]}}}`))
	require.Error(t, err)
	assert.Equal(t, `computations/p/output_stream_ids/0: passthrough output "b" must have the schema of input "a"`, err.Error())
}

func TestUnregisteredFunctions(t *testing.T) {
	cfg, err := ParseConfigFile("testdata/flow/companion_swift.yson")
	require.NoError(t, err)
	probs := cfg.UnregisteredFunctions(func(name string) bool { return name == "corpus_swift_tag" })
	var got []string
	for _, p := range probs {
		got = append(got, p.String())
	}
	assert.Equal(t, []string{
		`spec/computations/corpus_swift_count/processing_function: processing function "corpus_swift_count" is not registered in this program (a companion computation without processing_function runs the function registered under its id)`,
		`spec/computations/corpus_swift_split/processing_function: processing function "corpus_swift_split" is not registered in this program (a companion computation without processing_function runs the function registered under its id)`,
	}, got)
}

// TestRunnerKeySuggestion: a misspelt runner key Flow defines names it.
func TestRunnerKeySuggestion(t *testing.T) {
	_, err := ParseConfig([]byte(`{path = "//p"; adress_resolver = {}; vanilla = {wroker = {count = 1}; network_project = #};
		spec = {computations = {s = {computation_class_name = "source"; processing_function = "F";
			source_streams = {r = {source_class_name = "queue"; parameters = {queue_path = "//q"; consumer_path = "//c"}}}}}}}`))
	require.Error(t, err)
	assert.Equal(t, `adress_resolver: unknown key (did you mean "address_resolver"?)`+"\n"+
		`vanilla/wroker: unknown key (did you mean "worker"?)`, err.Error())
}

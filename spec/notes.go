package spec

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ytflow/yt-flow/yson"
)

// Notes are the remarks on a document that parsed without problems: the keys it uses that
// yt-flow accepts without acting on them, and the features it uses that yt-flow does not run
// yet. docs/spec.md lists which key is which.
type Notes struct {
	// Ignored lists keys Flow defines that yt-flow accepts and does not act on because they
	// cannot change results: the placement and tuning of Flow's own processes (vanilla,
	// address_resolver, node_config, job_tracker …), logging, throttling. The message says
	// why; `yt-flow validate --verbose` prints them as "ignored: …".
	Ignored []Problem
	// Unsupported lists features the document uses that would change outputs, placement or
	// fencing and that yt-flow does not implement yet (skip_if_expression, worker_group,
	// key visitors, sinks on a swift source …). Each message names the feature and ends in
	// "not supported by yt-flow yet". `yt-flow validate` prints them as warnings;
	// `yt-flow start` and `yt-flow run` refuse the document.
	Unsupported []Problem
}

// sorted returns n with both lists sorted by path, then message.
func (n Notes) sorted() Notes {
	for _, l := range [][]Problem{n.Ignored, n.Unsupported} {
		sort.SliceStable(l, func(i, j int) bool {
			if l[i].Path != l[j].Path {
				return l[i].Path < l[j].Path
			}
			return l[i].Message < l[j].Message
		})
	}
	return n
}

// under returns the notes inside the block at path (a top-level key), with paths relative
// to it: the notes of a runner config's spec as ParsePipeline would give them.
func (n Notes) under(path string) Notes {
	pick := func(ps []Problem) []Problem {
		var out []Problem
		for _, p := range ps {
			if rest, ok := strings.CutPrefix(p.Path, path+"/"); ok {
				out = append(out, Problem{Path: rest, Message: p.Message})
			}
		}
		return out
	}
	return Notes{Ignored: pick(n.Ignored), Unsupported: pick(n.Unsupported)}
}

func (p *parser) ignore(path, format string, args ...any) {
	p.notes.Ignored = append(p.notes.Ignored, Problem{Path: pathOrRoot(path), Message: fmt.Sprintf(format, args...)})
}

// unsupported records that the feature at path is not run by yt-flow yet.
func (p *parser) unsupported(path, format string, args ...any) {
	p.notes.Unsupported = append(p.notes.Unsupported, Problem{Path: pathOrRoot(path), Message: fmt.Sprintf(format, args...) + " is not supported by yt-flow yet"})
}

func pathOrRoot(path string) string {
	if path == "" {
		return "/"
	}
	return path
}

// singletonKeys are the process-wide singleton settings of YTsaurus's C++ programs that a
// Flow runner config (and node config) may carry at its top level. They configure Flow's
// processes (address resolution, RPC and bus threads, tracing, allocator); yt-flow's
// processes do not read them.
var singletonKeys = []string{
	"address_resolver", "bus", "chunk_client_dispatcher", "enable_ref_counted_tracker_profiling",
	"enable_resource_tracker", "fiber_manager", "grpc_dispatcher", "heap_profiler", "io_dispatcher",
	"jaeger", "native_authentication_manager", "protobuf_interop", "resource_tracker",
	"rpc_dispatcher", "solomon_exporter", "spin_lock_slow_path_logging_threshold", "stockpile",
	"tcmalloc", "tcp_dispatcher", "tracing_transport", "yp_service_discovery",
}

// nodeConfigKeys are the keys of Flow's TFlowNodeConfig besides the singletons: what
// vanilla.node_config may patch.
var nodeConfigKeys = []string{
	"abort_on_unrecognized_options", "authenticator", "bus_server", "clients_cache", "cluster_url",
	"companion", "controller", "core_dumper", "enable_phdr_cache", "http_client_config",
	"http_poller_threads", "https_client_config", "ignore_singletons_dynamic_config", "logging",
	"monitoring_port", "path", "proxy_role", "rpc_port", "rpc_server", "solomon_proxy", "tvm", "worker",
}

// runnableResourceClasses are the resource classes a connector of yt-flow reads: the Kafka
// source and sinks take their client from the static resource KafkaClient
// (connectors/kafka.ResolveClient).
var runnableResourceClasses = map[string]bool{
	"NYT::NFlow::TKafkaClient": true,
	"TKafkaClient":             true,
}

// companionManagerClasses are Flow's resources that start a companion process (Go, Python,
// Java functions out of process). yt-flow runs Go functions in the worker process and needs
// none: the resources are accepted and ignored.
var companionManagerClasses = map[string]bool{
	"NYT::NFlow::NCompanion::TCompanionManager":     true,
	"NCompanion::TCompanionManager":                 true,
	"NYT::NFlow::NCompanion::TJavaCompanionManager": true,
	"NCompanion::TJavaCompanionManager":             true,
}

// defaultMigrationFunction is the migration_function Flow uses when a stream names none:
// messages keep their columns. yt-flow does the same.
const defaultMigrationFunction = "NYT::NFlow::DefaultMigrationFunction"

// UnregisteredFunctions returns a problem for every computation of the config's spec whose
// processing function registered does not know, at spec/computations/<id>/processing_function.
// Passthrough computations have none. `yt-flow validate` prints these as warnings; start and
// run refuse to run such a pipeline in a binary that lacks the functions.
func (c *Config) UnregisteredFunctions(registered func(name string) bool) []Problem {
	if c == nil || c.Spec == nil {
		return nil
	}
	return c.Spec.unregisteredFunctions("spec", registered)
}

// UnregisteredFunctions is Config.UnregisteredFunctions for a static spec on its own (paths
// start at computations/).
func (pl *Pipeline) UnregisteredFunctions(registered func(name string) bool) []Problem {
	return pl.unregisteredFunctions("", registered)
}

func (pl *Pipeline) unregisteredFunctions(prefix string, registered func(name string) bool) []Problem {
	var out []Problem
	for _, id := range sortedKeys(pl.Computations) {
		c := pl.Computations[id]
		if c.Passthrough || c.ProcessingFunction == "" || registered(c.ProcessingFunction) {
			continue
		}
		msg := fmt.Sprintf("processing function %q is not registered in this program", c.ProcessingFunction)
		if c.Companion && c.ProcessingFunctionDerived {
			msg += " (a companion computation without processing_function runs the function registered under its id)"
		}
		out = append(out, Problem{Path: yson.Join(prefix, "computations/"+id+"/processing_function"), Message: msg})
	}
	return out
}

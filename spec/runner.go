// The runner config (pipeline.yson): its top-level keys, the vanilla section and process settings.

package spec

import (
	"math"
	"strings"

	"github.com/ytflow/yt-flow/yson"
)

func (p *parser) config(root *yson.Node) *Config {
	f := p.w.Fields(root, "")
	cfg := &Config{}
	cfg.Path = f.RequiredString("path")
	p.cypressPath(cfg.Path, "path")
	cfg.Proxy = f.String("proxy", "")
	cfg.ClusterURL = f.String("cluster_url", "")
	cfg.ProxyRole = f.String("proxy_role", "")
	if m := f.AnyMap("clusters"); m != nil {
		cfg.Clusters = map[string]string{}
		for name, v := range m {
			proxy, ok := v.(string)
			if !ok || proxy == "" || name == "" {
				p.errorf(f.Path("clusters")+"/"+name, "want a cluster name mapped to a proxy (a non-empty string)")
				continue
			}
			cfg.Clusters[name] = proxy
		}
	}
	if n := f.Required("spec"); n != nil {
		cfg.Spec = p.pipeline(n, "spec")
	}
	cfg.Dynamic = p.dynamic(f.Node("dynamic_spec"), "dynamic_spec")
	cfg.AbortOnUnrecognizedOptions = f.Bool("abort_on_unrecognized_options", false)
	cfg.AbortOnSpecsParseabilityError = f.Bool("abort_on_specs_parseability_error", false)
	for _, k := range []string{"abort_on_unrecognized_options", "abort_on_specs_parseability_error"} {
		if f.Has(k) {
			p.ignore(k, "yt-flow is always strict: unknown keys and unparseable specs are errors")
		}
	}
	cfg.SetFlowCoreTarget = f.Bool("set_flow_core_target", true)
	if n := f.Node("set_flow_core_target"); n != nil && n.Kind == yson.KindBool {
		p.ignore("set_flow_core_target", "read only by `yt-flow deploy`: %%true (the default) sets the pipeline's flow core target to the deployed binary's version, %%false leaves it as it is")
	}
	if n := f.Node("vanilla"); n != nil {
		cfg.Vanilla = p.vanilla(n, "vanilla")
		p.ignore("vanilla", "read only by `yt-flow deploy` (task counts, cache_path, max_failed_job_count, pool, title, resources, port_count, environment); start and run ignore it")
	}
	if n := f.Node("direct_controller_commands"); n != nil {
		dc := p.w.Fields(n, "direct_controller_commands")
		dc.Bool("enabled", false)
		dc.Duration("rpc_timeout", 0)
		dc.Close()
		cfg.DirectControllerCommands, _ = n.Any().(map[string]any)
		p.ignore("direct_controller_commands", "yt-flow commands go through the pipeline's Cypress node, not to the controller by RPC")
	}
	cfg.Logging = f.AnyMap("logging")
	if cfg.Logging != nil {
		p.ignore("logging", "yt-flow's processes log as their --log flag and config say")
	}
	cfg.ClientsCache = f.AnyMap("clients_cache")
	if cfg.ClientsCache != nil {
		p.ignore("clients_cache", "yt-flow's processes open one client to the proxy they are given")
	}
	p.singletons(f)
	f.Close()
	if cfg.Spec != nil && cfg.Dynamic != nil {
		p.crossDynamic(cfg.Spec, cfg.Dynamic, "dynamic_spec")
	}
	return cfg
}

// singletons accepts the process singleton settings of Flow's runner (address_resolver …)
// at the top level of a runner config and notes each as ignored.
func (p *parser) singletons(f *yson.Fields) {
	f.Skip(singletonKeys...) // known also when absent, for did-you-mean suggestions
	for _, k := range singletonKeys {
		if f.Has(k) {
			p.ignore(f.Path(k), "configures a process singleton of Flow's runner; yt-flow's processes do not read it")
		}
	}
}

// optString consumes an optional string key of f that may also be # (absent).
func optString(p *parser, f *yson.Fields, key string) string {
	n := f.Node(key)
	if n == nil || n.Kind == yson.KindEntity && n.Attrs == nil {
		return ""
	}
	v, _ := p.w.String(n, f.Path(key))
	return v
}

func (p *parser) cypressPath(s, path string) {
	if s != "" && !strings.HasPrefix(s, "//") {
		p.errorf(path, "%q is not an absolute Cypress path (want //…)", s)
	}
}

// vanilla checks the keys of Flow's vanilla-operation block, which yt-flow accepts but does
// not act on. Optional strings may be # (an entity), which Flow reads as absent; node_config
// may name the keys of Flow's node config (TFlowNodeConfig and the process singletons), whose
// values are not checked.
func (p *parser) vanilla(n *yson.Node, path string) map[string]any {
	f := p.w.Fields(n, path)
	if f.Bool("enable", false) {
		f.RequiredString("pool")
		f.Required("worker")
	} else {
		f.String("pool", "")
	}
	for _, task := range []string{"worker", "controller"} {
		if tn := f.Node(task); tn != nil {
			tf := p.w.Fields(tn, f.Path(task))
			if task == "worker" {
				tf.Required("count")
			}
			tf.Int("count", 0, 0, math.MaxInt32)
			tf.Size("memory_limit", 0)
			tf.Float("cpu_limit", 0)
			tf.Int("port_count", 0, 0, math.MaxInt32)
			tf.AnyMap("local_files")
			tf.AnyMap("cypress_files")
			tf.Strings("layers", false)
			optString(p, tf, "system_layer_path")
			optString(p, tf, "docker_image")
			tf.AnyMap("environment")
			tf.Close()
		}
	}
	for _, k := range []string{"runtime_cluster", "runtime_proxy_role", "cache_path", "solomon_resolver_tag", "alias", "title", "network_project"} {
		optString(p, f, k)
	}
	f.Int("max_failed_job_count", 0, 0, math.MaxInt64)
	f.Duration("wait_timeout", 0)
	f.AnyMap("proxy_url_aliasing_rules")
	if nn := f.Node("node_config"); nn != nil {
		nf := p.w.Fields(nn, f.Path("node_config"))
		nf.Skip(nodeConfigKeys...)
		nf.Skip(singletonKeys...)
		nf.Close()
	}
	f.Skip("secret_env")
	f.Close()
	m, _ := n.Any().(map[string]any)
	return m
}

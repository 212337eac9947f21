// Package clickhouse is the ClickHouse sinks. TClickHouseBatchingSink (exactly-once) inserts
// committed outputs of the output store in batches cut deterministically at message-id
// boundaries, each with insert_deduplication_token = its maximum message id, strictly in
// order, into a table whose engine deduplicates blocks; TShardedClickHouseBatchingSink does
// the same over several shards (rendezvous hashing, the token suffixed with ":<shard>").
// TAtLeastOnceClickHouseSink inserts an epoch's messages before the epoch commits, without a
// token; TAtMostOnceClickHouseSink sends one INSERT per message and never retries one that
// started. Each sink instance opens its session (a clickhouse-go native client) lazily on its
// first write and validates the target table then: the engine from system.tables, the
// columns from system.columns against the sink's input stream schemas.
package clickhouse

import (
	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// Canonical class names.
const (
	Class            = "clickhouse_batching"
	AtLeastOnceClass = "clickhouse_at_least_once"
	AtMostOnceClass  = "clickhouse_at_most_once"
)

// Host selection policies (host_selection_policy).
const (
	OrderedRoundRobin = "ordered_round_robin" // try the hosts in the order given
	RandomStart       = "random_start"        // start at a random host
)

// Params are the static parameters of the ClickHouse sinks (flow-docs §4.7).
type Params struct {
	// Hosts are the servers of the one shard, "host" or "host:port" (host, or hosts; the
	// port defaults to Port).
	Hosts []string
	// Port is the native protocol port of hosts given without one (port, default 9000).
	Port int64
	// HostSelectionPolicy is OrderedRoundRobin (the default) or RandomStart.
	HostSelectionPolicy string
	// ShardingKeyColumns are payload columns (sharding_key_columns; the sharded class's).
	ShardingKeyColumns []string
	// User (default "default"), PasswordEnvVar names the environment variable holding the
	// password (default "": no password); the password is read when a session opens and
	// never appears in logs or errors.
	User, PasswordEnvVar string
	// Database (default "default") and Table (required) name the target table.
	Database, Table string
	// Codec is the native protocol's block compression: lz4 (the default), lz4hc, zstd or
	// none.
	Codec string
	// EnableTLS turns TLS on; TLSCAFiles and TLSCADirectory add trusted CA certificates (PEM);
	// TLSSkipVerification skips the server certificate check.
	EnableTLS           bool
	TLSCAFiles          []string
	TLSCADirectory      string
	TLSSkipVerification bool

	// Inputs are the sink's input streams, recorded by the spec's validation (validate): the
	// session maps their columns onto the table's.
	Inputs []registry.Input
}

func init() {
	registry.Register(registry.Class{
		Name: Class, Role: registry.Sink, FlowNames: []string{"NYT::NFlow::TClickHouseBatchingSink"}, Aliases: []string{"clickhouse"},
		Guarantee: registry.ExactlyOnce, Kind: registry.AsyncSink, Runs: true,
		AtMostOnceRefusal: "TClickHouseBatchingSink is exactly-once; at_most_once_strategy belongs to TAtMostOnceClickHouseSink",
		Summary:           "inserts committed outputs in deterministic batches with insert_deduplication_token",
		Parse:             parse,
		ParseDynamic:      parseDynamic,
		Validate:          validate,
		Columns:           columns,
	})
	connector.RegisterSink(Class, connector.Constructors{
		AsyncSink: func(env connector.Env, params any) (connector.AsyncSink, error) {
			dyn, _ := env.Dynamic.(*Dynamic)
			return newBatching(newTarget(Class, env.SinkID, params.(*Params), dyn, nil)), nil
		},
	})
	registry.Register(registry.Class{
		Name: AtLeastOnceClass, Role: registry.Sink, FlowNames: []string{"NYT::NFlow::TAtLeastOnceClickHouseSink"},
		Guarantee: registry.AtLeastOnce, Kind: registry.AtLeastOnceSyncSink, Runs: true,
		Summary:      "inserts an epoch's messages before the epoch commits, without a token",
		Parse:        parse,
		ParseDynamic: parseDynamic,
		Validate:     validate,
		Columns:      columns,
	})
	connector.RegisterSink(AtLeastOnceClass, connector.Constructors{
		AtLeastOnceSyncSink: func(env connector.Env, params any) (connector.AtLeastOnceSyncSink, error) {
			dyn, _ := env.Dynamic.(*Dynamic)
			return newAtLeastOnce(newTarget(AtLeastOnceClass, env.SinkID, params.(*Params), dyn, nil)), nil
		},
	})
}

func init() {
	registry.Register(registry.Class{
		Name: AtMostOnceClass, Role: registry.Sink, FlowNames: []string{"NYT::NFlow::TAtMostOnceClickHouseSink"},
		Guarantee: registry.AtMostOnce, Kind: registry.AsyncSink, AtMostOnce: true, Runs: true,
		Summary:      "inserts each committed output once, acknowledging a failed insert instead of retrying it",
		Parse:        parse,
		ParseDynamic: parseDynamic,
		Validate:     validate,
		Columns:      columns,
	})
	connector.RegisterSink(AtMostOnceClass, connector.Constructors{
		AsyncSink: func(env connector.Env, params any) (connector.AsyncSink, error) {
			dyn, _ := env.Dynamic.(*Dynamic)
			return newAtMostOnce(newTarget(AtMostOnceClass, env.SinkID, params.(*Params), dyn, nil)), nil
		},
		BestEffort: func(env connector.Env, params any) (connector.BestEffortWriter, error) {
			dyn, _ := env.Dynamic.(*Dynamic)
			return newAtMostOnce(newTarget(AtMostOnceClass, env.SinkID, params.(*Params), dyn, nil)), nil
		},
	})
}

func columns(params any) map[string][]string {
	return map[string][]string{"sharding_key_columns": params.(*Params).ShardingKeyColumns}
}

func parse(f *yson.Fields) any {
	c := &Params{}
	parseHosts(f, c)
	parseCommon(f, c)
	return c
}

// parseHosts reads host or hosts.
func parseHosts(f *yson.Fields, c *Params) {
	host := f.String("host", "")
	c.Hosts = f.Strings("hosts", true)
	switch {
	case f.Has("host") && f.Has("hosts"):
		f.Errorf("hosts", "set either host or hosts, not both")
	case f.Has("host"):
		if host == "" {
			f.Errorf("host", "must not be empty")
		}
		c.Hosts = []string{host}
	case !f.Has("hosts"):
		f.Errorf("host", "required (or hosts)")
	case len(c.Hosts) == 0:
		f.Errorf("hosts", "must list at least one host")
	}
	for i, h := range c.Hosts {
		if h == "" {
			f.Errorf("hosts", "host %d is empty", i)
		}
	}
}

// parseCommon reads the parameters every ClickHouse class has.
func parseCommon(f *yson.Fields, c *Params) {
	c.Port = f.Int("port", 9000, 1, 65535)
	c.HostSelectionPolicy = f.Enum("host_selection_policy", OrderedRoundRobin, OrderedRoundRobin, RandomStart)
	c.ShardingKeyColumns = f.Strings("sharding_key_columns", true)
	c.User = f.String("user", "default")
	c.PasswordEnvVar = f.String("password_env_var", "")
	c.Database = f.String("database", "default")
	if c.Database == "" {
		f.Errorf("database", "must not be empty")
	}
	c.Table = f.RequiredString("table")
	c.Codec = f.Enum("codec", "lz4", "lz4", "lz4hc", "zstd", "none")
	c.EnableTLS = f.Bool("enable_tls", false)
	c.TLSCAFiles = f.Strings("tls_ca_files", false)
	c.TLSCADirectory = f.String("tls_ca_directory", "")
	c.TLSSkipVerification = f.Bool("tls_skip_verification", false)
	if !c.EnableTLS {
		for _, k := range []string{"tls_ca_files", "tls_ca_directory", "tls_skip_verification"} {
			if f.Has(k) {
				f.Errorf(k, "applies only with enable_tls = %%true")
			}
		}
	}
}

// validate records the input streams in the parameters, for the session's column mapping,
// and checks that each column's type has a ClickHouse counterpart.
func validate(params any, inputs []registry.Input, report func(key, format string, args ...any)) {
	p := params.(*Params)
	p.Inputs = inputs
	for _, in := range inputs {
		for _, c := range in.Schema.Columns {
			if _, ok := streamKinds[c.Type]; !ok {
				report("table", "stream %q column %q has type %s, which the ClickHouse sinks do not write", in.ID, c.Name, c.Type)
			}
		}
	}
}

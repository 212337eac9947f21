// Package clickhouse is the ClickHouse sink (TClickHouseBatchingSink): committed outputs are
// inserted in batches cut at message-id boundaries, each with an insert_deduplication_token.
// The spec accepts and validates it; the runtime does not run it yet.
package clickhouse

import (
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// Class is the canonical name of the ClickHouse batching sink.
const Class = "clickhouse_batching"

// Params are the parameters of TClickHouseBatchingSink.
type Params struct {
	Host               string
	Port               int64 // default 9000
	Hosts              []string
	Table              string // required
	Database           string // default "default"
	User               string // default "default"
	PasswordEnvVar     string
	ShardingKeyColumns []string
	Codec              string // default "lz4"
	EnableTLS          bool
}

func init() {
	registry.Register(registry.Class{
		Name: Class, Role: registry.Sink, FlowNames: []string{"NYT::NFlow::TClickHouseBatchingSink"}, Aliases: []string{"clickhouse"},
		Guarantee: registry.ExactlyOnce, Kind: registry.AsyncSink, AtMostOnce: true,
		Summary: "inserts committed outputs in deterministic batches with insert_deduplication_token",
		Parse:   parse,
		Columns: func(params any) map[string][]string {
			return map[string][]string{"sharding_key_columns": params.(*Params).ShardingKeyColumns}
		},
	})
}

func parse(f *yson.Fields) any {
	c := &Params{}
	c.Host = f.String("host", "")
	c.Hosts = f.Strings("hosts", true)
	switch {
	case f.Has("host") && f.Has("hosts"):
		f.Errorf("hosts", "set either host or hosts, not both")
	case !f.Has("host") && !f.Has("hosts"):
		f.Errorf("host", "required (or hosts)")
	}
	c.Port = f.Int("port", 9000, 1, 65535)
	f.Enum("host_selection_policy", "ordered_round_robin", "ordered_round_robin", "random_start")
	c.ShardingKeyColumns = f.Strings("sharding_key_columns", true)
	c.User = f.String("user", "default")
	c.PasswordEnvVar = f.String("password_env_var", "")
	c.Database = f.String("database", "default")
	c.Table = f.RequiredString("table")
	c.Codec = f.String("codec", "lz4")
	c.EnableTLS = f.Bool("enable_tls", false)
	f.Strings("tls_ca_files", false)
	f.String("tls_ca_directory", "")
	f.Bool("tls_skip_verification", false)
	return c
}

package clickhouse

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/yson"
)

// parsed parses a parameters map with parser as the spec does (then Close for unknown keys)
// and returns the problems as "path: message".
func parsed(t *testing.T, text string, parser func(f *yson.Fields) any) (any, []string) {
	t.Helper()
	n, err := yson.Decode([]byte(text))
	require.NoError(t, err)
	var w yson.Walker
	f := w.Fields(n, "parameters")
	out := parser(f)
	f.Close()
	var problems []string
	for _, p := range w.Problems() {
		problems = append(problems, p.String())
	}
	return out, problems
}

// TestParseStatic: every static parameter of §4.7 with its default; conflicts and bad values
// are reported with their YSON paths.
func TestParseStatic(t *testing.T) {
	p, problems := parsed(t, `{host = "ch1"; table = "events"}`, parse)
	assert.Empty(t, problems)
	assert.Equal(t, &Params{
		Hosts: []string{"ch1"}, Port: 9000, HostSelectionPolicy: OrderedRoundRobin, User: "default",
		Database: "default", Table: "events", Codec: "lz4",
	}, p)

	p, problems = parsed(t, `{hosts = ["a:9440"; "b"]; port = 9440; host_selection_policy = random_start; user = "writer";
		password_env_var = "CH_PASSWORD"; database = "db"; table = "t"; codec = zstd; enable_tls = %true;
		tls_ca_files = ["/ca.pem"]; tls_ca_directory = "/cas"; tls_skip_verification = %false; sharding_key_columns = ["k"]}`, parse)
	assert.Empty(t, problems)
	assert.Equal(t, &Params{
		Hosts: []string{"a:9440", "b"}, Port: 9440, HostSelectionPolicy: RandomStart, User: "writer", PasswordEnvVar: "CH_PASSWORD",
		Database: "db", Table: "t", Codec: "zstd", EnableTLS: true, TLSCAFiles: []string{"/ca.pem"}, TLSCADirectory: "/cas",
		ShardingKeyColumns: []string{"k"},
	}, p)

	_, problems = parsed(t, `{host = "a"; hosts = ["b"]; port = 0; host_selection_policy = "round"; codec = "gzip";
		tls_skip_verification = %true; database = ""; password = "secret"}`, parse)
	assert.Equal(t, []string{
		"parameters/codec: \"gzip\" is not one of [\"lz4\" \"lz4hc\" \"zstd\" \"none\"]",
		"parameters/database: must not be empty",
		"parameters/host_selection_policy: \"round\" is not one of [\"ordered_round_robin\" \"random_start\"]",
		"parameters/hosts: set either host or hosts, not both",
		"parameters/password: unknown key",
		"parameters/port: 0 is out of range [1, 65535]",
		"parameters/table: required",
		"parameters/tls_skip_verification: applies only with enable_tls = %true",
	}, problems)

	_, problems = parsed(t, `{hosts = []; table = "t"}`, parse)
	assert.Equal(t, []string{"parameters/hosts: must list at least one host"}, problems)
}

// TestParseDynamic: every dynamic parameter of §4.7 with its default and its limits.
func TestParseDynamic(t *testing.T) {
	dyn := func(f *yson.Fields) any { return parseDynamic(f, &Params{}) }
	d, problems := parsed(t, `{}`, dyn)
	assert.Empty(t, problems)
	assert.Equal(t, &Dynamic{
		WriteTimeout: time.Minute, RetryBackoff: time.Second, MaxInsertAttempts: 10, ReplayHorizon: 24 * time.Hour,
		MaxRowsPerBatch: 1000, MaxBytesPerBatch: 5 << 20,
	}, d)

	d, problems = parsed(t, `{write_timeout = "5s"; retry_backoff = "100ms"; max_insert_attempts = 3; async_insert = %true;
		replay_horizon = "2h"; max_rows_per_batch = 2000; max_bytes_per_batch = 10485760}`, dyn)
	assert.Empty(t, problems)
	assert.Equal(t, &Dynamic{
		WriteTimeout: 5 * time.Second, RetryBackoff: 100 * time.Millisecond, MaxInsertAttempts: 3, AsyncInsert: true,
		ReplayHorizon: 2 * time.Hour, MaxRowsPerBatch: 2000, MaxBytesPerBatch: 10 << 20,
	}, d)

	_, problems = parsed(t, `{write_timeout = 0; retry_backoff = -5; max_insert_attempts = 0; replay_horizon = 0;
		max_rows_per_batch = 2001; max_bytes_per_batch = 10485761; batch = 1}`, dyn)
	assert.Equal(t, []string{
		"parameters/batch: unknown key",
		"parameters/max_bytes_per_batch: 10485761 is out of range [1, 10 MiB]",
		"parameters/max_insert_attempts: 0 is out of range [1, 1000]",
		"parameters/max_rows_per_batch: 2001 is out of range [1, 2000]",
		"parameters/replay_horizon: must be positive, got 0s",
		"parameters/retry_backoff: duration -5: bad value: negative",
		"parameters/write_timeout: must be positive, got 0s",
	}, problems)
}

package kafka

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sdkyson "go.ytsaurus.tech/yt/go/yson"
)

// TestKafkaParseClient: the KafkaClient resource is parsed strictly; extra_config accepts only keys
// with a franz-go equivalent and refuses the keys the connector owns; the password is named,
// never given.
func TestKafkaParseClient(t *testing.T) {
	for _, tc := range []struct {
		name    string
		params  map[string]any
		wantErr string
	}{
		{name: "minimal", params: map[string]any{"bootstrap_servers": "a:9092, b:9092"}},
		{name: "sasl", params: map[string]any{"bootstrap_servers": "a:1", "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
			"sasl_username": "u", "sasl_password_env": "PW", "extra_config": map[string]any{"linger.ms": "5", "compression.type": "zstd"}}},
		{name: "no servers", params: map[string]any{}, wantErr: "bootstrap_servers"},
		{name: "bad protocol", params: map[string]any{"bootstrap_servers": "a:1", "security_protocol": "TLS"}, wantErr: "security_protocol"},
		{name: "sasl without mechanism", params: map[string]any{"bootstrap_servers": "a:1", "security_protocol": "SASL_PLAINTEXT", "sasl_username": "u"}, wantErr: "sasl_mechanism"},
		{name: "oauth", params: map[string]any{"bootstrap_servers": "a:1", "security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER", "sasl_username": "u"}, wantErr: "sasl_mechanism"},
		{name: "reserved key", params: map[string]any{"bootstrap_servers": "a:1", "extra_config": map[string]any{"enable.idempotence": "false"}}, wantErr: "managed by the connector"},
		{name: "unmapped key", params: map[string]any{"bootstrap_servers": "a:1", "extra_config": map[string]any{"queue.buffering.max.kbytes": "10"}}, wantErr: "no franz-go equivalent"},
		{name: "bad value", params: map[string]any{"bootstrap_servers": "a:1", "extra_config": map[string]any{"linger.ms": "soon"}}, wantErr: "extra_config/linger.ms"},
		{name: "unknown key", params: map[string]any{"bootstrap_servers": "a:1", "sasl_password": "secret"}, wantErr: "sasl_password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseClientMap(tc.params, "resources/KafkaClient/parameters")
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.NotContains(t, err.Error(), "secret")
				return
			}
			require.NoError(t, err)
			require.NotEmpty(t, c.Brokers())
		})
	}
}

// TestKafkaClientFromSpec: the connection comes from the static resource KafkaClient of the pipeline
// spec; the SASL password comes from the environment when the client is built, and an unset
// variable is an error that names the variable, not a value.
func TestKafkaClientFromSpec(t *testing.T) {
	spec := map[string]any{"resources": map[string]any{ClientResourceID: map[string]any{
		"resource_class_name": "NYT::NFlow::TKafkaClient",
		"parameters": map[string]any{"bootstrap_servers": "k1:9092,k2:9092", "security_protocol": "SASL_PLAINTEXT",
			"sasl_mechanism": "PLAIN", "sasl_username": "flow", "sasl_password_env": "YTFLOW_TEST_KAFKA_PW"},
	}}}
	b, err := sdkyson.Marshal(spec)
	require.NoError(t, err)
	c, err := ClientFromSpec(b)
	require.NoError(t, err)
	require.Equal(t, []string{"k1:9092", "k2:9092"}, c.Brokers())

	t.Setenv("YTFLOW_TEST_KAFKA_PW", "")
	_, err = c.Options()
	require.ErrorContains(t, err, "YTFLOW_TEST_KAFKA_PW")
	t.Setenv("YTFLOW_TEST_KAFKA_PW", "hunter2")
	opts, err := c.Options()
	require.NoError(t, err)
	require.NotEmpty(t, opts)

	_, err = ClientFromSpec([]byte("{computations = {}}"))
	require.ErrorContains(t, err, "no resource KafkaClient")
	spec["resources"].(map[string]any)[ClientResourceID].(map[string]any)["resource_class_name"] = "TQueueClient"
	b, _ = sdkyson.Marshal(spec)
	_, err = ClientFromSpec(b)
	require.True(t, err != nil && strings.Contains(err.Error(), "resource_class_name"), "%v", err)
}

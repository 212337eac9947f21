package kafka

import (
	"strings"
	"testing"
)

// FuzzClientFromSpec: the KafkaClient resource parser never panics on any spec bytes, and a
// parsed connection has brokers and a known security protocol.
func FuzzClientFromSpec(f *testing.F) {
	for _, s := range []string{
		`{resources = {KafkaClient = {resource_class_name = "NYT::NFlow::TKafkaClient"; parameters = {bootstrap_servers = "a:1,b:2"}}}}`,
		`{resources = {KafkaClient = {resource_class_name = "TKafkaClient"; parameters = {bootstrap_servers = "a:1"; security_protocol = "SASL_SSL"; sasl_mechanism = "PLAIN"; sasl_username = "u"; extra_config = {"linger.ms" = "5"; "acks" = "all"}}}}}`,
		`{resources = {KafkaClient = {resource_class_name = "TKafkaClient"; parameters = {bootstrap_servers = ","; extra_config = {"group.id" = "x"}}}}}`,
		`{resources = {}}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ClientFromSpec(data)
		if err != nil {
			if c != nil {
				t.Fatal("a config together with an error")
			}
			return
		}
		if len(c.Brokers()) == 0 {
			t.Fatalf("parsed without brokers: %+v", c)
		}
		if !strings.Contains("PLAINTEXT SSL SASL_PLAINTEXT SASL_SSL", c.SecurityProtocol) {
			t.Fatalf("unknown security protocol %q", c.SecurityProtocol)
		}
	})
}

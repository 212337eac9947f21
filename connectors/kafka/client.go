package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/connectors/connector"
	"github.com/ytflow/yt-flow/yson"
)

// Resource names of the Kafka client. Flow's Kafka classes take their connection from the
// static resource with id ClientResourceID ("KafkaClient") of class TKafkaClient; their own
// parameters name only the topic.
const (
	ClientResourceID    = "KafkaClient"
	ClientResourceClass = "NYT::NFlow::TKafkaClient"
	// DefaultPasswordEnv is the environment variable holding the SASL password when
	// sasl_password_env is not set.
	DefaultPasswordEnv = "KAFKA_SASL_PASSWORD"
)

// ClientConfig is the connection of the Kafka classes: the parameters of the resource
// TKafkaClient. The zero value of a field is Flow's default.
type ClientConfig struct {
	// BootstrapServers is the comma-separated broker list (required).
	BootstrapServers string
	// SecurityProtocol is PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL.
	SecurityProtocol string
	// SASLMechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; required with SASL_*.
	SASLMechanism string
	SASLUsername  string
	// SASLPasswordEnv names the environment variable the password is read from when a client
	// is built (default KAFKA_SASL_PASSWORD). The password itself is never part of the config,
	// an error or a log line.
	SASLPasswordEnv string
	// SSLCALocation is a PEM file of CA certificates (SSL, SASL_SSL); empty: the system roots.
	SSLCALocation string
	// ExtraConfig holds librdkafka keys; only those with a franz-go equivalent (extraOptions)
	// are accepted.
	ExtraConfig map[string]string
}

// Brokers returns the bootstrap servers as a list.
func (c *ClientConfig) Brokers() []string {
	var out []string
	for _, s := range strings.Split(c.BootstrapServers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// reservedKeys are librdkafka keys the connector owns (Flow rejects them in extra_config too):
// first-class parameters and what the connector's correctness depends on.
var reservedKeys = []string{
	"bootstrap.servers", "metadata.broker.list", "security.protocol", "sasl.mechanism", "sasl.mechanisms",
	"sasl.username", "sasl.password", "ssl.ca.location", "group.id", "enable.auto.commit", "auto.offset.reset",
	"enable.idempotence", "client.id", "delivery.report.only.error", "queued.max.messages.kbytes",
	"allow.auto.create.topics", "isolation.level", "transactional.id", "transaction.timeout.ms",
}

// extraOptions maps the librdkafka keys of extra_config that have a franz-go equivalent.
var extraOptions = map[string]func(v string) (kgo.Opt, error){
	"socket.connection.setup.timeout.ms": millis(kgo.DialTimeout),
	"metadata.max.age.ms":                millis(kgo.MetadataMaxAge),
	"topic.metadata.refresh.interval.ms": millis(kgo.MetadataMaxAge),
	"fetch.wait.max.ms":                  millis(kgo.FetchMaxWait),
	"fetch.min.bytes":                    int32Opt(kgo.FetchMinBytes),
	"fetch.max.bytes":                    int32Opt(kgo.FetchMaxBytes),
	"max.partition.fetch.bytes":          int32Opt(kgo.FetchMaxPartitionBytes),
	"fetch.message.max.bytes":            int32Opt(kgo.FetchMaxPartitionBytes),
	"message.max.bytes":                  int32Opt(kgo.ProducerBatchMaxBytes),
	"linger.ms":                          millis(kgo.ProducerLinger),
	"queue.buffering.max.ms":             millis(kgo.ProducerLinger),
	"request.timeout.ms":                 millis(kgo.ProduceRequestTimeout),
	"request.required.acks": func(v string) (kgo.Opt, error) {
		if v != "all" && v != "-1" {
			return nil, fmt.Errorf("only all (-1) is accepted: the idempotent and transactional producers need it")
		}
		return kgo.RequiredAcks(kgo.AllISRAcks()), nil
	},
	"acks": func(v string) (kgo.Opt, error) {
		if v != "all" && v != "-1" {
			return nil, fmt.Errorf("only all (-1) is accepted: the idempotent and transactional producers need it")
		}
		return kgo.RequiredAcks(kgo.AllISRAcks()), nil
	},
	"compression.type":  compression,
	"compression.codec": compression,
}

func millis[O kgo.Opt](opt func(time.Duration) O) func(string) (kgo.Opt, error) {
	return func(v string) (kgo.Opt, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("want a positive number of milliseconds, got %q", v)
		}
		return opt(time.Duration(n) * time.Millisecond), nil
	}
}

func int32Opt[O kgo.Opt](opt func(int32) O) func(string) (kgo.Opt, error) {
	return func(v string) (kgo.Opt, error) {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("want a positive 32-bit integer, got %q", v)
		}
		return opt(int32(n)), nil
	}
}

func compression(v string) (kgo.Opt, error) {
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	c, ok := codecs[v]
	if !ok {
		return nil, fmt.Errorf("want none, gzip, snappy, lz4 or zstd, got %q", v)
	}
	return kgo.ProducerBatchCompression(c), nil
}

// ParseClient reads the parameters of a TKafkaClient resource strictly: every problem goes to
// f (and names its YSON path).
func ParseClient(f *yson.Fields) *ClientConfig {
	c := &ClientConfig{}
	c.BootstrapServers = f.RequiredString("bootstrap_servers")
	if f.Has("bootstrap_servers") && len(c.Brokers()) == 0 {
		f.Errorf("bootstrap_servers", "no broker address")
	}
	c.SecurityProtocol = strings.ToUpper(f.String("security_protocol", "PLAINTEXT"))
	if !slices.Contains([]string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}, c.SecurityProtocol) {
		f.Errorf("security_protocol", "want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, got %q", c.SecurityProtocol)
	}
	c.SASLMechanism = strings.ToUpper(f.String("sasl_mechanism", ""))
	c.SASLUsername = f.String("sasl_username", "")
	c.SASLPasswordEnv = f.String("sasl_password_env", DefaultPasswordEnv)
	c.SSLCALocation = f.String("ssl_ca_location", "")
	sasl := strings.HasPrefix(c.SecurityProtocol, "SASL_")
	switch {
	case sasl && !slices.Contains([]string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, c.SASLMechanism):
		f.Errorf("sasl_mechanism", "want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 with %s, got %q", c.SecurityProtocol, c.SASLMechanism)
	case !sasl && c.SASLMechanism != "":
		f.Errorf("sasl_mechanism", "is set, but security_protocol %s does not use SASL", c.SecurityProtocol)
	}
	if sasl && c.SASLUsername == "" {
		f.Errorf("sasl_username", "is required with %s", c.SecurityProtocol)
	}
	if extra := f.Node("extra_config"); extra != nil {
		c.ExtraConfig = map[string]string{}
		w, path := f.Walker(), f.Path("extra_config")
		w.Each(extra, path, func(key string, v *yson.Node, kp string) {
			s, ok := w.String(v, kp)
			if !ok {
				return
			}
			switch conv, known := extraOptions[key]; {
			case slices.Contains(reservedKeys, key):
				w.Errorf(kp, "%q is managed by the connector and cannot be overridden", key)
			case !known:
				w.Errorf(kp, "%q has no franz-go equivalent in this build (accepted: %s)", key, strings.Join(extraKeys(), ", "))
			default:
				if _, err := conv(s); err != nil {
					w.Errorf(kp, "%v", err)
				}
			}
			c.ExtraConfig[key] = s
		})
	}
	return c
}

func extraKeys() []string {
	keys := make([]string, 0, len(extraOptions))
	for k := range extraOptions {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// errNoClient: the pipeline spec has no KafkaClient resource.
var errNoClient = errors.New("the pipeline spec has no resource " + ClientResourceID + " (resource_class_name = " + ClientResourceClass + ")")

// ResolveClient reads the KafkaClient resource from the pipeline's stored static spec (the
// @spec of env.Store's pipeline). Flow hands a source or sink its static resource by id; the
// SPI has no resources in connector.Env yet, so the connector reads the spec it runs under.
func ResolveClient(ctx context.Context, env connector.Env) (*ClientConfig, error) {
	if env.Store == nil {
		return nil, fmt.Errorf("kafka: no store to read the %s resource from", ClientResourceID)
	}
	a, err := env.Store.Attributes(ctx)
	if err != nil {
		return nil, fmt.Errorf("kafka: read the pipeline spec for the %s resource: %w", ClientResourceID, err)
	}
	return ClientFromSpec(a.Spec)
}

// ClientFromSpec parses the KafkaClient resource of a static pipeline spec (YSON).
func ClientFromSpec(static []byte) (*ClientConfig, error) {
	if len(static) == 0 {
		return nil, errNoClient
	}
	n, err := yson.Decode(static)
	if err != nil {
		return nil, fmt.Errorf("kafka: decode the pipeline spec: %w", err)
	}
	if n.Kind != yson.KindMap {
		return nil, fmt.Errorf("kafka: the pipeline spec is a %s, not a map", n.Kind)
	}
	r := n.Get("resources").Get(ClientResourceID)
	if r == nil {
		return nil, errNoClient
	}
	path := "resources/" + ClientResourceID
	if r.Kind != yson.KindMap {
		return nil, fmt.Errorf("kafka: %s is a %s, not a map", path, r.Kind)
	}
	class := r.Get("resource_class_name")
	if class == nil || class.Kind != yson.KindString ||
		(class.String != ClientResourceClass && class.String != strings.TrimPrefix(ClientResourceClass, "NYT::NFlow::")) {
		return nil, fmt.Errorf("kafka: %s/resource_class_name: want %s", path, ClientResourceClass)
	}
	return parseClientNode(r.Get("parameters"), path+"/parameters")
}

// ParseClientMap parses a KafkaClient resource's parameters map; path prefixes the problems.
func ParseClientMap(params map[string]any, path string) (*ClientConfig, error) {
	if params == nil {
		params = map[string]any{}
	}
	data, err := sdkyson.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("kafka: %s: %w", path, err)
	}
	n, err := yson.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("kafka: %s: %w", path, err)
	}
	return parseClientNode(n, path)
}

func parseClientNode(n *yson.Node, path string) (*ClientConfig, error) {
	if n == nil {
		n = &yson.Node{Kind: yson.KindMap}
	}
	var w yson.Walker
	f := w.Fields(n, path)
	c := ParseClient(f)
	f.Close()
	if !w.OK() {
		var msgs []string
		for _, p := range w.Problems() {
			msgs = append(msgs, p.String())
		}
		return nil, fmt.Errorf("kafka: invalid %s resource: %s", ClientResourceID, strings.Join(msgs, "; "))
	}
	return c, nil
}

// Options returns the franz-go options of the connection: brokers, TLS, SASL and the mapped
// extra_config keys. The SASL password is read from the environment here.
func (c *ClientConfig) Options() ([]kgo.Opt, error) {
	brokers := c.Brokers()
	if len(brokers) == 0 {
		return nil, errors.New("kafka client: no bootstrap servers")
	}
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...)}
	proto := strings.ToUpper(c.SecurityProtocol)
	if proto == "SSL" || proto == "SASL_SSL" {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.SSLCALocation != "" {
			pem, err := os.ReadFile(c.SSLCALocation)
			if err != nil {
				return nil, fmt.Errorf("kafka client: ssl_ca_location: %w", err)
			}
			tc.RootCAs = x509.NewCertPool()
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("kafka client: ssl_ca_location %s holds no PEM certificate", c.SSLCALocation)
			}
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if strings.HasPrefix(proto, "SASL_") {
		env := c.SASLPasswordEnv
		if env == "" {
			env = DefaultPasswordEnv
		}
		password := os.Getenv(env)
		if password == "" {
			return nil, fmt.Errorf("kafka client: the SASL password variable %s is empty or unset", env)
		}
		switch strings.ToUpper(c.SASLMechanism) {
		case "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: c.SASLUsername, Pass: password}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: c.SASLUsername, Pass: password}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: c.SASLUsername, Pass: password}.AsSha512Mechanism()))
		default:
			return nil, fmt.Errorf("kafka client: unsupported sasl_mechanism %q", c.SASLMechanism)
		}
	}
	keys := make([]string, 0, len(c.ExtraConfig))
	for k := range c.ExtraConfig {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		conv, ok := extraOptions[k]
		if !ok || slices.Contains(reservedKeys, k) {
			return nil, fmt.Errorf("kafka client: extra_config key %q is not accepted", k)
		}
		o, err := conv(c.ExtraConfig[k])
		if err != nil {
			return nil, fmt.Errorf("kafka client: extra_config %q: %w", k, err)
		}
		opts = append(opts, o)
	}
	return opts, nil
}

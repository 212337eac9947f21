package kafka

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/internal/ybin"
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

// FuzzDecodeRow: decoding a stored row never panics, and a row the runtime's decoder
// (ybin) reads decodes to what the SDK's YSON decoder makes of the same bytes.
func FuzzDecodeRow(f *testing.F) {
	for _, m := range []map[string]any{
		{"hash": uint64(7), "word": "k0001", "count": int64(42)},
		{"s": "", "f": 1.5, "b": true, "n": nil},
		{},
	} {
		b, ok := ybin.AppendMap(nil, m)
		if !ok {
			f.Fatalf("seed %v does not encode", m)
		}
		f.Add(b)
	}
	f.Add([]byte("{a=1;b=x}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var row map[string]any
		err := decodeRow(data, &row)
		if _, ok := ybin.DecodeMap(data); !ok {
			return
		}
		if err != nil {
			t.Fatalf("ybin decodes %q, decodeRow fails: %v", data, err)
		}
		var sdk map[string]any
		if err := sdkyson.Unmarshal(data, &sdk); err != nil {
			t.Fatalf("ybin decodes %q to %v, the SDK refuses it: %v", data, row, err)
		}
		// %#v prints map keys sorted, and NaN as NaN (DeepEqual finds NaN unequal to itself).
		if !reflect.DeepEqual(row, sdk) && fmt.Sprintf("%#v", row) != fmt.Sprintf("%#v", sdk) {
			t.Fatalf("%q: ybin %#v, SDK %#v", data, row, sdk)
		}
	})
}

package kafka

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
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

// FuzzRecordRowAndBytes: the source's row of any record is the plainly built row (same columns,
// types, values and stored bytes), and the sink's record bytes of any string or number are the
// plain conversion's, nil-ness included, and stay so while the arena hands out more.
func FuzzRecordRowAndBytes(f *testing.F) {
	f.Add([]byte("k1"), []byte("hello"), true, true, int64(7), int32(1), int64(1_700_000_000_123), int64(0), 1.5)
	f.Add([]byte{}, []byte{}, false, true, int64(0), int32(0), int64(-5_000), int64(300), math.Inf(-1))
	f.Add([]byte(nil), []byte(nil), true, false, int64(math.MaxInt64), int32(math.MaxInt32), int64(0), int64(1<<40), math.NaN())
	a := newArena(1)
	var handed [][2][]byte
	f.Fuzz(func(t *testing.T, key, value []byte, hasKey, hasValue bool, offset int64, partition int32, millis, sub int64, fl float64) {
		r := &kgo.Record{Offset: offset, Partition: partition, Timestamp: time.UnixMilli(millis)}
		if hasKey {
			r.Key = append([]byte{}, key...)
		}
		if hasValue {
			r.Value = append([]byte{}, value...)
		}
		want := plainRow(r, r.Value, hasValue, sub, nil)
		got := recordRow(r, r.Value, hasValue, sub, nil)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("row %#v, want %#v", got, want)
		}
		wb, _ := ybin.AppendMap(nil, want.Columns)
		gb, _ := ybin.AppendMap(nil, got.Columns)
		if string(wb) != string(gb) {
			t.Fatalf("stored bytes %q, want %q", gb, wb)
		}
		for _, v := range []any{string(value), offset, uint64(millis), int(sub), fl, hasKey, nil} {
			p, _ := plainBytesOf(v)
			b, err := a.bytesOf(v)
			if err != nil || string(b) != string(p) || (b == nil) != (p == nil) {
				t.Fatalf("%#v: %q (%v), want %q", v, b, err, p)
			}
			if len(handed) < 2_000 {
				handed = append(handed, [2][]byte{b, p})
			}
		}
		for _, h := range handed {
			if string(h[0]) != string(h[1]) {
				t.Fatalf("handed-out bytes changed: %q, want %q", h[0], h[1])
			}
		}
	})
}

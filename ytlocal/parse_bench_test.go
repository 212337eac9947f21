package ytlocal

import (
	"fmt"
	"testing"

	"go.ytsaurus.tech/yt/go/yson"
)

// outputRows is an insert_rows body like the runtime's output store writes: 1000 maps with
// strings, integers and binary YSON payloads.
func outputRows(tb testing.TB) []byte {
	tb.Helper()
	var body []byte
	for i := range 1000 {
		row := map[string]any{"partition_id": "count-p0", "destination": "sink/out", "message_id": fmt.Sprintf("m%012d", i),
			"stream_id": "counts", "key": []byte{1, 2, 3}, "key_hash": uint64(i) * 7919, "payload": []byte(`{"word"="w0001";"count"=17;}`),
			"event_timestamp": uint64(1700000000000000 + i), "system_timestamp": uint64(1700000000000000 + i), "sequence_number": int64(i)}
		b, err := yson.MarshalFormat(row, yson.FormatBinary)
		if err != nil {
			tb.Fatal(err)
		}
		body = append(append(body, b...), ';')
	}
	return body
}

// TestParseListFragmentRows: the list fragment parser returns every item, equal to decoding
// it on its own.
func TestParseListFragmentRows(t *testing.T) {
	body := outputRows(t)
	items, err := parseListFragment(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1000 {
		t.Fatalf("%d items, want 1000", len(items))
	}
	m := items[999].(map[string]any)
	if m["message_id"] != "m000000000999" || m["sequence_number"] != int64(999) || string(m["payload"].(string)) != `{"word"="w0001";"count"=17;}` {
		t.Fatalf("item 999: %v", m)
	}
	if _, err := parseListFragment([]byte("{a=1};{b=")); err == nil {
		t.Fatal("a truncated fragment parses")
	}
	if items, err := parseListFragment([]byte(" \n")); err != nil || items != nil {
		t.Fatalf("blank fragment: %v, %v", items, err)
	}
}

func BenchmarkParseListFragment(b *testing.B) {
	body := outputRows(b)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseListFragment(body); err != nil {
			b.Fatal(err)
		}
	}
}

package peers

import (
	"strings"
	"testing"
)

// TestTableOf: the table a row command names is the last element of its path parameter.
func TestTableOf(t *testing.T) {
	for in, want := range map[string]string{
		`{"path"="//home/peers/g/pipeline/states";"transaction_id"="1-2-3-4"}`: "states",
		`{"path"="<append=%true>//tmp/pipe/partition_states"}`:                 "partition_states",
		`{"path"="//t"}`:                         "t",
		`{"transaction_id"="1-2-3-4"}`:           "?",
		``:                                       "?",
		`{"path"="//a/b/compact_input_messages"`: "compact_input_messages",
	} {
		if got := tableOf(in); got != want {
			t.Errorf("tableOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzTableOf: any parameters give a name without a path separator or a quote.
func FuzzTableOf(f *testing.F) {
	f.Add(`{"path"="//home/peers/g/pipeline/states"}`)
	f.Add(`//`)
	f.Fuzz(func(t *testing.T, params string) {
		if got := tableOf(params); strings.ContainsAny(got, `/"`) {
			t.Fatalf("tableOf(%q) = %q", params, got)
		}
	})
}

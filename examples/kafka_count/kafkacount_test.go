package kafkacount

import (
	"slices"
	"testing"
)

func TestWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"The quick, brown fox!", []string{"the", "quick", "brown", "fox"}},
		{"read_committed x2", []string{"read", "committed", "x2"}},
	} {
		if got := Words(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Words(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

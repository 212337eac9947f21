// Package kafkacount holds the process function of the Kafka count example
// (examples/kafka_count): KafkaWords turns the records of a TKafkaSource into words; the
// keyed running count is word count's CountWords, which this package links. Importing the
// package registers KafkaWords (and, through examples/word_count, CountWords).
package kafkacount

import (
	"fmt"
	"strings"
	"unicode"

	_ "github.com/ytflow/yt-flow/examples/word_count" // CountWords
	"github.com/ytflow/yt-flow/flow"
)

func init() {
	flow.Register("KafkaWords", flow.PerMessage(KafkaWords))
}

// KafkaWords reads the column data of a TKafkaSource row (the record value) and emits one
// message {word} to stream words per word, in order: the value is lower-cased and split on
// every rune that is neither a letter nor a digit. A null value (a tombstone) has no words.
func KafkaWords(ctx *flow.Context, msg *flow.Message) error {
	var text string
	switch v := msg.Payload["data"].(type) {
	case nil:
		return nil
	case string:
		text = v
	case []byte:
		text = string(v)
	default:
		return fmt.Errorf("column data: want a string, got %T", v)
	}
	for _, w := range Words(text) {
		ctx.AddMessage("words", flow.Row{"word": w})
	}
	return nil
}

// Words returns the words of text in order (see KafkaWords).
func Words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

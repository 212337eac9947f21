package app

// yt-flow dead-letters show and replay.

import (
	"context"
	"fmt"
	"strings"
	"time"

	sdkyson "go.ytsaurus.tech/yt/go/yson"

	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/ytstore"
)

// showDeadLetter prints every field of a letter, one per line: its payload as text YSON and
// its whole error.
func showDeadLetter(env *environ, l ytstore.DeadLetterRow) {
	w := env.stdout
	kind := "message"
	if l.Timer {
		kind = "timer"
	}
	key := fmt.Sprintf("%x", l.Key)
	if k, err := epoch.DecodeKey(l.Key); err == nil {
		key = fmt.Sprint(k)
	}
	fmt.Fprintf(w, "%s %s\n", kind, l.MessageID)
	fmt.Fprintf(w, "  computation:      %s\n", l.ComputationID)
	fmt.Fprintf(w, "  partition:        %s\n", l.PartitionID)
	fmt.Fprintf(w, "  stream:           %s\n", l.StreamID)
	fmt.Fprintf(w, "  key:              %s\n", key)
	fmt.Fprintf(w, "  attempts:         %d\n", l.Attempts)
	fmt.Fprintf(w, "  system_timestamp: %d\n", l.SystemTimestamp)
	fmt.Fprintf(w, "  event_timestamp:  %d\n", l.EventTimestamp)
	if l.Timer {
		fmt.Fprintf(w, "  trigger:          %d\n", l.Trigger)
	}
	fmt.Fprintf(w, "  dead_at:          %d\n", l.DeadAt)
	fmt.Fprintf(w, "  payload:          %s\n", payloadText(l.Payload))
	fmt.Fprintf(w, "  error:            %s\n", strings.ReplaceAll(l.Error, "\n", "\n                    "))
}

// payloadText is a stored payload as text YSON (binary YSON is YSON too); bytes that do not
// decode are shown in hex, marked.
func payloadText(b []byte) (s string) {
	if len(b) == 0 {
		return "#"
	}
	defer func() {
		if recover() != nil { // the SDK's decoder panics on some malformed input
			s = fmt.Sprintf("(not YSON) %x", b)
		}
	}()
	var v any
	if err := sdkyson.Unmarshal(b, &v); err != nil {
		return fmt.Sprintf("(not YSON: %v) %x", err, b)
	}
	out, err := sdkyson.MarshalFormat(v, sdkyson.FormatText)
	if err != nil {
		return fmt.Sprintf("%x", b)
	}
	return string(out)
}

// replayDeadLetters replays the chosen letters in one transaction (ytstore.ReplayDeadLetters):
// each becomes a new message (or timer) with id ytstore.ReplayMessageID and the current time
// as system timestamp, read by the jobs of its computation. Letters of a computation the
// spec lacks, or of a source or swift computation, are refused before anything is written.
func replayDeadLetters(ctx context.Context, env *environ, st *ytstore.Store, path string, chosen []ytstore.DeadLetterRow) int {
	attrs, err := st.Attributes(ctx)
	if err != nil {
		return failf(env.stderr, "dead-letters replay: %v", explain(err, path))
	}
	if len(attrs.Spec) == 0 {
		return failf(env.stderr, "dead-letters replay: pipeline %s has no @spec", path)
	}
	p, err := spec.ParsePipeline(attrs.Spec)
	if err != nil {
		return failf(env.stderr, "dead-letters replay: pipeline %s: @spec: %v", path, err)
	}
	var refused []string
	replays := make([]ytstore.Replay, 0, len(chosen))
	for _, l := range chosen {
		c := p.Computations[l.ComputationID]
		switch {
		case c == nil:
			refused = append(refused, fmt.Sprintf("letter %s: computation %s is not in the spec", l.MessageID, l.ComputationID))
		case c.Kind.Source() || c.Kind.Swift():
			refused = append(refused, fmt.Sprintf("letter %s: computation %s is a %s computation; only letters of transform computations replay (their input comes from the output store)", l.MessageID, l.ComputationID, c.Kind))
		default:
			replays = append(replays, ytstore.Replay{Letter: l, MessageID: ytstore.ReplayMessageID(l.MessageID)})
		}
	}
	if len(refused) > 0 {
		return failf(env.stderr, "dead-letters replay: nothing replayed:\n  %s", strings.Join(refused, "\n  "))
	}
	if err := st.ReplayDeadLetters(ctx, replays, uint64(time.Now().UnixMicro())); err != nil {
		return failf(env.stderr, "dead-letters replay: %v", err)
	}
	for _, r := range replays {
		fmt.Fprintf(env.stdout, "%s %s -> %s\n", r.Letter.ComputationID, r.Letter.MessageID, r.MessageID)
	}
	fmt.Fprintf(env.stdout, "replayed %d dead letters\n", len(replays))
	return 0
}

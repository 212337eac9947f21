package kafka

import (
	"errors"
	"fmt"
)

// MarkerMetadata tags the progress marker of the transactional sink: the committed offset of
// the consumer group named after the sink's transactional id, on partition 0 of the sink's
// topic. An offset without this metadata (e.g. one reset by hand) is not a marker.
const MarkerMetadata = "ytflow/v1"

// ErrMarkerLost: the sink's progress marker is missing or cannot be trusted while records of the
// batches the runtime offers may already be committed to Kafka; writing them again could
// duplicate them, so the sink stops.
var ErrMarkerLost = errors.New("kafka sink: progress marker lost")

// ErrFenced: a newer instance of the sink with the same transactional id started; this one is
// a zombie and writes nothing more.
var ErrFenced = errors.New("kafka sink: fenced by a newer instance with the same transactional id")

// marker is the committed offset of the marker group as read back.
type marker struct {
	found    bool // the group holds an offset for the marker partition
	offset   int64
	metadata string
}

// resolveMarker decides from which sequence number on the sink must still write, given the
// marker and the first sequence number the runtime offers (the lowest it has not acknowledged:
// it acknowledges a batch only after the transaction holding it committed, so everything
// below firstSeq is in Kafka).
//
// The marker holds the sequence number after the last record committed (yt-flow numbers a
// sink's outputs from 0, Flow from 1, so this is the same value as Flow's "sequence number of
// the last committed message"), written in the transaction of the records it covers. Hence:
//   - a marker with MarkerMetadata at or above firstSeq is the truth: records below it are in
//     Kafka, records at or above it are not;
//   - no offset at all while firstSeq is 0: nothing was ever acknowledged, and no transaction
//     of this sink committed (each commits the marker with its records), so nothing is in
//     Kafka — unless the marker of transactions that the runtime never acknowledged was lost,
//     which cannot be told apart here (Flow keeps the highest sequence number handed to the
//     writer in its persisted sink state for that; the SPI has no such state);
//   - anything else (no offset while firstSeq > 0: acknowledged batches prove a transaction
//     committed a marker that is gone now — deleted, or expired after the broker's
//     offsets.retention.minutes without commits; foreign metadata; an offset below firstSeq)
//     is ErrMarkerLost.
//
// Invariant: the sink skips exactly the records its marker covers and stops rather than
// write records that may be in Kafka already (TestResolveMarker, TestKafkaSinkResendAndRestart,
// TestKafkaSinkLostMarker).
func resolveMarker(m marker, firstSeq int64) (int64, error) {
	switch {
	case m.found && m.metadata == MarkerMetadata && m.offset >= firstSeq:
		return m.offset, nil
	case !m.found && firstSeq == 0:
		return 0, nil
	case !m.found:
		return 0, fmt.Errorf("%w: the marker group has no offset, but the runtime has acknowledged sequence numbers below %d, so transactions of this sink committed; records from %d on may be in the topic already", ErrMarkerLost, firstSeq, firstSeq)
	case m.metadata != MarkerMetadata:
		return 0, fmt.Errorf("%w: the marker group's offset %d has metadata %q, not %q (reset by hand?)", ErrMarkerLost, m.offset, m.metadata, MarkerMetadata)
	default:
		return 0, fmt.Errorf("%w: the marker %d is below the first unacknowledged sequence number %d (reset by hand?)", ErrMarkerLost, m.offset, firstSeq)
	}
}

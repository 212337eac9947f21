// Package queue connects yt-flow to YTsaurus queues (ordered dynamic tables): Source reads
// one queue partition through a registered consumer (TQueueSource), SyncSink writes rows in
// the epoch transaction (TSyncQueueSink), AsyncSink delivers rows from the output store after
// the commit with a queue producer session (TAsyncQueueSink), and BestEffort is the bounded
// in-memory queue of an async sink with at_most_once_strategy.
//
// Offsets of a Source are owned by the job: they live in the partition state and move only
// with the epoch commit; Advance merely keeps the YT consumer in step afterwards.
package queue

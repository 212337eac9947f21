package tablet

import (
	"fmt"
	"slices"
	"time"
)

// tombstone remembers a delete so that the row can be dropped once no read or
// transaction within the retention window can see it.
type tombstone struct {
	enc string
	ts  Timestamp
}

// collectTombstones drops rows whose latest version is a delete at or before
// horizon and whose locks are older too. It depends only on horizon, so replay
// reproduces it.
func (t *table) collectTombstones(horizon Timestamp) {
	n := 0
	for n < len(t.tombstones) && t.tombstones[n].ts <= horizon {
		ts := t.tombstones[n]
		n++
		r := t.rows[ts.enc]
		if r == nil || len(r.versions) == 0 || r.latest() != nil || r.versions[len(r.versions)-1].ts > horizon {
			continue
		}
		if slices.ContainsFunc(r.writeTS, func(x Timestamp) bool { return x > horizon }) ||
			slices.ContainsFunc(r.readTS, func(x Timestamp) bool { return x > horizon }) {
			continue
		}
		// Invariant: a collected row leaves the key-order index too, even in a table
		// nobody scans (the output store is written, deleted and only looked up); before,
		// the index kept every collected row, and its versions, until the next scan
		// (TestCollectedRowsLeaveIndex).
		t.removeRow(ts.enc, r)
	}
	if n > 0 {
		t.tombstones = append(t.tombstones[:0], t.tombstones[n:]...)
	}
	t.dropRemovedIfHalf()
}

// mergeWatermark drops the rows whose column is below watermark. The first merge by a
// column reads every row's value (wmIndex); from then on every write of the table adds its
// row with the value it wrote, and a merge visits only the rows below the watermark (and the
// others of the bucket it falls in): it costs the rows it drops, not the table. The dedup
// tables hold every message of the last half minute and are merged every few seconds, under
// the server's state lock (BenchmarkMergeWatermark). Dropped rows leave the key-order index
// at its next use (sortedRows), or once they are half of it; a transaction in progress that
// writes a dropped row later creates it anew, as after compaction in YT.
func (t *table) mergeWatermark(column string, watermark uint64) error {
	ci, ok := t.byName[column]
	if !ok {
		return fmt.Errorf("merge watermark of %s: no column %q", t.path, column)
	}
	if t.wmCol != ci+1 {
		t.wmCol, t.wm = ci+1, wmIndex{}
		for enc, r := range t.rows {
			t.trackWatermark(enc, r.latest())
		}
	}
	t.wm.below(watermark, func(enc string) {
		r := t.rows[enc]
		if r == nil {
			return
		}
		// The row may have been written again since: it was added again with the newer
		// value, and stays unless that one is below the watermark too.
		if v, ok := t.watermarkValue(r.latest()); ok && v < watermark {
			t.removeRow(enc, r)
		}
	})
	t.dropRemovedIfHalf()
	return nil
}

// watermarkValue is the tracked column's value in a row's values.
func (t *table) watermarkValue(values []any) (uint64, bool) {
	if t.wmCol == 0 || len(values) < t.wmCol {
		return 0, false
	}
	v, ok := values[t.wmCol-1].(uint64)
	return v, ok
}

// trackWatermark adds a row just written with values to the watermark index, when the
// table is merged by watermark.
func (t *table) trackWatermark(enc string, values []any) {
	if v, ok := t.watermarkValue(values); ok {
		t.wm.add(v, enc)
	}
}

// wmBucketShift sets the value range of a wmIndex bucket: 2^20, about a second of
// microsecond timestamps.
const wmBucketShift = 20

// wmIndex orders the rows of a table merged by watermark by the value their last write
// left in the watermark column, in buckets of values with the same v >> wmBucketShift. A
// row written several times has an entry for each write. A bucket is a chain of blocks of
// wmBlockLen entries: a dedup index takes ~100 000 rows a second into one bucket, and one
// growing slice would copy all of them (pointers, so under write barriers while the
// collector runs) every time it doubles.
type wmIndex struct {
	buckets map[uint64][][]wmEntry
	ids     []uint64 // of buckets, ascending
}

// wmBlockLen is the number of entries of a wmIndex block.
const wmBlockLen = 1024

type wmEntry struct {
	value uint64
	enc   string // encoded key of the row
}

func (x *wmIndex) add(v uint64, enc string) {
	id := v >> wmBucketShift
	b, ok := x.buckets[id]
	if !ok {
		if x.buckets == nil {
			x.buckets = map[uint64][][]wmEntry{}
		}
		i, _ := slices.BinarySearch(x.ids, id)
		x.ids = slices.Insert(x.ids, i, id)
	}
	if n := len(b); n == 0 || len(b[n-1]) == cap(b[n-1]) {
		b = append(b, make([]wmEntry, 0, wmBlockLen))
		x.buckets[id] = b
	}
	last := &b[len(b)-1]
	*last = append(*last, wmEntry{value: v, enc: enc})
}

// below removes the entries with a value below watermark and calls f with each one's key.
func (x *wmIndex) below(watermark uint64, f func(enc string)) {
	last := watermark >> wmBucketShift
	done := 0
	for _, id := range x.ids {
		if id > last {
			break
		}
		var keep [][]wmEntry
		for _, blk := range x.buckets[id] {
			for _, e := range blk {
				if e.value < watermark {
					f(e.enc)
					continue
				}
				if n := len(keep); n == 0 || len(keep[n-1]) == cap(keep[n-1]) {
					keep = append(keep, make([]wmEntry, 0, wmBlockLen))
				}
				keep[len(keep)-1] = append(keep[len(keep)-1], e)
			}
		}
		if len(keep) > 0 { // only the bucket the watermark falls in
			x.buckets[id] = keep
			break
		}
		delete(x.buckets, id)
		done++
	}
	x.ids = x.ids[done:]
}

// prune drops versions no read within the retention window can see: all but
// the newest version at or before horizon.
// It scans from the oldest version: every commit prunes the row it writes, so the versions
// at or before horizon are few, while those after it are all the row's writes of the last
// VersionRetention (hundreds for a key written every epoch).
func prune(r *row, horizon Timestamp) {
	keep := 0
	for keep+1 < len(r.versions) && r.versions[keep+1].ts <= horizon {
		keep++
	}
	if keep > 0 {
		r.versions = append(r.versions[:0], r.versions[keep:]...)
	}
}

// NextExpiry returns the earliest lease end of the open transactions.
func (e *Engine) NextExpiry() (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var next time.Time
	for _, tx := range e.txs {
		if next.IsZero() || tx.expires.Before(next) {
			next = tx.expires
		}
	}
	return next, !next.IsZero()
}

package ytlocal

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.ytsaurus.tech/library/go/core/log"
)

// On-disk layout of DataDir:
//
//	LOCK            advisory lock held by the server that owns the directory
//	snapshot        latest snapshot (written to snapshot.tmp, fsynced, renamed)
//	wal.<N>         write-ahead log segments; the snapshot names the first segment
//	                that is not contained in it, older segments are deleted
//
// A log record is [u32 LE payload length][u32 LE CRC-32C of payload][payload]; the
// payload is [u8 owner length][owner][data]. A torn or corrupt tail (a crash in the
// middle of an append) ends replay and is truncated away; a record is acknowledged
// only after fsync, so a torn record was never acknowledged.
//
// A snapshot is "ytlsnap1" [u64 LE next segment] [u64 LE last timestamp] then sections
// [u32 owner length][owner][u64 data length][data], then [u32 CRC-32C of all before].

const (
	cypressLogName = "cypress"
	snapshotMagic  = "ytlsnap1"
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// wal is the append side of the log. Records are written under the state lock; fsync
// happens outside it (group commit): a response is sent only after every record written
// before its handler finished is durable (Server.waitDurable), so no client ever observes
// state that a crash could take back, and concurrent commits share one fsync. Answers that
// carry no such state (call.volatile) do not wait.
type wal struct {
	dir     string
	seg     uint64
	f       *os.File // guarded by the state lock and mu (both held to replace it)
	size    int64    // bytes of intact records in f (state lock)
	records int      // records since the last snapshot (state lock)
	scratch []byte   // the buffer records are framed in, reused (state lock)
	// snapshotting is set while a snapshot is written in the background (state lock);
	// snapshots tracks those writers, which Close waits for.
	snapshotting bool
	snapshots    sync.WaitGroup
	// snapshotBytes is the size of the latest snapshot (state lock): the next one waits until
	// the log since it is at least that large, so that the cost of snapshots stays
	// proportional to what is written, not to the size of the state times the records.
	snapshotBytes int64

	mu      sync.Mutex
	cond    *sync.Cond
	seq     uint64 // records written (mu)
	synced  uint64 // records known durable (mu)
	syncing bool   // an fsync is in flight (mu)
	err     error  // sticky fsync failure (mu)
}

func newWAL(dir string, seg uint64, f *os.File, size int64, records int) *wal {
	w := &wal{dir: dir, seg: seg, f: f, size: size, records: records}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// written returns the sequence number of the last written record.
func (w *wal) written() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

// waitDurable blocks until record seq is on disk. Callers must NOT hold the state lock.
func (s *Server) waitDurable(seq uint64) error {
	w := s.wal
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.synced < seq {
		if w.err != nil {
			return w.err
		}
		if w.syncing {
			w.cond.Wait()
			continue
		}
		w.syncing = true
		f, target := w.f, w.seq
		w.mu.Unlock()
		if h := syncHook.Load(); h != nil {
			(*h)()
		}
		err := f.Sync()
		w.mu.Lock()
		w.syncing = false
		switch {
		case err == nil:
			if target > w.synced {
				w.synced = target
			}
		case w.f != f:
			// The segment was rotated meanwhile; the fsynced snapshot covers it.
		default:
			w.err = fmt.Errorf("ytlocal: fsync write-ahead log: %w", err)
		}
		w.cond.Broadcast()
	}
	return nil
}

func segmentName(dir string, seg uint64) string {
	return filepath.Join(dir, "wal."+strconv.FormatUint(seg, 10))
}

// openDurable restores state from DataDir and opens the log for appending.
func (s *Server) openDurable() error {
	dir := s.cfg.DataDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("ytlocal: create data dir %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return err
	}
	s.dirLock = lock
	s.mu.Lock()
	defer s.mu.Unlock()
	next, err := s.loadSnapshot(filepath.Join(dir, "snapshot"))
	if err != nil {
		return err
	}
	segs, err := listSegments(dir)
	if err != nil {
		return err
	}
	last := next
	replayed := 0
	for _, seg := range segs {
		if seg < next {
			_ = os.Remove(segmentName(dir, seg))
			continue
		}
		n, err := s.replaySegment(segmentName(dir, seg))
		if err != nil {
			return err
		}
		replayed += n
		last = seg
	}
	f, err := os.OpenFile(segmentName(dir, last), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("ytlocal: open log segment: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("ytlocal: stat log segment: %w", err)
	}
	s.wal = newWAL(dir, last, f, st.Size(), replayed)
	if fi, err := os.Stat(filepath.Join(dir, "snapshot")); err == nil {
		s.wal.snapshotBytes = fi.Size()
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	s.log.Info("ytlocal restored", log.String("data_dir", dir), log.Int("replayed_records", replayed))
	return nil
}

func listSegments(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("ytlocal: read data dir %s: %w", dir, err)
	}
	var segs []uint64
	for _, e := range entries {
		if n, ok := strings.CutPrefix(e.Name(), "wal."); ok {
			if seg, err := strconv.ParseUint(n, 10, 64); err == nil {
				segs = append(segs, seg)
			}
		}
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i] < segs[j] })
	return segs, nil
}

// replaySegment applies every intact record of one segment and truncates a torn tail.
func (s *Server) replaySegment(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("ytlocal: read log %s: %w", path, err)
	}
	off, n := 0, 0
	for {
		owner, rec, size, ok := decodeRecord(data[off:])
		if !ok {
			break
		}
		if err := s.applyRecord(owner, rec); err != nil {
			return n, fmt.Errorf("ytlocal: replay %s record %d (%s): %w", path, n, owner, err)
		}
		off += size
		n++
	}
	if off < len(data) {
		s.log.Warn("ytlocal: truncating torn log tail", log.String("file", path), log.Int("offset", off), log.Int("size", len(data)))
		if err := os.Truncate(path, int64(off)); err != nil {
			return n, fmt.Errorf("ytlocal: truncate torn log %s: %w", path, err)
		}
	}
	return n, nil
}

func decodeRecord(b []byte) (owner string, rec []byte, size int, ok bool) {
	if len(b) < 8 {
		return "", nil, 0, false
	}
	n := binary.LittleEndian.Uint32(b)
	sum := binary.LittleEndian.Uint32(b[4:])
	if uint64(n) > uint64(len(b)-8) || n < 1 {
		return "", nil, 0, false
	}
	payload := b[8 : 8+n]
	if crc32.Checksum(payload, crcTable) != sum {
		return "", nil, 0, false
	}
	ol := int(payload[0])
	if 1+ol > len(payload) {
		return "", nil, 0, false
	}
	return string(payload[1 : 1+ol]), payload[1+ol:], 8 + int(n), true
}

func encodeRecord(owner string, rec []byte) []byte {
	return appendRecord(make([]byte, 0, 8+1+len(owner)+len(rec)), owner, rec)
}

// appendRecord frames rec (owner, length, checksum) into out[:0]'s storage.
func appendRecord(out []byte, owner string, rec []byte) []byte {
	out = append(out[:0], 0, 0, 0, 0, 0, 0, 0, 0)
	out = append(out, byte(len(owner)))
	out = append(out, owner...)
	out = append(out, rec...)
	payload := out[8:]
	binary.LittleEndian.PutUint32(out, uint32(len(payload)))
	binary.LittleEndian.PutUint32(out[4:], crc32.Checksum(payload, crcTable))
	return out
}

func (s *Server) applyRecord(owner string, rec []byte) error {
	switch owner {
	case cypressLogName:
		return s.tree.Apply(rec)
	case mutationLogName:
		return s.mutations.Apply(rec)
	}
	e, ok := s.exts[owner]
	if !ok {
		return fmt.Errorf("record of unknown owner %q", owner)
	}
	return e.Apply(rec)
}

// logRecord appends one record to the write-ahead log. Call it with the state lock
// held, BEFORE making the change visible; if it fails, do not apply the change and
// return the error. The dispatcher makes the record durable (fsync, shared with
// concurrent commits) before the response of the command is sent. Without a DataDir it
// does nothing.
// maxScratch bounds the framing buffer the log keeps between records.
const maxScratch = 4 << 20

func (s *Server) logRecord(owner string, rec []byte) error {
	w := s.wal
	if w == nil {
		return nil
	}
	if len(owner) > 255 {
		return fmt.Errorf("ytlocal: log owner name %q too long", owner)
	}
	w.mu.Lock()
	err := w.err
	w.mu.Unlock()
	if err != nil {
		return err
	}
	buf := appendRecord(w.scratch, owner, rec)
	if cap(buf) <= maxScratch {
		w.scratch = buf // the write below does not keep it
	}
	if _, err := w.f.Write(buf); err != nil {
		// Cut a partial record so that later records stay replayable.
		_ = w.f.Truncate(w.size)
		return fmt.Errorf("ytlocal: append to write-ahead log: %w", err)
	}
	w.size += int64(len(buf))
	w.records++
	w.mu.Lock()
	w.seq++
	w.mu.Unlock()
	return nil
}

// syncHook, when set (by tests only), runs before every fsync of the write-ahead log.
var syncHook atomic.Pointer[func()]

// snapshotWriteHook, when set (by tests only, before the server starts), runs in the
// background snapshot writer before it encodes anything.
var snapshotWriteHook func()

// maybeSnapshot starts a snapshot once enough records accumulated. It runs with the state
// lock held after a command completed, when every logged record is applied. Only the log
// rotation and a copy of the state happen under the lock; the snapshot is encoded, written
// and installed in the background (one at a time), so that a large state does not stall
// every command while it is written (TestSnapshotDoesNotStallCommands).
func (s *Server) maybeSnapshot() {
	w := s.wal
	if w == nil || w.f == nil || s.closed || w.snapshotting || w.records < s.cfg.SnapshotEvery || w.size < w.snapshotBytes {
		return
	}
	write, err := s.beginSnapshotLocked()
	if err != nil {
		s.log.Error("ytlocal: snapshot failed", log.Error(err))
		return
	}
	w.snapshotting = true
	w.snapshots.Add(1)
	go func() {
		defer w.snapshots.Done()
		if h := snapshotWriteHook; h != nil {
			h()
		}
		size, err := write()
		if err != nil {
			s.log.Error("ytlocal: snapshot failed; the log segments it would replace are kept", log.Error(err))
		}
		s.mu.Lock()
		w.snapshotting = false
		if err == nil {
			w.snapshotBytes = size
		}
		s.mu.Unlock()
	}()
}

// beginSnapshotLocked starts a new log segment and captures the state as of its start (state
// lock held); the returned function encodes the capture, installs it as the snapshot (which
// names the new segment as the first to replay) and removes the older segments. Until it is
// installed, the previous snapshot and every segment since it replay to the same state, so a
// crash at any point loses nothing.
func (s *Server) beginSnapshotLocked() (func() (size int64, err error), error) {
	w := s.wal
	next := w.seg + 1
	nf, err := os.OpenFile(segmentName(w.dir, next), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ytlocal: create log segment: %w", err)
	}
	// The new segment's name must be durable before a record in it is acknowledged.
	if err := syncDir(w.dir); err != nil {
		nf.Close()
		return nil, err
	}
	var head bytes.Buffer
	head.WriteString(snapshotMagic)
	_ = binary.Write(&head, binary.LittleEndian, next)
	_ = binary.Write(&head, binary.LittleEndian, s.oracle.Last())
	type section struct {
		name   string
		encode func(io.Writer) error
	}
	var sections []section
	capture := func(name string, p Persistent) error {
		if c, ok := p.(SnapshotCapturer); ok {
			sections = append(sections, section{name, c.CaptureSnapshot()})
			return nil
		}
		var data bytes.Buffer // small state: encoded now, under the lock
		if err := p.Snapshot(&data); err != nil {
			return fmt.Errorf("ytlocal: snapshot %s: %w", name, err)
		}
		sections = append(sections, section{name, func(w io.Writer) error { _, err := w.Write(data.Bytes()); return err }})
		return nil
	}
	if err := capture(cypressLogName, s.tree); err != nil {
		nf.Close()
		return nil, err
	}
	if err := capture(mutationLogName, s.mutations); err != nil {
		nf.Close()
		return nil, err
	}
	for _, name := range s.extOrder {
		if err := capture(name, s.exts[name]); err != nil {
			nf.Close()
			return nil, err
		}
	}
	// Every record written so far goes into the snapshot: make them durable in the old
	// segment (acknowledgements wait for fsyncs of the current segment only), then switch.
	if err := w.f.Sync(); err != nil {
		nf.Close()
		return nil, fmt.Errorf("ytlocal: fsync write-ahead log: %w", err)
	}
	w.mu.Lock()
	old := w.f
	w.f, w.seg, w.records, w.size = nf, next, 0, 0
	w.synced = w.seq
	w.cond.Broadcast()
	w.mu.Unlock()
	_ = old.Close()
	dir := w.dir
	return func() (int64, error) {
		buf := bytes.NewBuffer(head.Bytes())
		for _, sec := range sections {
			var data bytes.Buffer
			if err := sec.encode(&data); err != nil {
				return 0, fmt.Errorf("ytlocal: snapshot %s: %w", sec.name, err)
			}
			_ = binary.Write(buf, binary.LittleEndian, uint32(len(sec.name)))
			buf.WriteString(sec.name)
			_ = binary.Write(buf, binary.LittleEndian, uint64(data.Len()))
			buf.Write(data.Bytes())
		}
		_ = binary.Write(buf, binary.LittleEndian, crc32.Checksum(buf.Bytes(), crcTable))
		tmp := filepath.Join(dir, "snapshot.tmp")
		if err := writeFileSync(tmp, buf.Bytes()); err != nil {
			return 0, err
		}
		if err := os.Rename(tmp, filepath.Join(dir, "snapshot")); err != nil {
			return 0, fmt.Errorf("ytlocal: install snapshot: %w", err)
		}
		if err := syncDir(dir); err != nil {
			return 0, err
		}
		segs, err := listSegments(dir)
		if err != nil {
			return 0, err
		}
		for _, seg := range segs {
			if seg < next {
				_ = os.Remove(segmentName(dir, seg))
			}
		}
		return int64(buf.Len()), nil
	}, nil
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("ytlocal: write %s: %w", path, err)
	}
	bw := bufio.NewWriter(f)
	_, err = bw.Write(data)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("ytlocal: write %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("ytlocal: open data dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("ytlocal: fsync data dir: %w", err)
	}
	return nil
}

// loadSnapshot restores the snapshot if present and returns the first log segment not
// contained in it.
func (s *Server) loadSnapshot(path string) (uint64, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("ytlocal: read snapshot: %w", err)
	}
	if len(data) < len(snapshotMagic)+20 || string(data[:len(snapshotMagic)]) != snapshotMagic {
		return 0, fmt.Errorf("ytlocal: snapshot %s: bad header", path)
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return 0, fmt.Errorf("ytlocal: snapshot %s: checksum mismatch", path)
	}
	r := bytes.NewReader(body[len(snapshotMagic):])
	var next, lastTS uint64
	_ = binary.Read(r, binary.LittleEndian, &next)
	_ = binary.Read(r, binary.LittleEndian, &lastTS)
	s.oracle.Observe(lastTS)
	for r.Len() > 0 {
		var nl uint32
		if err := binary.Read(r, binary.LittleEndian, &nl); err != nil || int(nl) > r.Len() {
			return 0, fmt.Errorf("ytlocal: snapshot %s: bad section header", path)
		}
		name := make([]byte, nl)
		_, _ = io.ReadFull(r, name)
		var dl uint64
		if err := binary.Read(r, binary.LittleEndian, &dl); err != nil || dl > uint64(r.Len()) {
			return 0, fmt.Errorf("ytlocal: snapshot %s: bad section %q", path, name)
		}
		sec := make([]byte, dl)
		_, _ = io.ReadFull(r, sec)
		var p Persistent
		if string(name) == cypressLogName {
			p = s.tree
		} else if string(name) == mutationLogName {
			p = s.mutations
		} else if e, ok := s.exts[string(name)]; ok {
			p = e
		} else {
			return 0, fmt.Errorf("ytlocal: snapshot %s: unknown section %q", path, name)
		}
		if err := p.Restore(bytes.NewReader(sec)); err != nil {
			return 0, fmt.Errorf("ytlocal: restore %s from snapshot: %w", name, err)
		}
	}
	return next, nil
}

func (w *wal) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	if w.err == nil {
		w.err = ErrClosed
	}
	w.cond.Broadcast()
	return err
}

package ytstore

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ytflow/yt-flow/ytlocal"
)

// commandCounter is an HTTP proxy in front of ytlocal that counts the requests by command.
// It names itself as the heavy proxy (/hosts), so that the row commands come to it too.
type commandCounter struct {
	addr string
	next http.Handler
	mu   sync.Mutex
	n    map[string]int
}

func (c *commandCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/hosts" || strings.HasPrefix(r.URL.Path, "/hosts/") {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, "[%q]", c.addr)
		return
	}
	cmd := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	c.mu.Lock()
	c.n[cmd]++
	c.mu.Unlock()
	c.next.ServeHTTP(w, r)
}

func (c *commandCounter) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

// countedStore is epochStore with the store's requests going through a commandCounter.
func countedStore(t *testing.T) (*Store, *commandCounter, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	srv, err := ytlocal.Start(ctx, ytlocal.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c := &commandCounter{next: srv, n: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c.addr = ln.Addr().String()
	hs := &http.Server{Handler: c}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	s, err := Open(ctx, Config{Proxy: ln.Addr().String(), Path: "//tmp/pipe"})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	require.NoError(t, s.CreatePipeline(ctx))
	return s, c, ctx
}

// TestCommitEpochRequests: an epoch commit sends one request per table it writes, plus the
// transaction's start and commit — nothing for the tables it leaves alone — and runs all
// but one of those writes in goroutines of their own (none for a table it does not write).
func TestCommitEpochRequests(t *testing.T) {
	s, c, ctx := countedStore(t)
	lease, err := s.StartLease(ctx, "job-1", time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.CommitEpoch(ctx, sampleEpoch("p1", lease, 100))) // reads the dedup schema once
	for _, tc := range []struct {
		name string
		w    func(token uint64) *EpochWrite
		want map[string]int
		// goroutines the writes start: one fewer than the writes.
		goroutines int64
	}{
		{name: "states only", w: func(token uint64) *EpochWrite {
			return &EpochWrite{PartitionID: "p1", Lease: lease, Token: token,
				States: []StateRow{{ComputationID: "c", KeyHash: 7, Key: []byte("k1"), Name: "count", State: []byte("3")}}}
		}, want: map[string]int{"start_transaction": 1, "insert_rows": 2, "commit_transaction": 1}, goroutines: 1},
		{name: "token only", w: func(token uint64) *EpochWrite {
			return &EpochWrite{PartitionID: "p1", Lease: lease, Token: token}
		}, want: map[string]int{"start_transaction": 1, "insert_rows": 1, "commit_transaction": 1}, goroutines: 0},
		{name: "every table", w: func(token uint64) *EpochWrite { return sampleEpoch("p1", lease, token) },
			// dedup (plain, compact), states, timers, output chunks, partition states, token
			want: map[string]int{"start_transaction": 1, "insert_rows": 7, "commit_transaction": 1}, goroutines: 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			token := uint64(200 + len(tc.name))
			c.reset()
			g0 := s.writeGoroutines.Load()
			require.NoError(t, s.CommitEpoch(ctx, tc.w(token)))
			got := c.reset()
			delete(got, "ping_transaction") // the lease's pings run on their own clock
			assert.Equal(t, tc.want, got, "requests of one epoch commit by command")
			assert.Equal(t, tc.goroutines, s.writeGoroutines.Load()-g0, "goroutines started for the writes")
			tok, found, err := s.PartitionToken(ctx, "p1")
			require.NoError(t, err)
			assert.True(t, found)
			assert.Equal(t, token, tok, "the commit applied")
		})
	}
}

// BenchmarkCommitEpochSmall commits epochs of one message of the keyed count (dedup, state,
// output chunk, sink sequence, token): the fixed cost of an epoch commit.
func BenchmarkCommitEpochSmall(b *testing.B) {
	ctx := context.Background()
	srv, err := ytlocal.Start(ctx, ytlocal.Config{InProcess: true})
	require.NoError(b, err)
	defer srv.Close()
	s, err := Open(ctx, Config{Proxy: srv.Addr(), Path: "//tmp/pipe"})
	require.NoError(b, err)
	defer s.Close()
	require.NoError(b, s.CreatePipeline(ctx))
	lease, err := s.StartLease(ctx, "job-1", time.Minute)
	require.NoError(b, err)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprint("m", i)
		w := &EpochWrite{PartitionID: "p1", Lease: lease, Token: uint64(i + 1),
			Dedup:           []DedupRow{{DedupKey: DedupKey{ComputationID: "c", Key: []byte("k1"), KeyHash: 7, MessageID: id, Compact: true}, SystemTimestamp: 1}},
			States:          []StateRow{{ComputationID: "c", KeyHash: 7, Key: []byte("k1"), Name: "count", State: []byte("2")}},
			OutputsAdd:      []OutputRow{{PartitionID: "p1", Destination: "out", MessageID: id, StreamID: "s", KeyHash: 8, Payload: []byte("{}")}},
			PartitionStates: map[string][]byte{"seq/out": []byte("5")},
		}
		if err := s.CommitEpoch(ctx, w); err != nil {
			b.Fatal(err)
		}
	}
}

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/internal/chserver"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestClickHouseExactlyOnceUnderFaults runs queue → NumberEvents (keyed by user, a per-user
// sequence number in state; examples/clickhouse_events) → TClickHouseBatchingSink into a
// MergeTree table with non_replicated_deduplication_window on a real ClickHouse server
// (chDB), with the yt-flow binary as separate controller and worker processes, while workers
// are killed (SIGKILL), desired_partition_count of the keyed computation changes from 2 to 3
// mid-run (the sink's tokens must survive the repartitioning), a worker is frozen (SIGSTOP)
// past its Lease and resumed, and the leader controller is killed. chDB's server aborts when a
// client dies in the middle of an INSERT: its supervisor (internal/chserver) starts it again on
// its data, as a service manager would, which adds a crash of the target to the faults. The table must hold every
// one of the 50,000 events exactly once — count() and uniqExact(id) both 50,000 — and each
// user's events numbered 1..n once each. E2E_CH_MESSAGES sizes the input.
func TestClickHouseExactlyOnceUnderFaults(t *testing.T) {
	testClickHouseUnderFaults(t, false)
}

// TestClickHouseShardedExactlyOnceUnderFaults is TestClickHouseExactlyOnceUnderFaults with
// TShardedClickHouseBatchingSink over two independent servers (shards a and b, sharded by
// user): every event is in exactly one shard, once.
func TestClickHouseShardedExactlyOnceUnderFaults(t *testing.T) {
	testClickHouseUnderFaults(t, true)
}

const chEventsTable = `CREATE TABLE events (id UInt64, user String, action String, user_seq Int64)
ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 100000`

func testClickHouseUnderFaults(t *testing.T, sharded bool) {
	if testing.Short() {
		t.Skip("e2e fault test")
	}
	sd := seed(t)
	rng := rand.New(rand.NewPCG(sd, 3))
	total := 50000
	if v := os.Getenv("E2E_CH_MESSAGES"); v != "" {
		fmt.Sscan(v, &total)
	}
	var servers []*chserver.Server
	for range map[bool]int{false: 1, true: 2}[sharded] {
		servers = append(servers, chserver.Start(t))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	conns := make([]clickhouse.Conn, len(servers))
	for i, s := range servers {
		conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{s.TCPAddr}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		if err := conn.Exec(ctx, chEventsTable); err != nil {
			t.Fatal(err)
		}
		conns[i] = conn
	}

	c := NewCluster(t)
	name := map[bool]string{false: "clickhouse", true: "clickhouse-sharded"}[sharded]
	root := c.Root(name)
	wc := &WordCount{C: c, Root: root, Path: root + "/pipeline", Store: c.Store(root + "/pipeline")}
	for _, ut := range []ytstore.UserTable{
		{Path: root + "/input", Kind: ytstore.UserQueue, TabletCount: 2, Schema: schema.Schema{Columns: []schema.Column{
			{Name: "id", Type: schema.TypeUint64}, {Name: "user", Type: schema.TypeString}, {Name: "action", Type: schema.TypeString}}}},
		{Path: root + "/consumer", Kind: ytstore.UserConsumer, Queue: root + "/input"},
	} {
		if err := wc.Store.EnsureUserTable(ctx, ut); err != nil {
			t.Fatal(err)
		}
	}
	perUser := map[string]int{}
	rows := make([]map[string]any, 0, 1000)
	for i := range total {
		user := fmt.Sprintf("u%03d", rng.IntN(300))
		perUser[user]++
		rows = append(rows, map[string]any{"id": uint64(i + 1), "user": user, "action": "view", "$tablet_index": int64(i % 2)})
		if len(rows) == cap(rows) || i == total-1 {
			if err := wc.Store.InsertRows(ctx, root+"/input", rows); err != nil {
				t.Fatal(err)
			}
			rows = rows[:0]
		}
	}

	sink := fmt.Sprintf(`sink_class_name = "NYT::NFlow::TClickHouseBatchingSink";
                        parameters = {hosts = [%q]; database = "default"; table = "events"};`, servers[0].TCPAddr)
	if sharded {
		sink = fmt.Sprintf(`sink_class_name = "NYT::NFlow::TShardedClickHouseBatchingSink";
                        parameters = {shard_hosts = {a = [%q]; b = [%q]}; sharding_key_columns = ["user"]; database = "default"; table = "events"};`,
			servers[0].TCPAddr, servers[1].TCPAddr)
	}
	wc.SpecFile = filepath.Join(t.TempDir(), "pipeline.yson")
	if err := os.WriteFile(wc.SpecFile, []byte(strings.NewReplacer("ROOT", root, "SINK", sink).Replace(chEventsSpec)), 0o644); err != nil {
		t.Fatal(err)
	}
	wc.StartPipeline(t)

	fl := NewFleet(t, rng, func(n string) *Proc { return wc.Controller(t, n) }, func(n string) *Proc { return wc.Worker(t, n) },
		[]string{"controller-a", "controller-b"}, 3)
	inserted := func() int {
		n := 0
		for _, conn := range conns {
			var c uint64
			if err := conn.QueryRow(ctx, "SELECT count() FROM events").Scan(&c); err == nil {
				n += int(c)
			}
		}
		return n
	}
	waitProgress := func(atLeast int) {
		Eventually(t, 3*time.Minute, func() (bool, string) {
			fl.Supervise()
			p := inserted()
			return p >= atLeast || wc.State() == "completed", fmt.Sprintf("inserted %d of %d", p, atLeast)
		})
	}
	kill := func(at int) {
		waitProgress(at)
		n, p := fl.RandomWorker()
		t.Logf("kill -9 %s (pid %d) at %d inserted", n, p.Pid(), inserted())
		p.Kill()
		fl.Drop(n)
		time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
		fl.AddWorker()
	}

	kill(total / 10)
	waitProgress(total / 5)
	t.Logf("desired_partition_count of number 2 -> 3 at %d inserted", inserted())
	setPartitions(t, wc, "number", 3)
	kill(total * 3 / 10)

	waitProgress(total * 2 / 5)
	if wc.State() != "completed" {
		zname, zombie := fl.RandomWorker()
		t.Logf("SIGSTOP %s (pid %d) at %d inserted", zname, zombie.Pid(), inserted())
		freezeUntilFenced(t, wc.Store, zname, zombie, func() {
			fl.Drop(zname)
			fl.AddWorker()
		})
		t.Logf("SIGCONT %s", zname)
		if err := zombie.Resume(); err != nil {
			t.Fatal(err)
		}
	}

	if wc.State() != "completed" {
		var leader *Proc
		Eventually(t, time.Minute, func() (bool, string) {
			leader = leaderOf(t, wc, fl.Ctrl)
			return leader != nil, "no leader controller"
		})
		t.Logf("kill -9 leader controller %s (pid %d) at %d inserted", leader.Name, leader.Pid(), inserted())
		fl.KilledLeader = leader
		leader.Kill()
	}

	Eventually(t, 8*time.Minute, func() (bool, string) {
		fl.Supervise()
		st := wc.State()
		return st == "completed", fmt.Sprintf("pipeline %q, inserted %d of %d", st, inserted(), total)
	})

	for i, s := range servers {
		// chDB's server aborts now and then when a client dies mid-INSERT; its supervisor
		// (internal/chserver) starts it again on its data, as a service manager would.
		t.Logf("ClickHouse server %d restarted by its supervisor %d times", i, s.Restarts())
	}
	// Every event exactly once, in exactly one shard.
	seen := map[uint64]int{}
	seqs := map[string][]int64{}
	for i, conn := range conns {
		r, err := conn.Query(ctx, "SELECT id, user, user_seq FROM events")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for r.Next() {
			var id uint64
			var user string
			var seq int64
			if err := r.Scan(&id, &user, &seq); err != nil {
				t.Fatal(err)
			}
			seen[id]++
			seqs[user] = append(seqs[user], seq)
			n++
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		t.Logf("server %d holds %d rows", i, n)
		if sharded && n == 0 {
			t.Errorf("shard %d got no row", i)
		}
	}
	dups := 0
	for _, k := range seen {
		if k > 1 {
			dups++
		}
	}
	if len(seen) != total || dups > 0 {
		t.Errorf("%d distinct ids of %d, %d ids more than once", len(seen), total, dups)
	}
	badUsers := 0
	for user, want := range perUser {
		s := seqs[user]
		slices.Sort(s)
		ok := len(s) == want
		for i := 0; ok && i < len(s); i++ {
			ok = s[i] == int64(i+1)
		}
		if !ok {
			badUsers++
			if badUsers <= 3 {
				t.Errorf("user %s: %d events, numbers %v…, want 1..%d", user, len(s), s[:min(len(s), 10)], want)
			}
		}
	}
	if badUsers > 0 {
		t.Errorf("%d users not numbered 1..n exactly once", badUsers)
	}
}

const chEventsSpec = `{
    path = "ROOT/pipeline";
    spec = {
        computations = {
            read = {
                computation_class_name = "NYT::NFlow::TSwiftPassthroughOrderedSourceComputation";
                source_streams = {
                    clicks = {
                        source_class_name = "NYT::NFlow::TQueueSource";
                        parameters = {queue_path = "ROOT/input"; consumer_path = "ROOT/consumer"; finite = %true};
                    };
                };
                output_stream_ids = ["events"];
            };
            number = {
                computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
                processing_function = "NumberEvents";
                group_by_schema = [
                    {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(user)"};
                    {name = "user"; type = "string"; required = %true};
                ];
                input_stream_ids = ["events"];
                output_stream_ids = ["numbered"];
                sinks = {
                    clickhouse = {
                        input_stream_ids = ["numbered"];
                        SINK
                    };
                };
            };
        };
        streams = {
            events = {schema = [
                {name = "id"; type = "uint64"; required = %true};
                {name = "user"; type = "string"; required = %true};
                {name = "action"; type = "string"; required = %true};
            ]};
            numbered = {schema = [
                {name = "id"; type = "uint64"; required = %true};
                {name = "user"; type = "string"; required = %true};
                {name = "action"; type = "string"; required = %true};
                {name = "user_seq"; type = "int64"; required = %true};
            ]};
        };
    };
    dynamic_spec = {
        computations = {
            read = {batch_duration = 100; parameters = {desired_partition_count = 2}; max_rows_per_batch = 100};
            number = {batch_duration = 100; parameters = {desired_partition_count = 2}; max_rows_per_batch = 100};
        };
    };
}`

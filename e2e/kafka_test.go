package e2e

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ytflow/yt-flow/ytstore"
)

// TestKafkaExactlyOnceUnderFaults runs Kafka topic → KafkaWords → CountWords (keyed running
// count) → TKafkaSink (transactions, the default) into another topic, with the yt-flow binary
// as separate controller and worker processes while workers are killed (SIGKILL), a worker is
// frozen (SIGSTOP) past its Lease and resumed, and the leader controller is killed. The broker
// is kfake in the test process, on loopback. A read_committed consumer of the output topic
// must see, per word, strictly increasing counts (per-key order, no count twice) ending at the
// word's exact count. E2E_MESSAGES sizes the input (default 100,000 records).
func TestKafkaExactlyOnceUnderFaults(t *testing.T) {
	testKafkaUnderFaults(t, "exactly_once")
}

// TestKafkaAtLeastOnceUnderFaults is TestKafkaExactlyOnceUnderFaults with the sink's
// delivery_guarantee = at_least_once (the idempotent producer, no transactions): counts may
// repeat after a restart, but none is lost — every word's count reaches its exact total.
func TestKafkaAtLeastOnceUnderFaults(t *testing.T) {
	testKafkaUnderFaults(t, "at_least_once")
}

func testKafkaUnderFaults(t *testing.T, guarantee string) {
	if testing.Short() {
		t.Skip("e2e fault test")
	}
	sd := seed(t)
	rng := rand.New(rand.NewPCG(sd, 1))
	c := NewCluster(t)
	total := messages(100000)
	kp := NewKafkaCount(t, c, "kafka-"+strings.ReplaceAll(guarantee, "_", "-"), KafkaCountOptions{
		Messages: total, Words: 1000, InputPartitions: 2, OutputPartitions: 3, CountPartitions: 4,
		Guarantee: guarantee, MaxRowsPerBatch: 100, Seed: sd,
	})
	kp.StartPipeline(t)
	fl := NewFleet(t, rng, func(n string) *Proc { return kp.Controller(t, n) }, func(n string) *Proc { return kp.Worker(t, n) },
		[]string{"controller-a", "controller-b"}, 3)
	out := kp.Consume(t)
	// 100,000 records at 2,000 a second: about 50s of input, during which the faults land.
	fed := kp.Feed(t, 2000)
	waitProgress := func(atLeast int) {
		Eventually(t, 3*time.Minute, func() (bool, string) {
			fl.Supervise()
			p := out.Progress(t)
			return p >= atLeast, fmt.Sprintf("output counts reach %d of %d", p, atLeast)
		})
	}

	// 1. Kill workers with SIGKILL at random points.
	for i := range 3 {
		waitProgress(total * (i + 1) / 8)
		name, p := fl.RandomWorker()
		t.Logf("kill -9 %s (pid %d) at %d counted", name, p.Pid(), out.Progress(t))
		p.Kill()
		fl.Drop(name)
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		fl.AddWorker()
	}

	// 2. Freeze a worker past its Lease, then resume it: its producer is fenced by the
	// transactional id its successor took over, and its epoch commit is refused.
	waitProgress(total / 2)
	zname, zombie := fl.RandomWorker()
	t.Logf("SIGSTOP %s (pid %d) at %d counted", zname, zombie.Pid(), out.Progress(t))
	freezeUntilFenced(t, kp.Store, zname, zombie, func() {
		fl.Drop(zname)
		fl.AddWorker()
	})
	t.Logf("SIGCONT %s", zname)
	if err := zombie.Resume(); err != nil {
		t.Fatal(err)
	}

	// 3. Kill the leader controller; the standby takes over.
	var leader *Proc
	Eventually(t, time.Minute, func() (bool, string) {
		leader = kafkaLeaderOf(t, kp.Store, fl.Ctrl)
		return leader != nil, "no leader controller"
	})
	t.Logf("kill -9 leader controller %s (pid %d) at %d counted", leader.Name, leader.Pid(), out.Progress(t))
	fl.KilledLeader = leader
	leader.Kill()
	Eventually(t, time.Minute, func() (bool, string) {
		l := kafkaLeaderOf(t, kp.Store, fl.Ctrl)
		return l != nil && l != leader, "no new leader yet"
	})

	if err := <-fed; err != nil {
		t.Fatalf("feed the input topic: %v", err)
	}
	// The Kafka source never ends: the run is over when every word's count is reached.
	Eventually(t, 8*time.Minute, func() (bool, string) {
		fl.Supervise()
		p := out.Progress(t)
		return p >= total, fmt.Sprintf("output counts reach %d of %d", p, total)
	})
	// Whatever a zombie or a retry could still write lands within a few epochs: read on
	// for a while after the totals were reached.
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		out.Progress(t)
	}
	if m := leaseLostRE.FindString(zombie.Log()); m != "" {
		t.Logf("zombie %s after SIGCONT: %s", zname, m)
	}
	if guarantee == "exactly_once" {
		out.CheckExactlyOnce(t, kp.Expected)
	} else {
		out.CheckNoneLost(t, kp.Expected)
	}
}

// KafkaCount is the Kafka e2e pipeline: topic ROOT-in (TKafkaSource) → KafkaWords →
// CountWords keyed by [farm_hash(word), word] → TKafkaSink into topic ROOT-out, record key
// the word and value the running count. The broker is kfake in the test process.
type KafkaCount struct {
	C        *Cluster
	Path     string
	SpecFile string
	Brokers  []string
	In, Out  string
	// Expected word → count of the input.
	Expected map[string]int64
	Store    *ytstore.Store
	input    []*kgo.Record // what Feed writes, in order
	opts     KafkaCountOptions
}

// Feed writes the input into the input topic at about perSecond records a second from a
// goroutine of its own, so that the faults of a test land while records still arrive (the
// pipeline drains a topic written all at once before the first fault). The returned channel
// yields the goroutine's error (nil once all is written) and is closed; the goroutine stops
// when the test ends.
func (k *KafkaCount) Feed(t *testing.T, perSecond int) <-chan error {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	stopped := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-stopped
		cl.Close()
	})
	const chunk = 100
	every := time.Duration(chunk) * time.Second / time.Duration(perSecond)
	go func() {
		defer close(stopped)
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := 0; i < len(k.input); i += chunk {
			if err := cl.ProduceSync(ctx, k.input[i:min(i+chunk, len(k.input))]...).FirstErr(); err != nil {
				done <- fmt.Errorf("produce input records %d..: %w", i, err)
				return
			}
			select {
			case <-ctx.Done():
				done <- ctx.Err()
				return
			case <-tick.C:
			}
		}
		done <- nil
	}()
	return done
}

// KafkaCountOptions shape the Kafka pipeline.
type KafkaCountOptions struct {
	Messages, Words                                    int
	InputPartitions, OutputPartitions, CountPartitions int
	// Guarantee is the sink's delivery_guarantee (exactly_once or at_least_once).
	Guarantee       string
	MaxRowsPerBatch int
	Seed            uint64
	// BrokerLater points the spec at a loopback port nothing listens on; StartBroker starts
	// kfake there. SkipInputTopic leaves the input topic uncreated (CreateInputTopic).
	BrokerLater, SkipInputTopic bool
	// MetadataTimeout is the source's metadata_timeout (default Flow's 30s).
	MetadataTimeout time.Duration
}

// StartBroker starts kfake (on the port of Brokers with BrokerLater) and creates the topics
// (the input topic only without SkipInputTopic).
func (k *KafkaCount) StartBroker(t *testing.T) {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1)} // listens on 127.0.0.1
	if k.opts.BrokerLater {
		_, port, _ := net.SplitHostPort(k.Brokers[0])
		n, _ := strconv.Atoi(port)
		opts = append(opts, kfake.Ports(n))
	}
	kf, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kf.Close)
	k.Brokers = kf.ListenAddrs()
	topics := map[string]int{k.Out: k.opts.OutputPartitions}
	if !k.opts.SkipInputTopic {
		topics[k.In] = k.opts.InputPartitions
	}
	k.createTopics(t, topics)
}

// CreateInputTopic creates the input topic (after SkipInputTopic).
func (k *KafkaCount) CreateInputTopic(t *testing.T) {
	t.Helper()
	k.createTopics(t, map[string]int{k.In: k.opts.InputPartitions})
}

func (k *KafkaCount) createTopics(t *testing.T, topics map[string]int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(cl)
	for topic, n := range topics {
		resp, err := adm.CreateTopic(ctx, int32(n), 1, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("create topic %s: %v", topic, err)
		}
	}
}

// NewKafkaCount starts kfake (unless BrokerLater), creates the topics, draws the input (one word per record,
// round-robin over the input partitions; Feed writes it) and writes the spec file.
func NewKafkaCount(t *testing.T, c *Cluster, name string, o KafkaCountOptions) *KafkaCount {
	t.Helper()
	root := c.Root(name)
	k := &KafkaCount{C: c, Path: root + "/pipeline", In: name + "-in", Out: name + "-out",
		Expected: map[string]int64{}, opts: o}
	k.Store = c.Store(k.Path)
	if o.BrokerLater {
		// A loopback port nothing listens on until StartBroker.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		k.Brokers = []string{ln.Addr().String()}
		ln.Close()
	} else {
		k.StartBroker(t)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 7))
	k.input = make([]*kgo.Record, 0, o.Messages)
	for i := range o.Messages {
		word := fmt.Sprintf("w%04d", rng.IntN(o.Words))
		k.Expected[word]++
		k.input = append(k.input, &kgo.Record{Topic: k.In, Partition: int32(i % o.InputPartitions), Value: []byte(word)})
	}
	text := strings.NewReplacer("PATH", k.Path, "BROKERS", strings.Join(k.Brokers, ","), "IN", k.In, "OUT", k.Out,
		"GROUP", name, "GUARANTEE", o.Guarantee, "SPLITN", fmt.Sprint(o.InputPartitions), "COUNTN", fmt.Sprint(o.CountPartitions),
		"ROWS", fmt.Sprint(cmpOr(o.MaxRowsPerBatch, 1000)), "MDTIMEOUT", fmt.Sprint(cmp.Or(o.MetadataTimeout, 30*time.Second).Milliseconds())).Replace(kafkaCountSpec)
	k.SpecFile = filepath.Join(t.TempDir(), "pipeline.yson")
	if err := os.WriteFile(k.SpecFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return k
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

const kafkaCountSpec = `{
    path = "PATH";
    spec = {
        resources = {
            KafkaClient = {resource_class_name = "NYT::NFlow::TKafkaClient"; parameters = {bootstrap_servers = "BROKERS"}};
        };
        computations = {
            split = {
                computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation";
                processing_function = "KafkaWords";
                source_streams = {
                    records = {
                        source_class_name = "NYT::NFlow::TKafkaSource";
                        parameters = {topic = "IN"; group_id = "GROUP"; metadata_timeout = MDTIMEOUT};
                    };
                };
                output_stream_ids = ["words"];
            };
            count = {
                computation_class_name = "NYT::NFlow::TProcessFunctionComputation";
                processing_function = "CountWords";
                group_by_schema = [
                    {name = "hash"; type = "uint64"; required = %true; expression = "farm_hash(word)"};
                    {name = "word"; type = "string"; required = %true};
                ];
                input_stream_ids = ["words"];
                output_stream_ids = ["counts"];
                sinks = {
                    out = {
                        sink_class_name = "NYT::NFlow::TKafkaSink";
                        input_stream_ids = ["counts"];
                        parameters = {topic = "OUT"; key_column = "word"; payload_column = "count"; delivery_guarantee = "GUARANTEE"};
                    };
                };
            };
        };
        streams = {
            words = {schema = [{name = "word"; type = "string"; required = %true}]};
            counts = {schema = [{name = "hash"; type = "uint64"}; {name = "word"; type = "string"}; {name = "count"; type = "int64"}]};
        };
    };
    dynamic_spec = {
        computations = {
            split = {batch_duration = 100; max_rows_per_batch = ROWS; parameters = {desired_partition_count = SPLITN}};
            count = {batch_duration = 100; max_rows_per_batch = ROWS; parameters = {desired_partition_count = COUNTN}};
        };
    };
}
`

// StartPipeline runs `yt-flow start`. When the test fails, `yt-flow status` is logged.
func (k *KafkaCount) StartPipeline(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			p := Start(t, "status", "status", "--proxy", k.C.Proxy, "--path", k.Path)
			p.Wait(30 * time.Second)
			t.Logf("yt-flow status:\n%s", p.Log())
		}
	})
	p := Start(t, "start", "start", "--proxy", k.C.Proxy, "--spec", k.SpecFile)
	if err, ok := p.Wait(2 * time.Minute); !ok || err != nil {
		t.Fatalf("yt-flow start: %v (exited %v)\n%s", err, ok, p.Log())
	}
}

// Controller starts a `yt-flow controller` process.
func (k *KafkaCount) Controller(t *testing.T, name string) *Proc {
	return Start(t, name, "controller", "--proxy", k.C.Proxy, "--path", k.Path, "--lease-timeout", "10s", "--session-timeout", "3s")
}

// Worker starts a `yt-flow worker` process.
func (k *KafkaCount) Worker(t *testing.T, name string) *Proc {
	return Start(t, name, "worker", "--proxy", k.C.Proxy, "--path", k.Path, "--id", name)
}

// kafkaLeaderOf returns the controller process whose pid is in @leader_controller_address.
func kafkaLeaderOf(t *testing.T, st *ytstore.Store, ctrl []*Proc) *Proc {
	a, err := st.Attributes(t.Context())
	if err != nil {
		return nil
	}
	for _, p := range ctrl {
		if !p.Exited() && strings.HasSuffix(a.LeaderControllerAddress, fmt.Sprintf("pid:%d", p.Pid())) {
			return p
		}
	}
	return nil
}

// KafkaOutput reads the output topic with a read_committed consumer from its start and keeps
// every record's count per key, in partition order.
type KafkaOutput struct {
	cl *kgo.Client
	// counts per key (the word), in the order the consumer saw them.
	counts map[string][]int64
	bad    []string
}

// Consume starts the read_committed consumer of the output topic.
func (k *KafkaCount) Consume(t *testing.T) *KafkaOutput {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...), kgo.ConsumeTopics(k.Out),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &KafkaOutput{cl: cl, counts: map[string][]int64{}}
}

// Progress polls what is there (for at most a second: records keep coming while the
// pipeline runs) and returns the sum over keys of the highest count seen.
func (o *KafkaOutput) Progress(t *testing.T) int {
	t.Helper()
	for start := time.Now(); time.Since(start) < time.Second; {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		fs := o.cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			v, err := strconv.ParseInt(string(r.Value), 10, 64)
			if err != nil {
				o.bad = append(o.bad, fmt.Sprintf("partition %d offset %d: value %q is not a count", r.Partition, r.Offset, r.Value))
				return
			}
			o.counts[string(r.Key)] = append(o.counts[string(r.Key)], v)
		})
		if n == 0 {
			break
		}
	}
	p := 0
	for _, cs := range o.counts {
		p += int(slices.Max(cs))
	}
	return p
}

// CheckExactlyOnce asserts every key's counts strictly increase (per-key order, none twice)
// and end at the expected count.
func (o *KafkaOutput) CheckExactlyOnce(t *testing.T, expected map[string]int64) {
	t.Helper()
	bad := slices.Clone(o.bad)
	records := 0
	for word, cs := range o.counts {
		records += len(cs)
		for i := 1; i < len(cs); i++ {
			if cs[i] <= cs[i-1] {
				bad = append(bad, fmt.Sprintf("%s: count %d after %d (record %d of the key)", word, cs[i], cs[i-1], i))
			}
		}
	}
	bad = append(bad, finals(o.counts, expected)...)
	report(t, "exactly-once violated", bad)
	t.Logf("read_committed consumer: %d records for %d keys, every count once and in order", records, len(o.counts))
}

// CheckNoneLost asserts every key's highest count is its expected count (at-least-once: a
// count may repeat, none is missing at the end).
func (o *KafkaOutput) CheckNoneLost(t *testing.T, expected map[string]int64) {
	t.Helper()
	bad := append(slices.Clone(o.bad), finals(o.counts, expected)...)
	report(t, "at-least-once violated", bad)
	records, dups := 0, 0
	for _, cs := range o.counts {
		records += len(cs)
		seen := map[int64]bool{}
		for _, c := range cs {
			if seen[c] {
				dups++
			}
			seen[c] = true
		}
	}
	t.Logf("consumer: %d records for %d keys, %d repeated counts, none lost", records, len(o.counts), dups)
}

func finals(counts map[string][]int64, expected map[string]int64) []string {
	var bad []string
	for word, n := range expected {
		cs := counts[word]
		if len(cs) == 0 {
			bad = append(bad, fmt.Sprintf("%s: no count, want %d", word, n))
		} else if m := slices.Max(cs); m != n {
			bad = append(bad, fmt.Sprintf("%s: counts reach %d, want %d", word, m, n))
		}
	}
	for word := range counts {
		if _, ok := expected[word]; !ok {
			bad = append(bad, word+": unexpected key")
		}
	}
	return bad
}

func report(t *testing.T, what string, bad []string) {
	t.Helper()
	if len(bad) == 0 {
		return
	}
	sort.Strings(bad)
	if len(bad) > 20 {
		bad = append(bad[:20], fmt.Sprintf("… and %d more", len(bad)-20))
	}
	t.Fatalf("%s:\n%s", what, strings.Join(bad, "\n"))
}

package peers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Config shapes a benchmark run. The zero value of a field is its default.
type Config struct {
	// N is the number of measured input records (default 20,000).
	N int
	// Keys is the number of distinct keys (default 1,000).
	Keys int
	// Partitions of the input and the output topic, and of every job's keyed stage (default 2).
	Partitions int
	// Rounds is how many times each job runs; the table gives medians (default 3).
	Rounds int
	// Rate feeds the measured input at this many records a second; 0 produces it as fast as
	// the producer can (burst).
	Rate int
	// Seed draws the input; a round r uses Seed+r for all four jobs (default 1).
	Seed uint64
	// WarmupTimeout bounds the wait for a job's first outputs (default 2 minutes).
	WarmupTimeout time.Duration
	// RunTimeout bounds the wait for all the outputs of a measured run (default 5 minutes).
	RunTimeout time.Duration
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.N, 20000)
	def(&c.Keys, 1000)
	def(&c.Partitions, 2)
	def(&c.Rounds, 3)
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.WarmupTimeout <= 0 {
		c.WarmupTimeout = 2 * time.Minute
	}
	if c.RunTimeout <= 0 {
		c.RunTimeout = 5 * time.Minute
	}
	return c
}

// env is what a job runs against: the broker, its own fresh topics and group.
type env struct {
	Brokers    []string
	In, Out    string
	Group      string
	Partitions int
	// probe is where a yt-flow job publishes its counters (the epoch-part breakdown).
	probe *probe
}

// peer is one of the four ways to run the job.
type peer struct {
	name      string
	guarantee string
	// exact: the output is verified as exactly-once (every count of a key once, in order).
	exact bool
	// direct: the feeder writes the output records itself (raw produce); run only waits.
	direct bool
	// run runs the job until ctx ends and returns after everything it started has stopped;
	// an error other than ctx's ends the measurement as a failure.
	run func(ctx context.Context, e env) error
}

// record is one input record: its key and the running count of the key it makes.
type record struct {
	key   string
	count int64
}

// input is the seeded input of a round: one warm-up record per key (count 1 each) and N
// measured records drawn uniformly from the keys.
type input struct {
	warmup, measured []record
	want             map[string]int64 // final count per key
}

func newInput(c Config, round int) input {
	rng := rand.New(rand.NewPCG(c.Seed+uint64(round), 42))
	in := input{want: make(map[string]int64, c.Keys)}
	keys := make([]string, c.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%04d", i)
		in.want[keys[i]] = 1
		in.warmup = append(in.warmup, record{key: keys[i], count: 1})
	}
	in.measured = make([]record, c.N)
	for i := range in.measured {
		k := keys[rng.IntN(len(keys))]
		in.want[k]++
		in.measured[i] = record{key: k, count: in.want[k]}
	}
	return in
}

// produced is when each measured record was produced, by key and count.
type produced map[string][]time.Time

// feed produces recs to topic with the idempotent producer, keyed (the default partitioner
// hashes the key, so a key always lands in one partition): value the key, or with counts the
// running count (raw). rate > 0 paces the records at rate a second from the first one; 0
// produces them as fast as the producer takes them. It returns when every record is acked.
func feed(ctx context.Context, cl *kgo.Client, topic string, recs []record, counts bool, rate int, at produced) error {
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			first = cmpErr(first, err)
			mu.Unlock()
		}
		wg.Done()
	}
	start := time.Now()
	for i, r := range recs {
		if rate > 0 {
			due := start.Add(time.Duration(i) * time.Second / time.Duration(rate))
			if d := time.Until(due); d > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(d):
				}
			}
		}
		v := r.key
		if counts {
			v = strconv.FormatInt(r.count, 10)
		}
		now := time.Now()
		if at != nil {
			ts := at[r.key]
			for int64(len(ts)) <= r.count {
				ts = append(ts, time.Time{})
			}
			ts[r.count] = now
			at[r.key] = ts
		}
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(r.key), Value: []byte(v), Timestamp: now}, done)
	}
	wg.Wait()
	return first
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// mark is the moment the reader saw a target reached: wall time and process CPU time.
type mark struct {
	at  time.Time
	cpu time.Duration
}

// reader consumes the output topic from its start with read_committed and keeps, per key,
// every count in the order read and when each was first read. Run owns the state until it
// returns; await and quiet talk to it under mu.
type reader struct {
	cl *kgo.Client

	mu      sync.Mutex
	counts  map[string][]int64
	firstAt map[string]map[int64]time.Time
	bad     []string
	sumMax  int64 // sum over keys of the highest count read
	maxOf   map[string]int64
	target  int64
	reached chan mark
	polls   int64 // empty polls so far
}

func newReader(brokers []string, topic string) (*reader, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return nil, fmt.Errorf("peers: reader of %s: %w", topic, err)
	}
	return &reader{cl: cl, counts: map[string][]int64{}, firstAt: map[string]map[int64]time.Time{}, maxOf: map[string]int64{}}, nil
}

// Run polls until ctx ends and closes the client.
func (r *reader) Run(ctx context.Context) error {
	defer r.cl.Close()
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		fs := r.cl.PollFetches(pctx)
		cancel()
		now := time.Now()
		var errs []string
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				errs = append(errs, fmt.Sprintf("fetch %s/%d: %v", t, p, err))
			}
		})
		r.mu.Lock()
		r.bad = append(r.bad, errs...)
		n := 0
		fs.EachRecord(func(rec *kgo.Record) {
			n++
			k := string(rec.Key)
			c, err := strconv.ParseInt(string(rec.Value), 10, 64)
			if err != nil {
				r.bad = append(r.bad, fmt.Sprintf("%s/%d offset %d: value %q is not a count", rec.Topic, rec.Partition, rec.Offset, rec.Value))
				return
			}
			r.counts[k] = append(r.counts[k], c)
			fa := r.firstAt[k]
			if fa == nil {
				fa = map[int64]time.Time{}
				r.firstAt[k] = fa
			}
			if _, ok := fa[c]; !ok {
				fa[c] = now
			}
			if c > r.maxOf[k] {
				r.sumMax += c - r.maxOf[k]
				r.maxOf[k] = c
			}
		})
		if n == 0 {
			r.polls++
		}
		if r.reached != nil && r.sumMax >= r.target {
			r.reached <- mark{at: now, cpu: cpuTime()}
			r.reached = nil
		}
		r.mu.Unlock()
	}
	return nil
}

// await returns a channel that yields the mark when the sum over keys of the highest count
// read reaches target (every key's final count, when target is the sum of the finals).
func (r *reader) await(target int64) <-chan mark {
	ch := make(chan mark, 1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sumMax >= target {
		ch <- mark{at: time.Now(), cpu: cpuTime()}
		return ch
	}
	r.target, r.reached = target, ch
	return ch
}

// quiet waits until the reader has polled empty twice after the call: what was committed
// before it is read.
func (r *reader) quiet(ctx context.Context) error {
	r.mu.Lock()
	from := r.polls
	r.mu.Unlock()
	for {
		r.mu.Lock()
		n := r.polls
		r.mu.Unlock()
		if n >= from+2 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// cpuTime is the user+system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// broker is the in-process Kafka broker of a benchmark run with an admin client.
type broker struct {
	cluster *kfake.Cluster
	cl      *kgo.Client
	adm     *kadm.Client
}

func startBroker() (*broker, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1)) // listens on 127.0.0.1
	if err != nil {
		return nil, fmt.Errorf("peers: start kfake: %w", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("peers: admin client: %w", err)
	}
	return &broker{cluster: c, cl: cl, adm: kadm.NewClient(cl)}, nil
}

func (b *broker) brokers() []string { return b.cluster.ListenAddrs() }

func (b *broker) createTopics(ctx context.Context, partitions int, topics ...string) error {
	for _, t := range topics {
		resp, err := b.adm.CreateTopic(ctx, int32(partitions), 1, nil, t)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("peers: create topic %s: %w", t, err)
		}
	}
	return nil
}

// deleteTopicsWithPrefix drops what a run left on the broker (its topics and goka's table).
func (b *broker) deleteTopicsWithPrefix(ctx context.Context, prefix string) {
	ts, err := b.adm.ListTopics(ctx)
	if err != nil {
		return
	}
	var drop []string
	for _, t := range ts.Names() {
		if len(t) >= len(prefix) && t[:len(prefix)] == prefix {
			drop = append(drop, t)
		}
	}
	if len(drop) > 0 {
		_, _ = b.adm.DeleteTopics(ctx, drop...)
	}
}

func (b *broker) close() {
	b.cl.Close()
	b.cluster.Close()
}

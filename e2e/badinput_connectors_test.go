package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestKafkaBrokerAndTopicMissing runs the Kafka count (exactly-once sink) through the
// binary while its input is not there yet. First the broker of bootstrap_servers is down:
// `yt-flow status` shows the controller's event naming the source's topic, the broker, the
// metadata_timeout and what to check; no source partition exists. Then the broker is up without the
// input topic: the event names the topic and says to create it. Once the topic exists and
// holds the input, the pipeline goes on by itself and a read_committed consumer sees every
// count exactly once: nothing was lost on the way.
func TestKafkaBrokerAndTopicMissing(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	c := NewCluster(t)
	const total = 300
	kp := NewKafkaCount(t, c, "kafka-missing", KafkaCountOptions{
		Messages: total, Words: 20, InputPartitions: 2, OutputPartitions: 1, CountPartitions: 1,
		Guarantee: "exactly_once", Seed: 1, BrokerLater: true, SkipInputTopic: true, MetadataTimeout: 2 * time.Second,
	})
	dead := kp.Brokers[0]
	kp.StartPipeline(t)
	ctrl := kp.Controller(t, "controller")
	kp.Worker(t, "worker-0")
	status := func() string {
		p := Start(t, "status", "status", "--proxy", c.Proxy, "--path", kp.Path)
		if _, ok := p.Wait(time.Minute); !ok {
			t.Fatalf("yt-flow status did not exit:\n%s", p.Log())
		}
		return p.Log()
	}
	waitStatus := func(want string) string {
		var s string
		Eventually(t, time.Minute, func() (bool, string) {
			s = status()
			return strings.Contains(s, want), fmt.Sprintf("yt-flow status does not say %q yet:\n%s", want, tail(s, 3000))
		})
		return s
	}

	s := waitStatus("check bootstrap_servers")
	requireIn(t, "yt-flow status", s, "source records: cannot list its partitions", "kafka topic "+kp.In, "(brokers "+dead+", metadata_timeout 2s)",
		"check bootstrap_servers of resource KafkaClient and that the brokers are up")
	requireIn(t, "controller log", ctrl.Log(), "cannot list source partitions", dead)
	for id := range kp.partitionStates(t) {
		if strings.HasPrefix(id, "split/") {
			t.Errorf("source partition %s exists without a broker", id)
		}
	}

	kp.StartBroker(t) // at the address of bootstrap_servers, without the input topic
	s = waitStatus("no such topic")
	requireIn(t, "yt-flow status", s, "kafka topic "+kp.In+": no such topic: create it, or correct topic")

	kp.CreateInputTopic(t)
	out := kp.Consume(t)
	fed := kp.Feed(t, 10000)
	Eventually(t, 2*time.Minute, func() (bool, string) {
		p := out.Progress(t)
		return p == total, fmt.Sprintf("output progress %d of %d", p, total)
	})
	if err := <-fed; err != nil {
		t.Fatal(err)
	}
	out.CheckExactlyOnce(t, kp.Expected)
	requireIn(t, "yt-flow status", status(), "partitions listed again")
}

// partitionStates lists the pipeline's partitions: id → state.
func (k *KafkaCount) partitionStates(t *testing.T) map[string]string {
	t.Helper()
	parts, err := k.Store.Partitions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range parts {
		out[p.PartitionID] = p.State
	}
	return out
}

// httpRecorder is a target of the HTTP sink: it records the body of every POST by its
// Idempotency-Key.
type httpRecorder struct {
	mu    sync.Mutex
	byKey map[string]string
	posts int
}

func (h *httpRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.byKey[r.Header.Get("Idempotency-Key")] = string(b)
	h.posts++
	h.mu.Unlock()
}

// TestHTTPSinkUnreachableURL runs the word count with its async sink replaced by the HTTP sink
// (payload_column word, max_attempt_count 2), whose URL is a loopback port nothing listens on.
// The first message's attempts run out and the sink is broken: the job status and `yt-flow
// status` say so, with the sink, the URL, the attempts and the last error (connection
// refused), and the pipeline does not complete; the counts of the sync table sink, committed
// with the same epochs, are exact. Once a server listens at the URL and the pipeline is
// paused and started, the new sink instance delivers the committed outputs: the pipeline
// completes (its outbox is empty) and every word arrived — nothing was lost.
func TestHTTPSinkUnreachableURL(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	c := NewCluster(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	url := "http://" + addr + "/ingest"
	rows := []map[string]any{
		{"text": "alpha beta", "$tablet_index": int64(0)},
		{"text": "alpha gamma", "$tablet_index": int64(0)},
		{"text": "beta alpha", "$tablet_index": int64(0)},
	}
	want := map[string]int64{"alpha": 3, "beta": 2, "gamma": 1}
	wc := NewBadWordCount(t, c, "httpdown", BadWordCount{Rows: rows, Edit: func(s string) string {
		s = strings.Replace(s, `sink_class_name = "NYT::NFlow::TAsyncQueueSink";`, `sink_class_name = "NYT::NFlow::TAsyncHttpSink";`, 1)
		s = regexp.MustCompile(`parameters = \{queue_path = "[^"]*"; producer_path = "[^"]*"\};`).
			ReplaceAllString(s, fmt.Sprintf(`parameters = {url = %q; payload_column = "word"};`, url))
		return regexp.MustCompile(`(count = \{batch_duration = [^;]*; parameters = \{desired_partition_count = [0-9]+\})`).
			ReplaceAllString(s, `$1; sinks = {out = {parameters = {max_attempt_count = 2; retry_initial_delay = 100; retry_minimum_delay = 100; attempt_timeout = 2000}}}`)
	}})
	if text, _ := os.ReadFile(wc.SpecFile); !strings.Contains(string(text), "TAsyncHttpSink") || !strings.Contains(string(text), "max_attempt_count = 2") {
		t.Fatalf("the spec edit did not apply:\n%s", text)
	}
	_, worker := runBad(t, wc)

	var jobErr string
	Eventually(t, time.Minute, func() (bool, string) {
		for _, e := range wc.JobErrors(t) {
			if strings.Contains(e, "HTTP sink is broken") {
				jobErr = e
				return true, ""
			}
		}
		return false, fmt.Sprintf("no broken HTTP sink in the job statuses yet: %v", wc.JobErrors(t))
	})
	requireIn(t, "job status error", jobErr, "computation count", "deliver to sink/out: HTTP sink is broken until the pipeline is paused and started",
		"async_http sink out: POST "+url, "after 2 attempt(s)", "connection refused")
	requireIn(t, "yt-flow status", wc.Status(t), "HTTP sink is broken until the pipeline is paused and started", url, "connection refused")
	requireIn(t, "worker log", worker.Log(), "async sink broken")
	Eventually(t, time.Minute, func() (bool, string) {
		got := wc.Counts(t)
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("table counts %v, want %v", got, want)
	})
	if s := wc.State(); s == "completed" {
		t.Fatalf("the pipeline completed with its HTTP sink broken")
	}

	rec := &httpRecorder{byKey: map[string]string{}}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen at the sink's URL again: %v", err)
	}
	srv := &http.Server{Handler: rec}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	for _, cmd := range []string{"pause", "start"} {
		args := []string{cmd, "--proxy", c.Proxy, "--path", wc.Path}
		if cmd == "start" {
			args = []string{cmd, "--proxy", c.Proxy, "--spec", wc.SpecFile}
		}
		p := Start(t, cmd, args...)
		if err, ok := p.Wait(time.Minute); !ok || err != nil {
			t.Fatalf("yt-flow %s: %v (exited %v)\n%s", cmd, err, ok, p.Log())
		}
		if cmd == "pause" {
			Eventually(t, time.Minute, func() (bool, string) {
				s := wc.State()
				return s == "paused", fmt.Sprintf("pipeline state %q, want paused", s)
			})
		}
	}
	Eventually(t, 2*time.Minute, func() (bool, string) {
		s := wc.State()
		return s == "completed", fmt.Sprintf("pipeline state %q after the restart with the server up; job errors %v", s, wc.JobErrors(t))
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	words := map[string]bool{}
	for _, w := range rec.byKey {
		words[w] = true
	}
	if len(words) != len(want) || !words["alpha"] || !words["beta"] || !words["gamma"] {
		t.Errorf("the server received the words %v (%d posts, %d keys), want every word of %v", words, rec.posts, len(rec.byKey), want)
	}
}

// TestSinkPayloadColumnTypes: a payload_column of a type the sink cannot send is refused by
// validate and start of the binary, with one line naming the sink's parameter, the column
// and what to name instead: the HTTP sink's must be a string column, the Kafka sinks' a
// string, number or boolean column.
func TestSinkPayloadColumnTypes(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e test")
	}
	dir := t.TempDir()
	for name, tc := range map[string]struct{ sink, want string }{
		"http": {`sink_class_name = "NYT::NFlow::TAsyncHttpSink"; input_stream_ids = ["counts"]; parameters = {url = "http://127.0.0.1:1/x"; payload_column = "count"}`,
			`spec/computations/count/sinks/out/parameters/payload_column: stream "counts" has no string column "count"`},
		"kafka": {`sink_class_name = "NYT::NFlow::TKafkaSink"; input_stream_ids = ["counts"]; parameters = {topic = "t"; payload_column = "meta"}`,
			`spec/computations/count/sinks/out/parameters/payload_column: column "meta" of stream "counts" has type any, which has no record bytes: name a string, number or boolean column`},
	} {
		text := strings.NewReplacer("SINK", tc.sink).Replace(payloadTypeSpec)
		file := filepath.Join(dir, name+".yson")
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range [][]string{{"validate", file}, {"start", "--proxy", "127.0.0.1:1", "--spec", file}} {
			p := Start(t, name+"-"+cmd[0], cmd...)
			err, ok := p.Wait(time.Minute)
			if !ok || err == nil {
				t.Fatalf("%s %s: %v (exited %v)\n%s", cmd[0], name, err, ok, p.Log())
			}
			requireIn(t, cmd[0]+" "+name, p.Log(), tc.want)
			if n := strings.Count(p.Log(), "payload_column"); n != 1 {
				t.Errorf("%s %s: %d lines name payload_column, want 1:\n%s", cmd[0], name, n, p.Log())
			}
		}
	}
}

const payloadTypeSpec = `{
    path = "//tmp/payload_type/pipeline";
    spec = {
        resources = {KafkaClient = {resource_class_name = "NYT::NFlow::TKafkaClient"; parameters = {bootstrap_servers = "127.0.0.1:1"}}};
        computations = {
            split = {
                computation_class_name = "NYT::NFlow::TProcessFunctionSourceComputation";
                processing_function = "SplitWords";
                source_streams = {lines = {source_class_name = "NYT::NFlow::TQueueSource"; parameters = {queue_path = "//tmp/q"; consumer_path = "//tmp/c"}}};
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
                sinks = {out = {SINK}};
            };
        };
        streams = {
            words = {schema = [{name = "word"; type = "string"; required = %true}]};
            counts = {schema = [{name = "hash"; type = "uint64"}; {name = "word"; type = "string"}; {name = "count"; type = "int64"}; {name = "meta"; type = "any"}]};
        };
    };
}
`

package app

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ytflow/yt-flow/job/epoch"
	"github.com/ytflow/yt-flow/ytstore"
)

// TestDeadLettersListDrop: dead-letters list prints the letters an epoch commit wrote (all, or
// of one computation), drop refuses to run without a choice and deletes the chosen ones.
func TestDeadLettersListDrop(t *testing.T) {
	f := newFlowTest(t)
	ctx := context.Background()
	lease, err := f.st.StartLease(ctx, "j", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.st.AbortLease(context.Background(), lease) })
	var letters []ytstore.DeadLetterRow
	for _, k := range []string{"alice", "bob"} {
		key := aggKey(t, k)
		letters = append(letters, ytstore.DeadLetterRow{ComputationID: "agg", KeyHash: epoch.KeyHash(key), Key: epoch.EncodeKey(key),
			MessageID: "m-" + k, StreamID: "in", PartitionID: "agg/0of1", Error: k + " is bad", Attempts: 3})
	}
	token, err := f.st.GenerateTimestamp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.st.CommitEpoch(ctx, &ytstore.EpochWrite{PartitionID: "agg/0of1", Lease: lease, Token: token, DeadLetters: letters}); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		env := &environ{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
		code := runMain(ctx, env, append([]string{"dead-letters"}, append(args, "--proxy", f.proxy, "--path", lifecyclePath)...))
		return code, out.String(), errb.String()
	}
	code, out, errs := run("list")
	if code != 0 || !strings.Contains(out, "m-alice") || !strings.Contains(out, "m-bob") || !strings.Contains(out, "alice is bad") ||
		!strings.Contains(out, "attempts 3") || !strings.Contains(out, "2 dead letters") {
		t.Fatalf("list: %d %q %q", code, out, errs)
	}
	if code, out, _ := run("list", "--computation", "gen"); code != 0 || !strings.Contains(out, "0 dead letters") {
		t.Fatalf("list --computation gen: %d %q", code, out)
	}
	if code, _, errs := run("drop"); code != 2 || !strings.Contains(errs, "--all") {
		t.Fatalf("drop without a choice: %d %q", code, errs)
	}
	if code, out, errs := run("drop", "--message-id", "m-bob"); code != 0 || !strings.Contains(out, "dropped 1") {
		t.Fatalf("drop: %d %q %q", code, out, errs)
	}
	if code, out, _ := run("list"); code != 0 || strings.Contains(out, "m-bob") || !strings.Contains(out, "1 dead letters") {
		t.Fatalf("list after drop: %d %q", code, out)
	}
	if code, out, errs := run("drop", "--all"); code != 0 || !strings.Contains(out, "dropped 1") {
		t.Fatalf("drop --all: %d %q %q", code, out, errs)
	}
	if got := f.attrs().DeadLettersDropped; got["agg"] != 2 {
		t.Fatalf("@dead_letters_dropped = %v, want agg: 2", got)
	}
	if code, _, errs := run("replay"); code != 2 || !strings.Contains(errs, "--all") {
		t.Fatalf("replay without a choice: %d %q", code, errs)
	}
}

// TestDeadLettersShowReplay: show prints a letter's fields with its payload as YSON; replay
// moves the chosen letters into the replay partition under new ids (ytstore.ReplayMessageID)
// and out of dead_letters in one transaction, and refuses, writing nothing, when a chosen
// letter belongs to a source computation.
func TestDeadLettersShowReplay(t *testing.T) {
	f := newFlowTest(t)
	ctx := context.Background()
	lease, err := f.st.StartLease(ctx, "j", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.st.AbortLease(context.Background(), lease) })
	key := aggKey(t, "alice")
	letters := []ytstore.DeadLetterRow{
		{ComputationID: "agg", KeyHash: epoch.KeyHash(key), Key: epoch.EncodeKey(key), MessageID: "m-1", StreamID: "x",
			PartitionID: "agg/0of1", Payload: []byte(`{k="alice"}`), Error: "line one\nline two", Attempts: 3, EventTimestamp: 7},
		{ComputationID: "agg", KeyHash: epoch.KeyHash(key), Key: epoch.EncodeKey(key), MessageID: "t-1", StreamID: "tick",
			PartitionID: "agg/0of1", Error: "timer failed", Attempts: 3, Timer: true, Trigger: 1234},
		{ComputationID: "gen", KeyHash: 1, Key: epoch.EncodeKey(nil), MessageID: "gen/r:00:05", StreamID: "r", PartitionID: "gen/0", Error: "bad row", Attempts: 1},
	}
	token, err := f.st.GenerateTimestamp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.st.CommitEpoch(ctx, &ytstore.EpochWrite{PartitionID: "agg/0of1", Lease: lease, Token: token, DeadLetters: letters}); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		env := &environ{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
		code := runMain(ctx, env, append([]string{"dead-letters"}, append(args, "--proxy", f.proxy, "--path", lifecyclePath)...))
		return code, out.String(), errb.String()
	}
	code, out, errs := run("show", "--message-id", "m-1,t-1")
	for _, want := range []string{"message m-1", "timer t-1", "payload:          {k=alice;}", "trigger:          1234",
		"line one\n                    line two", "attempts:         3", "event_timestamp:  7", "2 dead letters"} {
		if !strings.Contains(out, want) {
			t.Errorf("show: missing %q in:\n%s", want, out)
		}
	}
	if code != 0 || errs != "" {
		t.Fatalf("show: %d %q", code, errs)
	}

	// A letter of the source computation gen is refused; nothing is replayed.
	if code, _, errs := run("replay", "--all"); code != 1 || !strings.Contains(errs, "gen/r:00:05") || !strings.Contains(errs, "nothing replayed") {
		t.Fatalf("replay --all with a source letter: %d %q", code, errs)
	}
	if code, out, _ := run("list"); code != 0 || !strings.Contains(out, "3 dead letters") {
		t.Fatalf("list after the refused replay: %d %q", code, out)
	}
	msgs, timers, err := f.st.LoadReplays(ctx, "agg", 0, 0)
	if err != nil || len(msgs)+len(timers) != 0 {
		t.Fatalf("refused replay wrote %d messages, %d timers (%v)", len(msgs), len(timers), err)
	}

	before := uint64(time.Now().UnixMicro())
	code, out, errs = run("replay", "--computation", "agg")
	if code != 0 || !strings.Contains(out, "agg m-1 -> m-1~r1") || !strings.Contains(out, "agg t-1 -> t-1~r1") || !strings.Contains(out, "replayed 2 dead letters") {
		t.Fatalf("replay: %d %q %q", code, out, errs)
	}
	if code, out, _ := run("list"); code != 0 || !strings.Contains(out, "1 dead letters") || !strings.Contains(out, "gen/r:00:05") {
		t.Fatalf("list after replay: %d %q", code, out)
	}
	msgs, timers, err = f.st.LoadReplays(ctx, "agg", 0, 0)
	if err != nil || len(msgs) != 1 || len(timers) != 1 {
		t.Fatalf("replay partition: %d messages, %d timers (%v)", len(msgs), len(timers), err)
	}
	m, tm := msgs[0], timers[0]
	if m.MessageID != "m-1~r1" || m.StreamID != "x" || string(m.Payload) != `{k="alice"}` || m.EventTimestamp != 7 || m.SystemTimestamp < before || m.KeyHash != epoch.KeyHash(key) {
		t.Errorf("replayed message: %+v", m)
	}
	if tm.MessageID != "t-1~r1" || tm.StreamID != "tick" || tm.SequenceNumber != 1234 {
		t.Errorf("replayed timer: %+v", tm)
	}
	// Another key range of agg does not see them.
	if msgs, timers, err := f.st.LoadReplays(ctx, "agg", epoch.KeyHash(key)+1, 0); err != nil || len(msgs)+len(timers) != 0 {
		t.Errorf("key range above the letters: %d messages, %d timers (%v)", len(msgs), len(timers), err)
	}
}

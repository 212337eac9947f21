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
	if code, _, _ := run("replay"); code != 2 {
		t.Fatalf("replay is not implemented: %d", code)
	}
}

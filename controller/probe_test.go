package controller

import (
	"testing"

	"github.com/ytflow/yt-flow/ytstore"
)

// TestDeathWatch folds sequences of probe outcomes and checks which registrations are
// declared dead: only after ProbeRefusals refusals in a row following an accepted attempt
// of the same registration, once.
func TestDeathWatch(t *testing.T) {
	const A, R, U = ProbeAccepted, ProbeRefused, ProbeUnknown
	for _, tc := range []struct {
		name     string
		outcomes []ProbeOutcome
		deadAt   int // index of the outcome that declares it dead; -1: never
	}{
		{"refused after accepted", []ProbeOutcome{A, R, R, R, R}, 3},
		{"never reachable", []ProbeOutcome{R, R, R, R, R, R}, -1},
		{"accepted breaks the run", []ProbeOutcome{A, R, R, A, R, R, R}, 6},
		{"unknown breaks the run", []ProbeOutcome{A, R, R, U, R, R, U}, -1},
		{"frozen: accepted forever", []ProbeOutcome{A, A, A, A, A}, -1},
		{"unreachable host: timeouts", []ProbeOutcome{A, U, U, U, U}, -1},
		{"declared once", []ProbeOutcome{A, R, R, R, R, R, R}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDeathWatch(3)
			w := ytstore.Worker{WorkerID: "w1", SessionTx: "s1", Address: "127.0.0.1:1"}
			targets := d.Targets([]ytstore.Worker{w}, map[string]bool{"w1": true})
			if len(targets) != 1 {
				t.Fatalf("targets %v, want w1", targets)
			}
			got := -1
			for i, o := range tc.outcomes {
				if d.Record(targets[0], o) {
					if got >= 0 {
						t.Fatalf("declared dead twice, at %d and %d", got, i)
					}
					got = i
				}
			}
			if got != tc.deadAt {
				t.Fatalf("declared dead at outcome %d, want %d", got, tc.deadAt)
			}
		})
	}
}

// TestDeathWatchFollowsRegistrations checks that a new session or address of a worker starts
// afresh (its refusals must follow an accepted attempt of its own), that outcomes for an old
// registration are ignored, that dead and address-less workers are not probed, and that a
// declared registration is no longer a target.
func TestDeathWatchFollowsRegistrations(t *testing.T) {
	d := newDeathWatch(2)
	alive := map[string]bool{"w1": true, "w2": true, "w3": false}
	ws := []ytstore.Worker{
		{WorkerID: "w1", SessionTx: "s1", Address: "a1"},
		{WorkerID: "w2", SessionTx: "s2", Address: ""},
		{WorkerID: "w3", SessionTx: "s3", Address: "a3"},
	}
	targets := d.Targets(ws, alive)
	if len(targets) != 1 || targets[0].WorkerID != "w1" {
		t.Fatalf("targets %v, want only w1 (w2 has no address, w3 is dead)", targets)
	}
	old := targets[0]
	d.Record(old, ProbeAccepted)
	d.Record(old, ProbeRefused)
	// w1 registers again (a restart): the same address under a new session.
	ws[0].SessionTx = "s1b"
	targets = d.Targets(ws, alive)
	if len(targets) != 1 || targets[0].Session != "s1b" {
		t.Fatalf("targets %v, want w1 under s1b", targets)
	}
	if d.Record(old, ProbeRefused) {
		t.Fatal("an outcome of the old registration declared the new one dead")
	}
	cur := targets[0]
	if d.Record(cur, ProbeRefused) || d.Record(cur, ProbeRefused) {
		t.Fatal("the new registration, never reachable, declared dead")
	}
	d.Record(cur, ProbeAccepted)
	if d.Record(cur, ProbeRefused) {
		t.Fatal("declared dead after one refusal of two")
	}
	if !d.Record(cur, ProbeRefused) {
		t.Fatal("not declared dead after two refusals following an accepted attempt")
	}
	if targets = d.Targets(ws, alive); len(targets) != 0 {
		t.Fatalf("targets %v after w1 was declared dead, want none", targets)
	}
	// The worker's session ends: it is forgotten; it registers again and is probed again.
	alive["w1"] = false
	d.Targets(ws, alive)
	alive["w1"] = true
	ws[0].SessionTx = "s1c"
	if targets = d.Targets(ws, alive); len(targets) != 1 || targets[0].Session != "s1c" {
		t.Fatalf("targets %v, want w1 under s1c", targets)
	}
}

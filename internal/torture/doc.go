// Package torture is the machinery of `yt-flow torture`: child processes that can be killed
// (SIGKILL), frozen (SIGSTOP/SIGCONT) and restarted by pid (proc.go), the fault kinds and
// their seeded schedule (faults.go), and the pure comparison of a tortured run's sink
// outputs with those of a fault-free reference run (compare.go).
//
// Nothing here imports the test harness of e2e; the command that drives it lives in
// package app (app/torture*.go).
package torture

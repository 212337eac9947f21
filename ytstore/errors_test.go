package ytstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"go.ytsaurus.tech/yt/go/yterrors"
)

func TestClassify(t *testing.T) {
	code := func(c yterrors.ErrorCode) error {
		return fmt.Errorf("request: %w", yterrors.Err(c, "server says no"))
	}
	nested := yterrors.Err(yterrors.CodeGeneric, "commit failed", yterrors.Err(yterrors.CodePrerequisiteCheckFailed, "Prerequisite check failed"))
	for _, tc := range []struct {
		name       string
		err        error
		want       error // sentinel expected from classify; nil = none
		wantCommit error // sentinel expected from classifyCommit; nil = none
	}{
		{"prerequisite", code(yterrors.CodePrerequisiteCheckFailed), ErrLeaseLost, ErrLeaseLost},
		{"nested prerequisite", nested, ErrLeaseLost, ErrLeaseLost},
		{"no such transaction", code(yterrors.CodeNoSuchTransaction), ErrLeaseLost, ErrLeaseLost},
		{"row conflict", code(yterrors.CodeTransactionLockConflict), ErrConflict, ErrConflict},
		{"cypress lock conflict", code(yterrors.CodeConcurrentTransactionLockConflict), ErrConflict, ErrConflict},
		{"resolve", code(yterrors.CodeResolveError), ErrNotFound, ErrNotFound},
		{"not mounted", code(yterrors.CodeTabletNotMounted), ErrTabletNotMounted, ErrTabletNotMounted},
		{"timeout code", code(yterrors.CodeTimeout), ErrCommitUnknown, ErrCommitUnknown},
		{"connection cut", fmt.Errorf("post: %w", io.ErrUnexpectedEOF), nil, ErrCommitUnknown},
		{"deadline", context.DeadlineExceeded, nil, ErrCommitUnknown},
		{"http 503", &yterrors.HTTPError{StatusCode: 503, Err: errors.New("unavailable")}, nil, ErrCommitUnknown},
		{"generic", code(yterrors.CodeGeneric), nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(what string, got, want error) {
				for _, s := range []error{ErrLeaseLost, ErrCommitUnknown, ErrConflict, ErrNotFound, ErrTabletNotMounted} {
					if errors.Is(got, s) != (s == want) {
						t.Errorf("%s(%v): errors.Is(_, %v) = %v, want %v", what, tc.err, s, errors.Is(got, s), s == want)
					}
				}
				if !errors.Is(got, tc.err) {
					t.Errorf("%s(%v) lost the original error: %v", what, tc.err, got)
				}
			}
			check("classify", classify(tc.err), tc.want)
			check("classifyCommit", classifyCommit(tc.err), tc.wantCommit)
		})
	}
	if classify(nil) != nil || classifyCommit(nil) != nil {
		t.Error("nil error must stay nil")
	}
}

// TestIsTransient: failures to reach YTsaurus (a timed-out request among them) are
// transient; refusals and a cancellation are not.
func TestIsTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("post: %w", io.ErrUnexpectedEOF), true},
		{fmt.Errorf("read: %w", io.EOF), true},
		{&yterrors.HTTPError{StatusCode: 503, Err: errors.New("unavailable")}, true},
		{&yterrors.HTTPError{StatusCode: 400, Err: errors.New("bad request")}, false},
		{context.Canceled, false},
		{fmt.Errorf("start_transaction: %w", context.DeadlineExceeded), true},
		{classify(yterrors.Err(yterrors.CodeResolveError, "no such node")), false},
		{yterrors.Err(yterrors.CodeGeneric, "access denied"), false},
	} {
		if got := IsTransient(tc.err); got != tc.want {
			t.Errorf("IsTransient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestTablesWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, td := range tables() {
		if seen[td.name] {
			t.Errorf("table %s listed twice", td.name)
		}
		seen[td.name] = true
		if len(td.schema.Columns) == 0 {
			t.Errorf("table %s has no columns", td.name)
		}
		keys := 0
		for _, c := range td.schema.Columns {
			if c.SortOrder != "" {
				keys++
			}
		}
		if td.ordered != (keys == 0) {
			t.Errorf("table %s: ordered=%v but %d key columns", td.name, td.ordered, keys)
		}
	}
	for _, name := range []string{TableWorkers, TableJobs, TablePartitions, TableJobStatus, TableControllerLogs} {
		if !seen[name] {
			t.Errorf("coordination table %s missing", name)
		}
	}
}

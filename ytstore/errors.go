package ytstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"go.ytsaurus.tech/yt/go/yterrors"
)

// Sentinel errors. Every error returned by a Store method that matches one of
// these wraps it (test with errors.Is); the original YTsaurus error stays in the
// chain for the message.
var (
	// ErrLeaseLost: a prerequisite transaction (a job's lease, the leader's
	// session) is dead, so the operation was rejected and will never succeed.
	// YTsaurus codes 1000 (PrerequisiteCheckFailed) and 11000 (NoSuchTransaction).
	ErrLeaseLost = errors.New("lease lost")
	// ErrCommitUnknown: the outcome of a commit is unknown (timeout, connection
	// cut): it may or may not have been applied.
	ErrCommitUnknown = errors.New("commit outcome unknown")
	// ErrConflict: a concurrent transaction won (row lock conflict 1700, Cypress
	// lock conflict 402).
	ErrConflict = errors.New("conflict")
	// ErrNotFound: the node, table or row does not exist (resolve error 500).
	ErrNotFound = errors.New("not found")
	// ErrTabletNotMounted: the table is not mounted (1702, 1701, 1707).
	ErrTabletNotMounted = errors.New("tablet not mounted")
)

// classify maps an error of the SDK to the sentinel it means, wrapped together
// with the original error. Errors that match no sentinel are returned as is.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if s := sentinel(err); s != nil && !errors.Is(err, s) {
		return fmt.Errorf("%w: %w", s, err)
	}
	return err
}

// classifyCommit is classify for a commit: besides the codes, a transport
// failure or a timeout means the commit may have been applied, ErrCommitUnknown.
// A cancelled caller context is reported as such, not as unknown, but the
// outcome is unknown too, so it wraps both.
func classifyCommit(err error) error {
	if err == nil {
		return nil
	}
	if s := sentinel(err); s != nil {
		return classify(err)
	}
	if isTransport(err) {
		return fmt.Errorf("%w: %w", ErrCommitUnknown, err)
	}
	return err
}

func sentinel(err error) error {
	switch {
	case yterrors.ContainsErrorCode(err, yterrors.CodePrerequisiteCheckFailed),
		yterrors.ContainsErrorCode(err, yterrors.CodeNoSuchTransaction):
		return ErrLeaseLost
	case yterrors.ContainsErrorCode(err, yterrors.CodeTransactionLockConflict),
		yterrors.ContainsErrorCode(err, yterrors.CodeConcurrentTransactionLockConflict):
		return ErrConflict
	case yterrors.ContainsErrorCode(err, yterrors.CodeTabletNotMounted),
		yterrors.ContainsErrorCode(err, yterrors.CodeNoSuchTablet),
		yterrors.ContainsErrorCode(err, yterrors.CodeTableMountInfoNotReady):
		return ErrTabletNotMounted
	case yterrors.ContainsResolveError(err):
		return ErrNotFound
	case yterrors.ContainsErrorCode(err, yterrors.CodeTimeout):
		return ErrCommitUnknown
	}
	return nil
}

// IsTransient reports whether err is a failure to reach YTsaurus or of its availability —
// a network error, a response cut off, a request that timed out, an HTTP 5xx — that a later
// attempt may overcome. A cancellation is not: someone gave up. (A caller whose own context
// expired should check that first: its deadline looks like a timed-out request.)
func IsTransient(err error) bool {
	return !errors.Is(err, context.Canceled) && isTransport(err)
}

// isTransport reports whether err is a network failure or a timeout, after
// which a request may or may not have been executed.
func isTransport(err error) bool {
	var netErr net.Error
	switch {
	case errors.As(err, &netErr),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, context.Canceled),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.EPIPE):
		return true
	}
	var httpErr *yterrors.HTTPError
	return errors.As(err, &httpErr) && httpErr.StatusCode >= 500
}

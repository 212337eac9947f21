package ytstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.ytsaurus.tech/yt/go/guid"
	"go.ytsaurus.tech/yt/go/ypath"
	"go.ytsaurus.tech/yt/go/yson"
	"go.ytsaurus.tech/yt/go/yt"
)

// Session is a master transaction pinged by the SDK in the background until
// Close or until the context given to StartSession ends. A worker is alive iff
// its session is; the leader controller holds its lock under its session.
type Session struct {
	tx yt.Tx
}

// StartSession starts a session titled title; timeout is how long the session
// survives without pings (the SDK pings it every ping period of the store).
// Cancelling ctx aborts the session.
func (s *Store) StartSession(ctx context.Context, title string, timeout time.Duration) (*Session, error) {
	d := yson.Duration(timeout)
	tx, err := s.yc.BeginTx(ctx, &yt.StartTxOptions{Timeout: &d, Attributes: map[string]any{"title": title}})
	if err != nil {
		return nil, fmt.Errorf("ytstore: start session %q: %w", title, classify(err))
	}
	return &Session{tx: tx}, nil
}

// ID returns the session's transaction id.
func (ss *Session) ID() string { return guidString(ss.tx.ID()) }

// Done is closed when the session has ended: aborted, expired, or closed.
func (ss *Session) Done() <-chan struct{} { return ss.tx.Finished() }

// Close aborts the session. Closing an ended session is not an error.
func (ss *Session) Close() error {
	err := ss.tx.Abort()
	if err != nil && !errors.Is(classify(err), ErrLeaseLost) {
		select {
		case <-ss.tx.Finished():
			return nil
		default:
		}
		return fmt.Errorf("ytstore: abort session %s: %w", ss.ID(), classify(err))
	}
	return nil
}

// LockLeader takes the exclusive lock on PATH/leader_controller_lock under the
// session. ErrConflict means another session holds it (there is a leader).
// The lock lives as long as the session.
func (s *Store) LockLeader(ctx context.Context, ss *Session) error {
	_, err := ss.tx.LockNode(ctx, s.child(LeaderLockNode), yt.LockExclusive, nil)
	if err != nil {
		return fmt.Errorf("ytstore: lock %s: %w", s.child(LeaderLockNode), classify(err))
	}
	return nil
}

// LeaseTitle is the title of a job's lease transaction.
func LeaseTitle(jobID string) string { return "yt-flow: lease for job " + jobID }

// StartLease starts a lease for a job: a master transaction that expires
// after timeout without pings. Nothing pings it but PingLease.
func (s *Store) StartLease(ctx context.Context, jobID string, timeout time.Duration) (string, error) {
	d := yson.Duration(timeout)
	id, err := s.yc.StartTx(ctx, &yt.StartTxOptions{Timeout: &d, Attributes: map[string]any{"title": LeaseTitle(jobID)}})
	if err != nil {
		return "", fmt.Errorf("ytstore: start lease for job %s: %w", jobID, classify(err))
	}
	return guidString(id), nil
}

// PingLease prolongs a lease. A dead lease gives ErrLeaseLost.
func (s *Store) PingLease(ctx context.Context, lease string) error {
	id, err := parseTxID(lease)
	if err != nil {
		return err
	}
	if err := s.yc.PingTx(ctx, id, nil); err != nil {
		return fmt.Errorf("ytstore: ping lease %s: %w", lease, classify(err))
	}
	return nil
}

// AbortLease aborts a lease. Once it returns nil, no commit conditional on the
// lease can succeed. Aborting a dead lease is not an error.
func (s *Store) AbortLease(ctx context.Context, lease string) error {
	id, err := parseTxID(lease)
	if err != nil {
		return nil // a malformed id names no transaction: nothing to abort
	}
	if err := s.yc.AbortTx(ctx, id, nil); err != nil {
		if errors.Is(classify(err), ErrLeaseLost) {
			return nil
		}
		return fmt.Errorf("ytstore: abort lease %s: %w", lease, classify(err))
	}
	return nil
}

// AbortSession aborts the session transaction tx of another process (a worker found dead
// by the controller): the prerequisite checks of writes under it fail from then on, and
// the worker, if it is alive after all, sees its session end and registers again.
// Aborting a dead session is not an error.
func (s *Store) AbortSession(ctx context.Context, tx string) error {
	id, err := parseTxID(tx)
	if err != nil {
		return nil // a malformed id names no transaction: nothing to abort
	}
	if err := s.yc.AbortTx(ctx, id, nil); err != nil {
		if errors.Is(classify(err), ErrLeaseLost) {
			return nil
		}
		return fmt.Errorf("ytstore: abort session %s: %w", tx, classify(err))
	}
	return nil
}

// TxAlive reports whether a master transaction (a lease or a session) is
// alive, without pinging it.
func (s *Store) TxAlive(ctx context.Context, tx string) (bool, error) {
	if _, err := parseTxID(tx); err != nil {
		return false, nil
	}
	// The transaction object itself (#<id>) exists exactly while it is alive.
	ok, err := s.yc.NodeExists(ctx, ypath.Path("#"+tx), nil)
	if err != nil {
		return false, fmt.Errorf("ytstore: check transaction %s: %w", tx, classify(err))
	}
	return ok, nil
}

func parseTxID(s string) (yt.TxID, error) {
	g, err := guid.ParseString(s)
	if err != nil {
		return yt.TxID{}, fmt.Errorf("%w: transaction id %q: %w", ErrLeaseLost, s, err)
	}
	return yt.TxID(g), nil
}

func guidString(id yt.TxID) string { return guid.GUID(id).String() }

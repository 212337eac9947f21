package flow

import (
	"errors"
	"fmt"

	"go.ytsaurus.tech/yt/go/yson"
)

// ErrNotPreloaded is wrapped by the failure of a joined state read for a key the epoch did not
// preload: keys are preloaded from the invocation's messages and timers (of the joiner's
// key_provider_streams, when set), by the joiner's key_schema_override or as the invocation's key.
var ErrNotPreloaded = errors.New("key was not preloaded for this joiner")

// Joiner is what the runtime gives an invocation of the state joiners (state_joiners) of its
// computation: the committed internal states of other computations, as the epoch read them.
// Both methods are safe for concurrent use and must not be called after the invocation.
//
//   - JoinedState returns the YSON bytes of joiner name's state for key (false when the
//     other computation keeps none); an error wrapping ErrNotPreloaded for a key the epoch
//     did not read, another error for an unknown name.
//   - JoinKey returns the joined key of message m: its payload keyed by the joiner's
//     key_schema_override, or, without one, the invocation's key k.
type Joiner interface {
	JoinedState(name string, key Key) ([]byte, bool, error)
	JoinKey(name string, k Key, m *Message) (Key, error)
}

// JoinedStateOf returns the internal state that joiner name (of state_joiners) reads for
// ctx's key — another computation's state, as it last committed it when the epoch began —
// and true, or the zero value and false when that computation keeps none. The value is read
// only: the other computation owns it. It works in keyed computations whose joiner has no
// key_schema_override (the key is then the invocation's); see JoinedStateAt otherwise.
func JoinedStateOf[T any](ctx *Context, name string) (T, bool) {
	return JoinedStateAt[T](ctx, name, ctx.inv.Key)
}

// JoinedStateAt is JoinedStateOf for an explicit key of the other computation, e.g. one
// JoinKeyOf computed from a message.
func JoinedStateAt[T any](ctx *Context, name string, key Key) (T, bool) {
	var v T
	if ctx.inv.Key == nil {
		ctx.fail(fmt.Errorf("state joiner %s: only keyed computations have state joiners", name))
		return v, false
	}
	if ctx.inv.Joined == nil {
		ctx.fail(fmt.Errorf("state joiner %s: not declared in state_joiners", name))
		return v, false
	}
	b, ok, err := ctx.inv.Joined.JoinedState(name, key)
	if err != nil {
		ctx.fail(fmt.Errorf("state joiner %s: key %v: %w", name, key, err))
		return v, false
	}
	if !ok || len(b) == 0 {
		return v, false
	}
	if !unmarshalScalar(b, &v) {
		if err := yson.Unmarshal(b, &v); err != nil {
			ctx.fail(fmt.Errorf("state joiner %s: key %v: decode as %T: %w: %w", name, key, v, ErrBadState, err))
			var zero T
			return zero, false
		}
	}
	return v, true
}

// JoinKeyOf returns the key of the other computation that joiner name reads for message m:
// m's payload keyed by the joiner's join_on.key_schema_override, or ctx's key without one.
func JoinKeyOf(ctx *Context, name string, m *Message) Key {
	if ctx.inv.Joined == nil {
		ctx.fail(fmt.Errorf("state joiner %s: not declared in state_joiners", name))
		return nil
	}
	k, err := ctx.inv.Joined.JoinKey(name, ctx.inv.Key, m)
	if err != nil {
		ctx.fail(fmt.Errorf("state joiner %s: message %s: %w", name, m.MessageID, err))
		return nil
	}
	return k
}

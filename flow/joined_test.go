package flow

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyJoiner is a Joiner over fixed states: joiner name -> fmt of key -> YSON bytes; keys of
// the message payload's "k" column by override.
type keyJoiner map[string]map[string][]byte

func (j keyJoiner) JoinedState(name string, key Key) ([]byte, bool, error) {
	m, ok := j[name]
	if !ok {
		return nil, false, fmt.Errorf("not declared in state_joiners")
	}
	b, ok := m[fmt.Sprint(key)]
	if !ok {
		return nil, false, ErrNotPreloaded
	}
	return b, b != nil, nil
}

func (j keyJoiner) JoinKey(name string, k Key, m *Message) (Key, error) {
	if v, ok := m.Payload["k"]; ok {
		return Key{v}, nil
	}
	return k, nil
}

// TestJoinedStateOf: JoinedStateOf decodes the joined state of the invocation's key (scalar
// and composite types), JoinedStateAt that of a JoinKeyOf key; an absent state reads as
// false; a key not preloaded, an undeclared joiner, bytes that do not decode and an unkeyed
// invocation fail the invocation with errors naming the joiner.
func TestJoinedStateOf(t *testing.T) {
	j := keyJoiner{"/n": {"[1]": []byte("7"), "[2]": nil, `["x"]`: []byte(`{a=1}`), `["bad"]`: []byte("{")}}
	inv := &Invocation{Key: Key{int64(1)}, Messages: []Message{{MessageID: "m1", Payload: Row{"k": "x"}}}, Joined: j}
	_, err := PerMessage(func(ctx *Context, m *Message) error {
		n, ok := JoinedStateOf[int64](ctx, "/n")
		assert.True(t, ok)
		assert.Equal(t, int64(7), n)
		v, ok := JoinedStateAt[map[string]int64](ctx, "/n", JoinKeyOf(ctx, "/n", m))
		assert.True(t, ok)
		assert.Equal(t, map[string]int64{"a": 1}, v)
		_, ok = JoinedStateAt[int64](ctx, "/n", Key{int64(2)})
		assert.False(t, ok, "absent")
		return nil
	}).Invoke(inv)
	require.NoError(t, err)

	for _, c := range []struct {
		f    func(ctx *Context)
		want string
	}{
		{func(ctx *Context) { JoinedStateAt[int64](ctx, "/n", Key{"z"}) }, `state joiner /n: key ["z"]: key was not preloaded for this joiner`},
		{func(ctx *Context) { JoinedStateOf[int64](ctx, "/nope") }, "state joiner /nope: key [1]: not declared in state_joiners"},
		{func(ctx *Context) { JoinedStateAt[int64](ctx, "/n", Key{"bad"}) }, `state joiner /n: key ["bad"]: decode as int64`},
	} {
		_, err := PerMessage(func(ctx *Context, m *Message) error { c.f(ctx); return nil }).Invoke(inv)
		assert.ErrorContains(t, err, c.want)
	}
	_, err = PerMessage(func(ctx *Context, m *Message) error { JoinedStateOf[int64](ctx, "/n"); return nil }).Invoke(&Invocation{Messages: []Message{{MessageID: "m1"}}, Joined: j})
	assert.ErrorContains(t, err, "state joiner /n: only keyed computations have state joiners")
	_, err = PerMessage(func(ctx *Context, m *Message) error { JoinedStateOf[int64](ctx, "/n"); return nil }).Invoke(&Invocation{Key: Key{int64(1)}, Messages: []Message{{MessageID: "m1"}}})
	assert.ErrorContains(t, err, "state joiner /n: not declared in state_joiners")
}

package flowsdk

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.ytsaurus.tech/yt/go/schema"

	"github.com/ytflow/yt-flow/flow"
	"github.com/ytflow/yt-flow/flow/flowtest"
	"github.com/ytflow/yt-flow/spec"
)

type testWord struct {
	Word string `yson:"word"`
	N    int64  `yson:"n,omitempty"`
}

type testCounter struct{}

func (testCounter) OnMessage(ctx context.Context, rt Runtime, msg ExtendedMessage, out OutputCollector) error {
	st, err := rt.InternalState("count")
	if err != nil {
		return err
	}
	var n int64
	seen, err := st.Get(&n)
	if err != nil {
		return err
	}
	if err := st.Set(n + 1); err != nil {
		return err
	}
	if !seen {
		return out.AddTimer(TimerRequest{StreamID: "flush", TriggerTimestamp: 100})
	}
	return nil
}

func (testCounter) OnTimer(ctx context.Context, rt Runtime, timer Timer, out OutputCollector) error {
	n, _ := mustState(rt)
	b, err := rt.MessageBuilder("sdk_test_totals")
	if err != nil {
		return err
	}
	m, err := b.Set("word", timer.Key[0]).Set("n", n).Finish()
	if err != nil {
		return err
	}
	return out.AddMessage(m)
}

func mustState(rt Runtime) (int64, error) {
	s, err := OpenYSONState[int64](rt, "count")
	if err != nil {
		return 0, err
	}
	n, _ := s.Get()
	return n, nil
}

// TestRowComputationStateAndTimer: a row function's state and timer go through the flow
// runtime; the timer handler sees the key and emits through a MessageBuilder checked against
// the stream of AddStreams.
func TestRowComputationStateAndTimer(t *testing.T) {
	require.NoError(t, NewPipeline().AddStreams(NewYSONStream[testWord]("sdk_test_totals")))
	c := NewRowComputation("sdk_test_counter", testCounter{})
	h := flowtest.NewFunc(t, c.function(), flowtest.Options{})
	key := flow.Key{"hello"}
	h.Run(flowtest.Epoch{Messages: []flow.Message{
		flowtest.Msg("words", key, flow.Row{"word": "hello"}),
		flowtest.Msg("words", key, flow.Row{"word": "hello"}),
	}})
	n, ok := flowtest.Get[int64](h, key, "count")
	assert.True(t, ok)
	assert.Equal(t, int64(2), n)
	require.Len(t, h.PendingTimers(), 1, "the first message of a key sets the timer")
	r := h.Run(flowtest.Epoch{Watermark: 200})
	assert.Equal(t, []flow.Row{{"word": "hello", "n": int64(2)}}, r.Payloads("sdk_test_totals"))
}

func TestMessageBuilderChecksSchema(t *testing.T) {
	require.NoError(t, NewPipeline().AddStreams(NewYSONStream[testWord]("sdk_test_builder")))
	rt := &runtime{id: "x", info: &compInfo{}}
	b, err := rt.MessageBuilder("sdk_test_builder")
	require.NoError(t, err)
	_, err = b.Set("nope", 1).Finish()
	assert.ErrorIs(t, err, ErrColumnNotFound)

	b, _ = rt.MessageBuilder("sdk_test_builder")
	_, err = b.Set("word", 5).Finish()
	assert.ErrorIs(t, err, ErrTypeMismatch)

	b, _ = rt.MessageBuilder("sdk_test_builder")
	_, err = b.Set("n", 5).Finish()
	assert.ErrorIs(t, err, ErrColumnNotFound, "the required word is missing")

	b, _ = rt.MessageBuilder("sdk_test_builder")
	m, err := b.SetStruct(testWord{Word: "a", N: 3}).SetEventTimestamp(7).Finish()
	require.NoError(t, err)
	assert.Equal(t, flow.Row{"word": "a", "n": int64(3)}, m.row)
	assert.Equal(t, uint64(7), m.eventTS)

	b, _ = rt.MessageBuilder("sdk_test_builder")
	_, err = b.Set("word", "a").SetSystemTimestamp(1).Finish()
	assert.ErrorIs(t, err, ErrNotSupported)

	_, err = rt.MessageBuilder("sdk_test_nowhere")
	assert.ErrorIs(t, err, ErrUnknownStream)

	rt.info = &compInfo{outputs: []string{"sdk_test_builder"}}
	_, err = rt.MessageBuilder("other")
	assert.ErrorIs(t, err, ErrUnknownStream, "with the spec known, only outputs")
}

func TestPayloadAndParameters(t *testing.T) {
	p := Payload{row: flow.Row{"i": int64(-1), "u": uint64(2), "f": 1.5, "b": true, "s": "x", "y": []byte("z"), "n": nil}}
	i, err := p.Int64("i")
	assert.Equal(t, int64(-1), i)
	assert.NoError(t, err)
	_, err = p.Int64("u")
	assert.ErrorIs(t, err, ErrTypeMismatch)
	_, err = p.Any("n")
	assert.ErrorIs(t, err, ErrColumnNotFound, "null is absent")
	assert.False(t, p.Has("n"))
	s, _ := p.String("y")
	assert.Equal(t, "z", s)
	assert.Equal(t, []string{"b", "f", "i", "n", "s", "u", "y"}, p.Columns())
	var w testWord
	require.NoError(t, ExtendedMessage{Payload: Payload{row: flow.Row{"word": "hi"}}}.ConvertTo(&w))
	assert.Equal(t, "hi", w.Word)

	params := Parameters{row: flow.Row{"limit": int64(3)}}
	var limit int
	require.NoError(t, params.Get("limit", &limit))
	assert.Equal(t, 3, limit)
	assert.ErrorIs(t, params.Get("other", &limit), ErrParameterNotFound)
	assert.Equal(t, []string{"limit"}, params.Names())
}

func TestNotSupportedYet(t *testing.T) {
	rt := &runtime{id: "x", info: &compInfo{}}
	_, err := rt.ExternalState("/s")
	assert.ErrorIs(t, err, ErrNotSupported)
	assert.Contains(t, err.Error(), "not supported by yt-flow yet")
	_, err = rt.JoinedExternalState("/s")
	assert.ErrorIs(t, err, ErrNotSupported)
	_, err = OpenExternalState(rt, "/s")
	assert.ErrorIs(t, err, ErrNotSupported)
	_, err = OpenProtoState[testWord](rt, "p")
	assert.ErrorIs(t, err, ErrNotSupported)
	assert.ErrorIs(t, collector{}.AddUndistributedMessage(&Message{}), ErrNotSupported)
	assert.ErrorIs(t, NewPipeline().Server(), ErrNotSupported)

	rt.info = &compInfo{internalStates: []string{"count"}}
	_, err = rt.InternalState("other")
	assert.ErrorIs(t, err, ErrUnknownState)
}

func TestAddDuplicate(t *testing.T) {
	p := NewPipeline()
	require.NoError(t, p.Add(NewBatchComputation("sdk_test_dup", BatchFunc(func(context.Context, Runtime, []ExtendedMessage, OutputCollector) error { return nil }))))
	err := p.Add(NewRowComputation("sdk_test_dup", RowFunc(func(context.Context, Runtime, ExtendedMessage, OutputCollector) error { return nil })))
	assert.ErrorIs(t, err, ErrDuplicateComputation)
	_, err = flow.Lookup("sdk_test_dup")
	assert.NoError(t, err, "Add registers the function under the computation id")
	assert.ErrorIs(t, p.AddStreams(NewYSONStream[testWord]("sdk_test_s"), NewYSONStream[testWord]("sdk_test_s")), ErrDuplicateStream)
}

func TestGo(t *testing.T) {
	wait := Go(context.Background(), func(context.Context) error { return errors.New("boom") })
	assert.EqualError(t, wait(), "boom")
	assert.EqualError(t, wait(), "boom", "wait may be called again")
	wait = Go(context.Background(), func(context.Context) error { panic("bad") })
	assert.ErrorIs(t, wait(), flow.ErrUserPanic)
}

func TestFlowArgs(t *testing.T) {
	for _, c := range []struct {
		args     []string
		config   string
		rest     []string
		validate bool
		ok       bool
	}{
		{[]string{"--config", "p.yson"}, "p.yson", nil, false, true},
		{[]string{"--config=p.yson", "--validate-only"}, "p.yson", nil, true, true},
		{[]string{"-config", "p.yson", "--data-dir", "d"}, "p.yson", []string{"--data-dir", "d"}, false, true},
		{[]string{"run", "--spec", "p.yson"}, "", nil, false, false},
		{[]string{"--data-dir", "d"}, "", nil, false, false},
	} {
		config, rest, validate, ok := flowArgs(c.args)
		assert.Equal(t, c.ok, ok, "%v", c.args)
		if ok {
			assert.Equal(t, c.config, config, "%v", c.args)
			assert.Equal(t, c.rest, rest, "%v", c.args)
			assert.Equal(t, c.validate, validate, "%v", c.args)
		}
	}
}

// TestPrepareAddsStreams: the streams of AddStreams a runner config leaves out are added to its
// spec, which then validates; what the spec says reaches the Runtime.
func TestPrepareAddsStreams(t *testing.T) {
	p := NewPipeline()
	require.NoError(t, p.AddStreams(NewYSONStream[testWord]("sdk_prep_words")))
	dir := t.TempDir()
	file := dir + "/config.yson"
	require.NoError(t, writeFile(file, `{path = "//p"; address_resolver = {enable_ipv6 = %true}; spec = {computations = {
		sdk_prep_src = {computation_class_name = "NYT::NFlow::NCompanion::TSwiftOrderedSourceCompanionComputation";
			source_streams = {in = {source_class_name = "TQueueSource"; parameters = {queue_path = "<append=%true>//q"; consumer_path = "//c"}}};
			output_stream_ids = ["sdk_prep_words"]}}}}`))
	_, err := spec.ParseConfigFile(file)
	require.Error(t, err, "without the program's streams the spec is incomplete")
	out, cleanup, err := p.prepare(file)
	require.NoError(t, err)
	defer cleanup()
	assert.NotEqual(t, file, out)
	cfg, err := spec.ParseConfigFile(out)
	require.NoError(t, err)
	assert.Equal(t, schema.Schema{Columns: []schema.Column{{Name: "word", Type: schema.TypeString, Required: true}, {Name: "n", Type: schema.TypeInt64}}},
		cfg.Spec.Streams["sdk_prep_words"].Schema)
	info := infoOf("sdk_prep_src")
	assert.Equal(t, []string{"sdk_prep_words"}, info.outputs)
	assert.Contains(t, info.streams, "sdk_prep_words")
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }

package flowsdk

import "errors"

var (
	// ErrDuplicateComputation is returned by Pipeline.Add for an id added before, in this
	// pipeline or as another process function of the program.
	ErrDuplicateComputation = errors.New("duplicate computation")
	// ErrDuplicateStream is returned by Pipeline.AddStreams for a stream id added before.
	ErrDuplicateStream = errors.New("duplicate stream")
	// ErrUnknownStream is returned by Runtime.MessageBuilder for a stream that is not an output
	// of the computation (when the spec is known) or was not added with AddStreams.
	ErrUnknownStream = errors.New("unknown stream")
	// ErrParameterNotFound is returned by Parameters.Get for an absent parameter.
	ErrParameterNotFound = errors.New("parameter not found")
	// ErrColumnNotFound is returned for a column a payload or stream schema lacks.
	ErrColumnNotFound = errors.New("column not found")
	// ErrTypeMismatch is returned when a value does not have the type asked for or that its
	// column has.
	ErrTypeMismatch = errors.New("type mismatch")
	// ErrUnknownState is returned by Runtime.InternalState for a state the computation does not
	// declare in parameters.internal_states (when it declares any).
	ErrUnknownState = errors.New("unknown state")
	// ErrNotSupported is wrapped by every call whose feature yt-flow does not have yet; its
	// text ends in "not supported by yt-flow yet".
	ErrNotSupported = errors.New("not supported by yt-flow yet")
)

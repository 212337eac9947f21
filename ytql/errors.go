package ytql

import (
	"errors"
	"fmt"
)

// Sentinel errors; every error returned by this package wraps exactly one of
// them and, where it concerns the text, names the byte offset.
var (
	// ErrParse: the text is not in the supported language subset.
	ErrParse = errors.New("parse error")
	// ErrType: operand types do not fit the operation (e.g. int64 = uint64
	// between two columns, string + int64, hashing a composite value).
	ErrType = errors.New("type error")
	// ErrEval: a runtime failure such as division by zero or a missing
	// placeholder value.
	ErrEval = errors.New("evaluation error")
	// ErrQuery: a query that parses but breaks a YTsaurus rule (ORDER BY
	// without LIMIT, aggregate without GROUP BY, …).
	ErrQuery = errors.New("query error")
	// ErrIncomplete: an execution exceeded Options.InputRowLimit or
	// Options.OutputRowLimit.
	ErrIncomplete = errors.New("incomplete result")
)

// Error is a positioned error: Kind is one of the sentinels above, Pos the
// byte offset in the text (or -1 when unknown). Error() reads
// "ytql: parse error at 14: expected ')'".
type Error struct {
	Kind error
	Pos  int
	Msg  string
	Err  error // optional cause
}

func (e *Error) Error() string {
	if e.Pos < 0 {
		return fmt.Sprintf("ytql: %v: %s", e.Kind, e.Msg)
	}
	return fmt.Sprintf("ytql: %v at %d: %s", e.Kind, e.Pos, e.Msg)
}

// Is makes errors.Is(err, ErrParse) (etc.) work.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.Err }

func parseErrorf(pos int, format string, args ...any) error {
	return &Error{Kind: ErrParse, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func typeErrorf(pos int, format string, args ...any) error {
	return &Error{Kind: ErrType, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func evalErrorf(pos int, format string, args ...any) error {
	return &Error{Kind: ErrEval, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func queryErrorf(pos int, format string, args ...any) error {
	return &Error{Kind: ErrQuery, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

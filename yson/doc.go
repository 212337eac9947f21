// Package yson holds yt-flow's strict decoding helpers over the SDK's YSON codec
// (go.ytsaurus.tech/yt/go/yson). It is not a second parser: Decode drives the SDK's
// streaming Reader and only builds a tree from its events.
//
// What it accepts:
//   - Decode turns one YSON document (text or binary, a single node, optional attributes)
//     into a *Node tree that keeps map key order and rejects duplicate map keys. Nesting
//     deeper than MaxDepth is rejected instead of exhausting the stack. Text documents may
//     carry "// …" line and "/* … */" block comments outside quoted strings (YSON itself has
//     none; they are blanked before the SDK reader sees the bytes). A syntax error names its
//     line and column when the SDK validator can pin it down.
//   - Walker visits such a tree and collects every problem with its path
//     ("computations/count/group_by_schema/0/type") instead of stopping at the first one.
//     Fields reads one map strictly: every key the caller does not consume is reported as
//     "unknown key" by Fields.Close.
//   - Durations (ParseDuration) are non-negative integer milliseconds (60000) or Go duration
//     strings ("100ms", "1s", "5m", "1h30m") with an extra "d" unit for days ("1d").
//   - Sizes (ParseSize) are non-negative integers or strings with a decimal suffix K, M, G, T
//     (powers of 1000) or a binary suffix Ki, Mi, Gi, Ti (powers of 1024): "50K", "10M", "1Gi".
//
// Attributes are kept on the Node; the typed accessors of Walker reject a value that carries
// attributes unless the caller reads them itself.
package yson

// Package ytql implements YTsaurus' farm_hash and a subset of the YTsaurus
// query language (the select_rows dialect) as pure Go with no I/O.
//
// farm_hash: FarmHash(args…) equals the YTsaurus query function
// farm_hash(args…), i.e. GetFarmFingerprint over the arguments as a row:
// seed 0xdeadc0de, each value's fingerprint folded in with FarmHash
// Fingerprint(uint128), the argument count xor-ed in at the end. A value's
// fingerprint (ValueFingerprint) is FarmHash Fingerprint64 of a string's bytes,
// Fingerprint(uint64) of an integer's or double's 64-bit payload,
// Fingerprint(0|1) of a boolean and Fingerprint(0) of NULL. The primitives are
// pinned by YTsaurus' own stability vectors (TestFarmFingerprintVectors).
//
// Expressions (ParseExpression, Expr.Eval):
//   - literals: int64 (123, -9223372036854775808), uint64 (123u), double
//     (1.5, .5, 1e3), strings in '…' or "…" with escapes \n \t \r \0 \\ \' \"
//     \xHH, booleans %true/%false/true/false, NULL as null or #;
//   - column references: name, $name, `any name`, [any name] (e.g.
//     [$tablet_index]); a column missing from the row is NULL;
//   - placeholders {name}, bound at evaluation; a list value is a tuple;
//   - arithmetic + - * / % and unary + -; comparisons = != <> < <= > >=;
//     AND OR NOT; IN (…) including tuples; [NOT] BETWEEN … AND …; tuple
//     comparison (a, b) > (1, 2); IS [NOT] NULL;
//   - functions farm_hash(…), is_null(x), if(c, a, b), lower, upper,
//     concat(a, b), is_prefix(p, s), int64/uint64/double casts.
//
// Semantics follow YTsaurus: NULL is smaller than every value and equal to
// NULL in comparisons (so comparisons never yield NULL); arithmetic with NULL
// yields NULL; AND/OR are three-valued; integer division by zero is an error.
// Typing is strict: int64 and uint64 (or any two different types) do not mix,
// except that a constant integer (literal or placeholder) adapts to the other
// operand's numeric type when it fits, as a YTsaurus literal does.
//
// Errors wrap ErrParse, ErrType, ErrEval or ErrQuery and name the byte offset
// in the text: "ytql: parse error at 14: …".
package ytql

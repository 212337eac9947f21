// Package ytql implements YTsaurus' farm_hash and the subset of the YTsaurus
// query language (the select_rows dialect) that yt-flow and ytlocal need, as
// pure Go: no I/O, no clocks, safe for concurrent use once parsed.
//
// # farm_hash
//
// FarmHash(args…) equals the YTsaurus query function farm_hash(args…), which
// YTsaurus computes as GetFarmFingerprint over its arguments taken as a row:
// start from 0xdeadc0de, fold in each value's fingerprint with FarmHash
// Fingerprint(uint128), xor the argument count at the end. This holds for one
// argument too, so farm_hash(s) is not Fingerprint64(s). A single value's
// fingerprint (ValueFingerprint) is FarmHash Fingerprint64 of a string's
// bytes (github.com/dgryski/go-farm), Fingerprint(uint64) of an int64, uint64
// or double payload, Fingerprint(0|1) of a boolean and Fingerprint(0) of NULL.
// The primitives are pinned by YTsaurus' own stability vectors
// (TestFarmFingerprintVectors). The query function accepts int64, uint64,
// boolean, string and NULL arguments (not double), like YTsaurus.
//
// # Expressions
//
// ParseExpression/Expr.Eval support:
//   - literals: int64 (123, -9223372036854775808), uint64 (123u), double
//     (1.5, .5, 1e3), strings in '…' or "…" with escapes \n \t \r \0 \\ \'
//     \" \xHH, booleans %true %false true false, NULL as null or #;
//   - column references: name or $name, `any name`, [any name] (e.g.
//     [$tablet_index]); a column absent from the row map is NULL;
//   - placeholders {name}, bound at evaluation (EvalWith, Execute); a list
//     value is a tuple;
//   - operators, loosest first as in YTsaurus' grammar: OR; AND; NOT;
//     IS [NOT] NULL; = != <>; < <= > >=, [NOT] IN (…), [NOT] BETWEEN lo AND
//     hi or BETWEEN (lo1 AND hi1, …); |; &; << >>; + - ||; * / %; unary + -
//     ~; tuples (a, b) in comparisons, IN lists and BETWEEN bounds; IN items
//     and BETWEEN bounds must be constants (literals, placeholders, tuples
//     of them), as in YTsaurus;
//   - CASE [x] WHEN … THEN … [ELSE …] END;
//   - functions: farm_hash(…), is_null(x), if(c, a, b), if_null(x, y),
//     coalesce(…), lower(s), concat(a, b), is_prefix(p, s),
//     is_substr(sub, s), is_nan(d), int64(x), uint64(x), double(x).
//
// Semantics follow YTsaurus' evaluator: comparisons order NULL below every
// value and NULL = NULL is true, so they never yield NULL; arithmetic and
// most functions with a NULL operand yield NULL; AND/OR are three-valued
// (NULL AND FALSE is FALSE, NULL OR TRUE is TRUE); NOT NULL and if(NULL, …)
// are NULL; if and CASE evaluate only the chosen branch; integer division or modulo by zero and INT_MIN / -1 are errors;
// comparing NaN is an error; a WHERE/HAVING predicate that is NULL rejects
// the row. Typing is strict: operands of different types (int64 and uint64
// included) do not mix, except that a constant (literal or placeholder)
// integer adapts to the other operand's numeric type when the conversion is
// exact, as YTsaurus literals do (u = 1 works for a uint64 column u).
//
// Expr.Compile returns a Compiled that evaluates exactly like Eval (values and
// errors) and computes the shapes that key messages — a column reference,
// farm_hash over column references — without the generic evaluator's boxing
// and argument slices; the runtime's keyer evaluates group_by_schema
// expressions through it.
//
// # Queries
//
// ParseQuery/Query.Execute support
//
//	[SELECT] * | expr [AS name], … FROM [//path] [[AS] alias]
//	[WHERE pred] [GROUP BY expr [AS name], …] [HAVING pred]
//	[ORDER BY expr [ASC|DESC], …] [OFFSET n] [LIMIT n]
//
// with aggregates sum, min, max, avg (NULL inputs skipped; NULL over no
// input), count(*) (rows) and count(x) (non-NULL values) in the select list,
// (count is a convenience here: YTsaurus' builtin registry lists no count
// and its documentation counts rows with sum(1) … GROUP BY 1),
// HAVING and ORDER BY of grouped queries; GROUP BY 1 aggregates all rows.
// Output column names are the alias, the column name for a plain reference,
// or the canonical expression text ("age + 1", "sum(x)"); ResultColumns lists
// them in order. A name resolves to a table column first and otherwise to
// an alias defined with AS anywhere in the query (select list, GROUP BY), as
// in YTsaurus; alias.column refers to the FROM alias. Rules enforced
// like YTsaurus: OFFSET precedes LIMIT and both take int64 literals; ORDER
// BY and OFFSET need LIMIT ("ORDER BY used without LIMIT"); aggregates need
// GROUP BY; a grouped query may use only group keys
// and aggregates; output names are unique. CheckSchema (on Query and Expr)
// checks a table schema before any row is read, like YTsaurus' query
// preparation: undefined references, operand type mismatches, non-boolean
// WHERE/HAVING, bad function and aggregate argument types; what it accepts
// does not fail with ErrType at run time on rows that follow the schema
// (checked by the fuzz targets). Execute keeps input order without ORDER BY
// (groups in order of first appearance) and stops reading once OFFSET+LIMIT
// rows are found; ORDER BY sorts stably in YTsaurus' value order
// (internal/ytvalue: NULL first, types in tag order, NaN after every other
// double). Placeholders are
// bound before any row is read. ExecuteWith adds input/output row limits
// (ErrIncomplete). Conditions lists the column-versus-constant comparisons
// among the top-level conjuncts of WHERE, for narrowing a scan by key.
//
// Not supported: JOIN, ARRAY JOIN, WITH INDEX, WITH TOTALS, subqueries,
// TRANSFORM, LIKE/regex, date and YSON functions, the cardinality and first
// aggregates, composite (YSON any) values in operators.
//
// # Errors
//
// Every error is an *Error wrapping ErrParse, ErrType, ErrEval, ErrQuery or
// ErrIncomplete and naming the byte offset in the text where known:
// "ytql: parse error at 14: expected \",\" or \")\", found end of text".
package ytql

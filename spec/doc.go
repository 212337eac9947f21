// Package spec parses and validates yt-flow's YSON documents: the runner config
// (pipeline.yson: ParseConfig, ParseConfigFile), the static pipeline spec (ParsePipeline)
// and the dynamic spec (ParseDynamic). Keys, class names and defaults follow YTsaurus Flow;
// docs/spec.md lists them.
//
// The parser is strict:
//   - unknown keys are errors everywhere, including the parameters of computations, sources
//     and sinks, which are parsed per class (known connector parameters are typed, required
//     ones checked, unknown ones rejected); only blocks the core does not interpret
//     (vanilla/logging details, watermark_strategy, key visitors, external state, throttlers,
//     job_tracker and the like) are accepted as generic maps;
//   - every problem names its YSON path ("spec/computations/counter/sinks/out/parameters/queue_path: required")
//     and a failed parse returns a *ValidationError with all problems, sorted by path;
//   - text documents may carry "//" and "/* */" comments (see package yson).
//
// Source and sink classes come from the connector registry (connectors/registry): each
// connector package registers its names, guarantee and a strict parser of its parameters,
// and a Source or Sink carries the registered Class and the typed Params it parsed. A
// program must import the connectors it wants (github.com/ytflow/yt-flow/connectors/all for
// every one); a class nobody registered is an unknown class.
//
// A document that parses may still carry Notes: keys yt-flow accepts and ignores (Flow's
// vanilla section, process singletons such as address_resolver, tuning blocks), listed by
// `yt-flow validate --verbose`, and features that would change outputs, placement or fencing
// and that yt-flow does not run yet (skip_if_expression, worker_group, key visitors on swift computations, sinks on a
// swift source …), which start and run refuse. UnregisteredFunctions names processing
// functions a program lacks. An unknown key close to a known one names it ("did you mean").
// Flow's companion classes are aliases of the native computation classes; a companion
// computation without processing_function runs the function registered under its id. A
// passthrough output may keep a subset of its input's columns, and a passthrough output left
// out of streams gets its input's schema.
//
// Class names are accepted in Flow's full spelling (NYT::NFlow::TProcessFunctionComputation),
// without the NYT::NFlow:: prefix, and as short aliases (transform, passthrough, swift_map, …);
// ClassAliases lists them all. processing_mode (transform only) and
// allow_batching_with_relaxed_guarantees (swift map only) may be written directly on the
// computation or inside its parameters, and at_most_once_strategy directly on a sink or
// inside its parameters; both placements at once must agree.
//
// Cross-reference rules checked by validation: one writer per stream; declared output
// streams; no computation with both inputs and sources; source computations read exactly one
// source and have empty group_by_schema and no timers; keyed computations have inputs and a
// group_by_schema whose first column is uint64 (unless experimental_enable_non_uint_key) and
// whose non-computed columns exist, castable, in every input stream; computed columns parse as
// well-typed expressions over non-computed group_by columns, without the % operator; processing_function is required except for
// passthrough classes, where it is forbidden and outputs must have the input schema or a subset of its columns; sinks read
// outputs of their own computation and name only columns of those streams; swift map computations have no sinks and swift outputs do
// not depend on timer streams; timer ids match [0-9A-Za-z_-]+; streams_dependency and timer
// streams name real streams of the computation; at_most_once_strategy only on asynchronous
// sinks whose class accepts it (not HTTP). A runner config's dynamic_spec may only name computations, sources
// and sinks of its spec.
package spec

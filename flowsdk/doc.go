// Package flowsdk is the API of YTsaurus Flow's Go SDK (go.ytsaurus.tech/yt/go/flow) on top of
// yt-flow's own flow package, so that a Go companion program written for Flow builds and runs
// against yt-flow after its import path changes:
//
//	import flow "github.com/ytflow/yt-flow/flowsdk"
//
//	pipeline := flow.NewPipeline()
//	pipeline.AddStreams(flow.NewYSONStream[Word]("words"))
//	pipeline.Add(flow.NewRowComputation("count", counter{}))
//	pipeline.Run() // ./program --config pipeline.yson
//
// In Flow such a program is a companion: Flow's worker calls it over gRPC, batch by batch.
// Here each computation is a process function (flow.Register) under its computation id, run in
// the worker process; a spec's companion classes (NCompanion::TTransformCompanionComputation …)
// are aliases of the native classes and run the function registered under the computation id.
// Pipeline.Run is yt-flow's whole command line (app.Main) with Flow's --config flag added:
// `--config FILE` runs the pipeline (yt-flow run), `--config FILE --validate-only` validates it.
//
// What differs from Flow's SDK, each call's errors, and what yt-flow does not support yet
// (visits, external state, watermarks): docs/flow-go-sdk.md.
package flowsdk

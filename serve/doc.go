// Package serve runs ONNX models inside Go services: one Server owns
// several models by name and answers Predict calls from many goroutines
// with bounded work and bounded memory.
//
// For each model it keeps
//
//   - a bounded queue: a request that finds it full fails at once with an
//     *OverloadError (errors.Is(err, ErrOverloaded)), so a caller can answer
//     503 instead of piling work up;
//   - a fixed number of runners (ModelOptions.Runs), each taking up to
//     ModelOptions.MaxBatch queued requests, waiting at most
//     ModelOptions.MaxWait for company (and not at all when no other
//     request is in progress), and running them through the session once,
//     concatenated along the batch axis (at most ModelOptions.MaxBatchRows
//     rows), when the model's inputs share a dynamic first axis (one by
//     one otherwise). Batching is kept only if a warm-up check at load
//     shows batched rows bit-equal to single runs;
//   - a thread budget (ModelOptions.Threads) split between its runners and
//     handed to the session, never set for the whole process;
//   - reused batch buffers, one set per runner, so that steady traffic
//     allocates no new input batches.
//
// Every request's context reaches the run that computes it: a request
// whose context is done before its run starts is dropped without running,
// and a batched run is cancelled once every request in it is gone.
// Every Predict call returns: outputs, or an error.
//
// The Server as a whole has a memory budget (Options.MaxBytesInFlight):
// the bytes of the requests' inputs, their batches and their expected
// outputs are reserved at admission; past the budget a request waits up
// to Options.AdmissionWait and then fails with an *OverloadError that
// carries a Retry-After hint. Callers with bytes of their own in flight
// (an HTTP body being read) reserve them with Server.Reserve.
//
// Load replaces a model of the same name without dropping requests: the
// new version is loaded and warmed up, swapped in, and the old one drains
// (every request it accepted is answered) before Load returns. Unload
// drains and forgets a model, so its memory can be collected.
//
// Statistics (queue depth, batch sizes, latency histogram, outcomes, bytes
// in flight) come from Server.Stats, as an expvar.Var (Server.Expvar), and
// in the Prometheus text exposition format (Server.WritePrometheus).
//
// Example (the package example) loads a model and answers a request;
// ExampleServer_Load loads a model twice, the second time as a hot reload.
package serve

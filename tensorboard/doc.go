// Package tensorboard writes and reads TensorBoard event files, so that a
// Go training program can be watched with TensorBoard
// ("tensorboard --logdir runs") as a PyTorch one is.
//
// A Writer owns one run: a folder holding an event file
// (events.out.tfevents.<seconds>.<host>.<pid>.<n>) of TFRecord-framed
// Event messages, encoded from TensorBoard's own .proto files. It logs
// scalars (AddScalar, and AddScalars, which writes one sub-run per key as
// PyTorch's add_scalars does), histograms, images (image.Image, tensors
// and grids of a batch, as PNG), markdown text, audio (WAV), precision-recall
// curves, the custom-scalars layout, hyperparameters with their metrics
// for the HParams dashboard, the graph of a traced nn.Module, and
// embeddings for the projector (projector_config.pbtxt with tensors.tsv,
// metadata.tsv and a sprite image). Add calls queue their event and
// return; the Writer's goroutine encodes and writes, every FlushInterval
// and on Flush and Close, which also syncs the file.
//
// A Reader reads event files back, checking both CRCs of every record and
// reporting a damaged or truncated record with its byte offset
// (*CorruptionError); ReadScalars collects the scalars of a whole log
// directory. "ember tensorboard export LOGDIR" writes them as CSV files.
//
// Example (the package example) logs scalars, a histogram and text;
// ExampleNewReader reads an event file back.
package tensorboard

// Package tbpb holds the Go code generated from TensorBoard's .proto files
// (Event, Summary, TensorProto, GraphDef, HistogramProto, the custom-scalars
// Layout), which are committed under proto/ as TensorBoard publishes them.
// Its subpackages hold the plugins' messages whose file names would
// collide here: hparamspb (the HParams plugin), projectorpb (the embedding
// projector's configuration), prcurvepb and textpb (the PR-curve and text
// plugins' data).
package tbpb

//go:generate sh gen.sh

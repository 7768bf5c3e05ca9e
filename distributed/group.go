package distributed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/emberml/ember/tensor"
)

// DefaultTimeout bounds every collective unless SetTimeout changes it.
const DefaultTimeout = 5 * time.Minute

// ProcessGroup is a set of ranks that run collectives together. Every rank
// must issue the same collectives in the same order with tensors of the same
// shape and dtype; a mismatch is detected from the op code and sequence
// number in each message and reported as an error.
//
// Supported dtypes are float32, float64, int32 and int64. Tensors may be
// non-contiguous: their elements are copied out in row-major order and the
// results written back through the view.
//
// Each blocking call is bounded by Timeout. A peer that dies, disconnects,
// times out or sends bad bytes makes the call return an error naming that
// peer (a *PeerError), and the group is unusable afterwards: every later call
// returns the first error; the tensors a failed operation writes are left
// in an unspecified state (contiguous CPU tensors are reduced in place).
// Operations run one at a time in issue order; the
// Async forms return at once, and the tensors they were given must not be
// touched until their Work completes.
type ProcessGroup interface {
	// Rank returns this process's rank in [0, Size()).
	Rank() int
	// Size returns the number of ranks.
	Size() int
	// Timeout returns the bound on each operation.
	Timeout() time.Duration
	// SetTimeout changes the bound on each later operation (d > 0).
	SetTimeout(d time.Duration)

	// AllReduce combines t across ranks by op and leaves the result in t
	// on every rank. All ranks obtain bit-identical results.
	AllReduce(t *tensor.Tensor, op ReduceOp) error
	// Broadcast copies root's t into t on every other rank.
	Broadcast(t *tensor.Tensor, root int) error
	// Reduce combines t across ranks by op into root's t; the other
	// ranks' tensors are left unchanged.
	Reduce(t *tensor.Tensor, root int, op ReduceOp) error
	// AllGather writes rank j's in into outs[j] on every rank; outs has
	// Size() tensors of in's shape and dtype.
	AllGather(outs []*tensor.Tensor, in *tensor.Tensor) error
	// ReduceScatter combines ins[j] across ranks by op into out on rank j;
	// ins has Size() tensors of out's shape and dtype.
	ReduceScatter(out *tensor.Tensor, ins []*tensor.Tensor, op ReduceOp) error
	// Gather writes rank j's in into outs[j] on root; outs is ignored (and
	// may be nil) on the other ranks.
	Gather(outs []*tensor.Tensor, in *tensor.Tensor, root int) error
	// Scatter writes root's ins[j] into out on rank j; ins is ignored (and
	// may be nil) on the other ranks.
	Scatter(out *tensor.Tensor, ins []*tensor.Tensor, root int) error
	// Barrier returns once every rank has entered it.
	Barrier() error
	// Send sends t to rank dst, which must call Recv with a tensor of the
	// same shape and dtype. Sends and receives between two ranks match in
	// issue order, interleaved with their collectives.
	Send(t *tensor.Tensor, dst int) error
	// Recv receives into t what rank src sends.
	Recv(t *tensor.Tensor, src int) error

	// AllReduceAsync is AllReduce without waiting.
	AllReduceAsync(t *tensor.Tensor, op ReduceOp) Work
	// BroadcastAsync is Broadcast without waiting.
	BroadcastAsync(t *tensor.Tensor, root int) Work
	// ReduceAsync is Reduce without waiting.
	ReduceAsync(t *tensor.Tensor, root int, op ReduceOp) Work
	// AllGatherAsync is AllGather without waiting.
	AllGatherAsync(outs []*tensor.Tensor, in *tensor.Tensor) Work
	// ReduceScatterAsync is ReduceScatter without waiting.
	ReduceScatterAsync(out *tensor.Tensor, ins []*tensor.Tensor, op ReduceOp) Work
	// GatherAsync is Gather without waiting.
	GatherAsync(outs []*tensor.Tensor, in *tensor.Tensor, root int) Work
	// ScatterAsync is Scatter without waiting.
	ScatterAsync(out *tensor.Tensor, ins []*tensor.Tensor, root int) Work
	// BarrierAsync is Barrier without waiting.
	BarrierAsync() Work
	// SendAsync is Send without waiting.
	SendAsync(t *tensor.Tensor, dst int) Work
	// RecvAsync is Recv without waiting.
	RecvAsync(t *tensor.Tensor, src int) Work

	// Close releases the group's connections. Peers still running
	// collectives with this rank get an error.
	Close() error
}

// Work is a pending asynchronous operation.
type Work interface {
	// Wait blocks until the operation completes and returns its error. If
	// ctx ends first, the group is aborted (the operation cannot be left
	// half done on the wire) and Wait returns ctx's error.
	Wait(ctx context.Context) error
	// Done is closed when the operation has completed.
	Done() <-chan struct{}
}

// PeerError reports a failure involving one peer: it disconnected, timed
// out, sent malformed or mismatched data, or reported its own failure.
type PeerError struct {
	// Op is the operation that failed ("AllReduce", "rendezvous", ...).
	Op string
	// Seq is the operation's sequence number (0 outside collectives).
	Seq uint64
	// Rank is the world rank of the peer at fault (its rank in the group
	// NewTCPGroup returned, even when the operation ran in a subgroup).
	Rank int
	// Reporter is the rank that observed the failure and reported it to
	// this rank, or -1 when this rank observed it directly.
	Reporter int
	// Err is the underlying error.
	Err error
}

// Error describes the failure, naming the peer.
func (e *PeerError) Error() string {
	where := e.Op
	if e.Seq > 0 {
		where = fmt.Sprintf("%s #%d", e.Op, e.Seq)
	}
	if e.Reporter >= 0 {
		return fmt.Sprintf("distributed: %s: rank %d failed (reported by rank %d): %v", where, e.Rank, e.Reporter, e.Err)
	}
	return fmt.Sprintf("distributed: %s: peer rank %d: %v", where, e.Rank, e.Err)
}

// Unwrap returns the underlying error.
func (e *PeerError) Unwrap() error { return e.Err }

// ErrClosed is returned by operations on a closed group.
var ErrClosed = errors.New("distributed: process group is closed")

// work is the Work of one queued operation.
type work struct {
	g    *TCPGroup
	fn   func(deadline time.Time) error
	done chan struct{}
	err  error
}

// Wait implements Work.
func (w *work) Wait(ctx context.Context) error {
	return waitDone(ctx, w.done, &w.err, w.g.abort)
}

// Done implements Work.
func (w *work) Done() <-chan struct{} { return w.done }

// waitDone is the Wait of every group's Work: it returns *err once done is
// closed (finish writes *err before closing done), preferring that to an
// ended ctx when both are ready. If ctx ends first it gives abandon (which
// marks the group failed) and returns the error "wait abandoned", wrapping
// ctx's.
func waitDone(ctx context.Context, done <-chan struct{}, err *error, abandon func(error)) error {
	select {
	case <-done:
		return *err
	default:
	}
	select {
	case <-done:
		return *err
	case <-ctx.Done():
		e := fmt.Errorf("distributed: wait abandoned: %w", ctx.Err())
		abandon(e)
		return e
	}
}

// finish records err and releases waiters.
func (w *work) finish(err error) {
	w.err = err
	close(w.done)
}

package distributed

import (
	"errors"
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// DefaultBucketBytes is the gradient bucket size of DataParallel, as in
// PyTorch's DistributedDataParallel.
const DefaultBucketBytes = 25 << 20

// DDPOptions configures DataParallel. The zero value uses 25 MiB buckets.
type DDPOptions struct {
	// BucketBytes caps the size of one flattened gradient bucket; 0 means
	// DefaultBucketBytes.
	BucketBytes int
	// BroadcastBuffers makes SyncGradients also copy rank 0's buffers
	// (BatchNorm running statistics and the like) to every rank.
	BroadcastBuffers bool
}

// DDP is a module replicated over the ranks of a process group for
// data-parallel training. It embeds the wrapped module, so it is itself an
// nn.Module: Forward, Parameters and the rest act on the local replica,
// and the field Module is the wrapped module itself.
//
// The training loop is the single-process one plus one call: each rank runs
// forward and backward on its own shard of the batch, then SyncGradients
// averages the gradients over the ranks, and every rank's optimizer takes
// the same step, so the replicas stay bit-identical.
//
// Gradient synchronization runs after backward rather than overlapped with
// it: Ember's autograd has no per-parameter gradient-ready hooks, and adding
// them would change its engine. The buckets are still all-reduced
// asynchronously one after another, so flattening and communication of
// successive buckets overlap.
type DDP struct {
	nn.Module
	pg      ProcessGroup
	opts    DDPOptions
	params  []*autograd.Var
	buckets [][]int // parameter indices, each bucket one dtype
	noSync  bool
}

// DataParallel wraps model for data-parallel training over pg. Every rank
// must build the same architecture; DataParallel checks that the parameter
// counts agree, then copies rank 0's parameters and buffers to every rank.
// Errors come from the network or from mismatched models.
func DataParallel(model nn.Module, pg ProcessGroup, opts DDPOptions) (*DDP, error) {
	if opts.BucketBytes < 0 {
		panic(fmt.Sprintf("distributed.DataParallel: negative BucketBytes %d", opts.BucketBytes))
	}
	if opts.BucketBytes == 0 {
		opts.BucketBytes = DefaultBucketBytes
	}
	d := &DDP{Module: model, pg: pg, opts: opts, params: model.Parameters()}
	// The replicas must agree on the parameter layout before any tensor
	// moves: compare the counts and total sizes with Max and Min.
	total := 0
	for _, p := range d.params {
		if !p.Value().DType().IsFloat() || p.Value().DType().Size() < 4 {
			panic(fmt.Sprintf("distributed.DataParallel: parameter of dtype %s; gradients are averaged in float32 or float64", p.Value().DType()))
		}
		total += p.Value().Numel()
	}
	layout := []int64{int64(len(d.params)), int64(total), int64(len(model.NamedBuffers()))}
	hi := tensor.FromSlice(layout)
	lo := tensor.FromSlice(layout).Neg()
	if err := pg.AllReduce(hi, Max); err != nil {
		return nil, err
	}
	if err := pg.AllReduce(lo, Max); err != nil {
		return nil, err
	}
	if h, l := hi.Int64s(), lo.Neg().Int64s(); h[0] != l[0] || h[1] != l[1] || h[2] != l[2] {
		return nil, fmt.Errorf("distributed.DataParallel: rank %d's model has %d parameters (%d elements) and %d buffers, but the ranks range over %v..%v: every rank must build the same model", pg.Rank(), layout[0], layout[1], layout[2], l, h)
	}
	for _, p := range d.params {
		if err := pg.Broadcast(p.Value(), 0); err != nil {
			return nil, err
		}
	}
	if err := d.SyncBuffers(); err != nil {
		return nil, err
	}
	// Buckets in reverse registration order (roughly the order backward
	// produces gradients), split by dtype and by size.
	var cur []int
	curBytes := 0
	for i := len(d.params) - 1; i >= 0; i-- {
		v := d.params[i].Value()
		b := v.Numel() * v.DType().Size()
		if len(cur) > 0 && (curBytes+b > opts.BucketBytes || d.params[cur[0]].Value().DType() != v.DType()) {
			d.buckets = append(d.buckets, cur)
			cur, curBytes = nil, 0
		}
		cur = append(cur, i)
		curBytes += b
	}
	if len(cur) > 0 {
		d.buckets = append(d.buckets, cur)
	}
	return d, nil
}

// Group returns the process group.
func (d *DDP) Group() ProcessGroup { return d.pg }

// Buckets returns the number of gradient buckets.
func (d *DDP) Buckets() int { return len(d.buckets) }

// SyncBuffers copies rank 0's buffers to every rank.
func (d *DDP) SyncBuffers() error {
	for _, b := range d.Module.NamedBuffers() {
		if err := d.pg.Broadcast(b.Buffer, 0); err != nil {
			return err
		}
	}
	return nil
}

// NoSync runs fn (typically forward and backward on a micro-batch) with
// SyncGradients disabled, so gradients accumulate locally; the first
// SyncGradients after it averages the accumulated sums, as PyTorch's
// no_sync context does.
func (d *DDP) NoSync(fn func() error) error {
	d.noSync = true
	defer func() { d.noSync = false }()
	return fn()
}

// SyncGradients replaces every parameter's gradient by its average over
// the ranks (all-reduce in flattened buckets). A parameter that received
// no gradient on some ranks counts as zero there; one unused on every rank
// keeps a nil gradient, so optimizers skip it as they would locally.
// Inside NoSync it does nothing.
func (d *DDP) SyncGradients() error {
	if d.noSync {
		return nil
	}
	if len(d.buckets) == 0 {
		if d.opts.BroadcastBuffers {
			return d.SyncBuffers()
		}
		return nil
	}
	// Every parameter travels (zeros where this rank has no gradient), and
	// the first bucket carries one more element per parameter: 1 where
	// this rank has a gradient. Its average is positive exactly where some
	// rank used the parameter, which saves a separate collective.
	type pending struct {
		idx  []int
		flat *tensor.Tensor
		work Work
	}
	all := make([]pending, len(d.buckets))
	for k, bucket := range d.buckets {
		var parts []*tensor.Tensor
		dt := d.params[bucket[0]].Value().DType()
		for _, i := range bucket {
			v := d.params[i].Value()
			g := d.params[i].Grad()
			if g == nil {
				g = tensor.Zeros(v.Shape(), v.DType())
			}
			parts = append(parts, g.To(v.DType()).Reshape(-1))
		}
		if k == 0 {
			used := make([]float64, len(d.params))
			for i, p := range d.params {
				if p.Grad() != nil {
					used[i] = 1
				}
			}
			parts = append(parts, tensor.FromSlice(used).To(dt))
		}
		flat := tensor.Concat(parts, 0)
		all[k] = pending{bucket, flat, d.pg.AllReduceAsync(flat, Avg)}
	}
	var errs []error
	var used []float64
	for k, p := range all {
		if err := wait(p.work); err != nil {
			errs = append(errs, err)
			continue
		}
		if k == 0 {
			n := p.flat.Numel()
			used = p.flat.Narrow(0, n-len(d.params), len(d.params)).Float64s()
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, p := range all {
		off := 0
		for _, i := range p.idx {
			v := d.params[i].Value()
			n := v.Numel()
			if used[i] > 0 {
				d.params[i].SetGrad(p.flat.Narrow(0, off, n).Reshape(v.Shape()...).Clone())
			} else {
				d.params[i].SetGrad(nil)
			}
			off += n
		}
	}
	if d.opts.BroadcastBuffers {
		return d.SyncBuffers()
	}
	return nil
}

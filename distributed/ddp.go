package distributed

import (
	"errors"
	"fmt"
	"hash/fnv"
	"sync"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// DefaultBucketBytes is the gradient bucket size of DataParallel, as in
// PyTorch's DistributedDataParallel.
const DefaultBucketBytes = 25 << 20

// sharedAllocator is a process group that can allocate tensors whose
// memory every rank of the machine maps (TCPGroup.SharedZeros).
type sharedAllocator interface {
	SharedZeros(shape []int, dt tensor.DType) (*tensor.Tensor, error)
}

// DDPOptions configures DataParallel. The zero value uses 25 MiB buckets.
type DDPOptions struct {
	// BucketBytes caps the size of one flattened gradient bucket; 0 means
	// DefaultBucketBytes.
	BucketBytes int
	// BroadcastBuffers makes SyncGradients also copy rank 0's buffers
	// (BatchNorm running statistics and the like) to every rank.
	BroadcastBuffers bool
	// SyncAfterBackward turns off the overlap of communication with
	// backward: no gradient hooks are registered and SyncGradients starts
	// every bucket's all-reduce itself. Use it when parameters' gradients
	// are computed with autograd.Grad rather than Backward (the hooks
	// cannot tell the two apart).
	SyncAfterBackward bool
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
// Communication overlaps backward, as in PyTorch: the parameters are
// grouped into buckets in reverse registration order (roughly the order in
// which backward produces their gradients), a gradient hook on every
// parameter marks it ready, and a bucket's asynchronous all-reduce starts
// as soon as all its parameters are ready and every earlier bucket has
// started (so every rank issues the same collectives in the same order).
// SyncGradients starts the buckets still waiting (those holding parameters
// that received no gradient) and waits for all of them. Each parameter may
// receive one gradient per Backward between two SyncGradients; accumulate
// over several backward passes inside NoSync.
type DDP struct {
	nn.Module
	pg      ProcessGroup
	opts    DDPOptions
	params  []*autograd.Var
	buckets [][]int // parameter indices, each bucket one dtype
	noSync  bool
	hooks   []*autograd.HookHandle

	// State of the current round (the gradients since the last
	// SyncGradients), guarded by mu: hooks run during backward.
	mu       sync.Mutex
	bucketOf []int            // bucket index of each parameter
	ready    []bool           // parameter's gradient arrived this round
	total    []*tensor.Tensor // its accumulated gradient, when ready
	left     []int            // parameters per bucket not yet ready
	need     []int            // parameters per bucket that require a gradient
	flats    []*tensor.Tensor // bucket buffers of this round
	// spares are the buckets of the previous round when they are
	// SharedZeros memory, which rounds alternate with flats instead of
	// allocating fresh buffers; nil otherwise.
	spares   []*tensor.Tensor
	works    []Work // started all-reduces, in bucket order
	roundErr error  // a gradient arrived for a started bucket

	// zero, when set by NewZeroOptimizer, reduce-scatters the buckets
	// instead; synced records that this round's reduce-scatters are done
	// and wait for its Step.
	zero   *ZeroOptimizer
	synced bool
}

// DataParallel wraps model for data-parallel training over pg. Every rank
// must build the same architecture; DataParallel checks that the ranks'
// parameters and buffers agree in number, dtype and shape (an error names
// the first that differs), then copies rank 0's parameters and buffers to
// every rank. Errors come from the network or from mismatched models.
func DataParallel(model nn.Module, pg ProcessGroup, opts DDPOptions) (*DDP, error) {
	if opts.BucketBytes < 0 {
		panic(fmt.Sprintf("distributed.DataParallel: negative BucketBytes %d", opts.BucketBytes))
	}
	if opts.BucketBytes == 0 {
		opts.BucketBytes = DefaultBucketBytes
	}
	d := &DDP{Module: model, pg: pg, opts: opts, params: model.Parameters()}
	// The replicas must agree on the parameter layout before any tensor
	// moves: compare the counts and total sizes, then every tensor's
	// dtype and shape, with Max and Min.
	total := 0
	for _, p := range d.params {
		if !p.Value().DType().IsFloat() || p.Value().DType().Size() < 4 {
			panic(fmt.Sprintf("distributed.DataParallel: parameter of dtype %s; gradients are averaged in float32 or float64", p.Value().DType()))
		}
		total += p.Value().Numel()
	}
	buffers := model.NamedBuffers()
	layout := []int64{int64(len(d.params)), int64(total), int64(len(buffers))}
	// The check travels on the parameters' device: a GPU process group
	// (NCCL) takes device tensors only.
	dev := tensor.CPU
	if len(d.params) > 0 {
		dev = d.params[0].Value().Device()
	}
	l, h, err := agreeInt64s(pg, dev, layout)
	if err != nil {
		return nil, err
	}
	if h[0] != l[0] || h[1] != l[1] || h[2] != l[2] {
		return nil, fmt.Errorf("distributed.DataParallel: rank %d's model has %d parameters (%d elements) and %d buffers, but the ranks range over %v..%v: every rank must build the same model", pg.Rank(), layout[0], layout[1], layout[2], l, h)
	}
	// Equal counts can hide different shapes (a 3×2 weight where another
	// rank has 2×3), which the broadcast below would fill without
	// complaint: compare each tensor's dtype and shape too.
	sigs := make([]int64, 0, len(d.params)+len(buffers))
	for _, p := range d.params {
		sigs = append(sigs, tensorSignature(p.Value()))
	}
	for _, b := range buffers {
		sigs = append(sigs, tensorSignature(b.Buffer))
	}
	if l, h, err = agreeInt64s(pg, dev, sigs); err != nil {
		return nil, err
	}
	mismatch := func(what string, v *tensor.Tensor) error {
		return fmt.Errorf("distributed.DataParallel: %s is %s %v on rank %d but of another dtype or shape on some rank: every rank must build the same model", what, v.DType(), v.Shape(), pg.Rank())
	}
	for i, p := range d.params {
		if l[i] != h[i] {
			return nil, mismatch(fmt.Sprintf("parameter %d", i), p.Value())
		}
	}
	for j, b := range buffers {
		if k := len(d.params) + j; l[k] != h[k] {
			return nil, mismatch(fmt.Sprintf("buffer %q", b.Name), b.Buffer)
		}
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
	d.bucketOf = make([]int, len(d.params))
	d.ready = make([]bool, len(d.params))
	d.total = make([]*tensor.Tensor, len(d.params))
	d.left = make([]int, len(d.buckets))
	d.need = make([]int, len(d.buckets))
	d.flats = make([]*tensor.Tensor, len(d.buckets))
	for k, bucket := range d.buckets {
		n := 0
		for _, i := range bucket {
			d.bucketOf[i] = k
			n += d.params[i].Value().Numel()
			if d.params[i].RequiresGrad() {
				d.need[k]++ // frozen parameters never get a hook call
			}
		}
		if k == len(d.buckets)-1 {
			n += len(d.params) // the used flags ride in the last bucket
		}
		d.left[k] = d.need[k]
		first := d.params[bucket[0]].Value()
		if pg.Size() == 1 {
			continue // one rank averages nothing: SyncGradients leaves the gradients be
		}
		if a, ok := pg.(sharedAllocator); ok && first.Device() == tensor.CPU {
			if d.spares == nil {
				d.spares = make([]*tensor.Tensor, len(d.buckets))
			}
			var err error
			if d.flats[k], err = a.SharedZeros([]int{n}, first.DType()); err != nil {
				return nil, err
			}
			if d.spares[k], err = a.SharedZeros([]int{n}, first.DType()); err != nil {
				return nil, err
			}
		} else {
			d.flats[k] = tensor.ZerosOn(first.Device(), []int{n}, first.DType())
		}
	}
	if !opts.SyncAfterBackward && pg.Size() > 1 {
		for i, p := range d.params {
			if p.RequiresGrad() {
				// gradReady only reads g, before SyncGradients replaces
				// Grad, so the leaf may keep g without a copy.
				d.hooks = append(d.hooks, p.RegisterHookWith(func(g *tensor.Tensor) *tensor.Tensor {
					d.gradReady(i, g)
					return nil
				}, autograd.HookOptions{SharesGrad: true}))
			}
		}
	}
	return d, nil
}

// agreeInt64s returns the elementwise minimum and maximum of vals over
// the ranks of pg (every rank passes the same number of values), moved
// to dev for the exchange.
func agreeInt64s(pg ProcessGroup, dev tensor.Device, vals []int64) (lo, hi []int64, err error) {
	if len(vals) == 0 {
		return nil, nil, nil
	}
	up, err := tensor.FromSlice(vals).ToDevice(dev)
	if err != nil {
		return nil, nil, err
	}
	down := up.Neg()
	if err := pg.AllReduce(up, Max); err != nil {
		return nil, nil, err
	}
	if err := pg.AllReduce(down, Max); err != nil {
		return nil, nil, err
	}
	return down.Neg().Int64s(), up.Int64s(), nil
}

// tensorSignature hashes t's dtype and shape (FNV-1a) into 62 bits, so
// that negating it cannot overflow.
func tensorSignature(t *tensor.Tensor) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s%v", t.DType(), t.Shape())
	return int64(h.Sum64() >> 2)
}

// Close removes the gradient hooks DataParallel registered, so that later
// backward passes start no communication. The process group stays open.
func (d *DDP) Close() {
	for _, h := range d.hooks {
		h.Remove()
	}
	d.hooks = nil
}

// gradReady is parameter i's gradient hook: g is this backward's gradient.
// It records the accumulated gradient and starts every bucket that has
// become ready, in bucket order.
func (d *DDP) gradReady(i int, g *tensor.Tensor) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.noSync {
		return
	}
	k := d.bucketOf[i]
	if d.ready[i] || k < len(d.works) {
		if d.roundErr == nil {
			d.roundErr = fmt.Errorf("distributed.DDP: parameter %d received a second gradient before SyncGradients (its bucket's all-reduce had started); run all but the last backward of an accumulation inside NoSync", i)
		}
		return
	}
	total := g
	if prev := d.params[i].Grad(); prev != nil {
		total = prev.Add(g)
	}
	d.ready[i], d.total[i] = true, total
	d.left[k]--
	for len(d.works) < len(d.buckets) && d.left[len(d.works)] == 0 {
		d.startBucket(len(d.works))
	}
}

// startBucket flattens bucket k's gradients (the ready ones from the hook,
// the others from Grad, zeros where there is none) into its buffer and
// starts its all-reduce; the last bucket also carries one flag per
// parameter, 1 where this rank has a gradient. d.mu must be held.
func (d *DDP) startBucket(k int) {
	if d.zero != nil {
		d.synced = false
		d.works = append(d.works, d.zero.startBucket(k))
		return
	}
	flat := d.flats[k]
	dst, _ := tensor.HostData(flat)
	off := 0
	for _, i := range d.buckets[k] {
		n := d.params[i].Value().Numel()
		g := d.total[i]
		if g == nil {
			g = d.params[i].Grad()
		}
		switch {
		case g == nil:
			flat.Narrow(0, off, n).Fill(0)
		case !copyHost(dst, off, g):
			flat.Narrow(0, off, n).CopyFrom(g.Reshape(-1))
		}
		off += n
	}
	if dst != nil {
		tensor.MarkWritten(flat)
	}
	if k == len(d.buckets)-1 {
		flags := make([]float64, len(d.params))
		for i, p := range d.params {
			if d.ready[i] || p.Grad() != nil {
				flags[i] = 1
			}
		}
		switch f := dst.(type) {
		case []float32:
			for i, v := range flags {
				f[off+i] = float32(v)
			}
			tensor.MarkWritten(flat)
		case []float64:
			copy(f[off:], flags)
			tensor.MarkWritten(flat)
		default: // device memory: one small upload
			src, err := tensor.FromSlice(flags).To(flat.DType()).ToDevice(flat.Device())
			if err != nil {
				panic(fmt.Sprintf("distributed.DataParallel: %v", err)) // flat lives there, so its backend is open
			}
			flat.Narrow(0, off, len(flags)).CopyFrom(src)
		}
	}
	d.works = append(d.works, d.pg.AllReduceAsync(flat, Avg))
}

// copyHost copies the contiguous CPU tensor src into dst[off:] when dst
// (a HostData slice) has src's dtype, and reports whether it did; the
// caller marks dst's tensor written.
func copyHost(dst any, off int, src *tensor.Tensor) bool {
	s, ok := tensor.HostData(src)
	if !ok {
		return false
	}
	switch d := dst.(type) {
	case []float32:
		if s, ok := s.([]float32); ok {
			copy(d[off:off+len(s)], s)
			return true
		}
	case []float64:
		if s, ok := s.([]float64); ok {
			copy(d[off:off+len(s)], s)
			return true
		}
	}
	return false
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
	d.mu.Lock()
	d.noSync = true
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.noSync = false
		d.mu.Unlock()
	}()
	return fn()
}

// SyncGradients replaces every parameter's gradient by its average over
// the ranks: it starts the all-reduce of every bucket the gradient hooks
// have not started yet and waits for all of them. A parameter that
// received no gradient on some ranks counts as zero there; one unused on
// every rank keeps a nil gradient, so optimizers skip it as they would
// locally. Inside NoSync it does nothing.
//
// The averaged gradients are views of the buckets. With a TCPGroup the
// buckets are SharedZeros memory, which the all-reduce of ranks on one
// machine reads in place, and two sets of them alternate: the gradients a
// SyncGradients sets are overwritten by the second SyncGradients after it
// (as with PyTorch's gradient_as_bucket_view); clone one to keep it longer.
// With other process groups every round has buffers of its own.
//
// With a ZeroOptimizer it finishes the reduce-scatter of the gradients
// instead and leaves the parameters' gradients alone; the optimizer's Step
// calls it, so calling it first is optional.
func (d *DDP) SyncGradients() error {
	d.mu.Lock()
	if d.noSync || (d.zero != nil && d.synced && len(d.works) == 0) {
		d.mu.Unlock()
		return nil
	}
	if d.zero == nil && d.pg.Size() == 1 {
		// The average over one rank is its gradient: nothing to flatten,
		// move or copy back.
		d.mu.Unlock()
		return nil
	}
	for len(d.works) < len(d.buckets) {
		d.startBucket(len(d.works))
	}
	works, roundErr := d.works, d.roundErr
	d.works, d.roundErr = nil, nil
	copy(d.left, d.need)
	clear(d.ready)
	clear(d.total)
	d.mu.Unlock()
	var errs []error
	for _, w := range works {
		if err := wait(w); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if roundErr != nil {
		return roundErr
	}
	if d.zero != nil {
		d.mu.Lock()
		d.synced = true
		d.mu.Unlock()
	} else if len(d.buckets) > 0 {
		last := d.flats[len(d.flats)-1]
		n := last.Numel()
		used := last.Narrow(0, n-len(d.params), len(d.params)).Float64s()
		// The averaged gradients are views of the bucket buffers, which
		// are handed over to them: the next round flattens into fresh
		// buffers (or the spares), so no gradient is copied out here.
		for k, bucket := range d.buckets {
			off := 0
			flat := d.flats[k]
			for _, i := range bucket {
				v := d.params[i].Value()
				n := v.Numel()
				if used[i] > 0 {
					d.params[i].SetGrad(flat.Narrow(0, off, n).Reshape(v.Shape()...))
				} else {
					d.params[i].SetGrad(nil)
				}
				off += n
			}
			if d.spares != nil {
				d.flats[k], d.spares[k] = d.spares[k], flat
			} else {
				d.flats[k] = tensor.ZerosOn(flat.Device(), flat.Shape(), flat.DType())
			}
		}
	}
	if d.opts.BroadcastBuffers {
		return d.SyncBuffers()
	}
	return nil
}

package distributed

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Optimizer is the method set of optim.Optimizer, which every optimizer of
// package optim has; ZeroOptimizer wraps one and is one itself, so LR
// schedules and checkpoints take it as they take the optimizer it wraps.
// (distributed does not import optim: the interface is repeated here.)
type Optimizer interface {
	// Stateful's StateDict returns the optimizer's state and
	// hyperparameters; LoadStateDict restores them.
	Stateful
	// Step applies one update to every parameter that has a gradient.
	Step() error
	// ZeroGrad clears the gradients of every parameter.
	ZeroGrad()
	// NumGroups returns the number of parameter groups.
	NumGroups() int
	// LR returns the learning rate of a parameter group.
	LR(group int) float64
	// SetLR sets the learning rate of every parameter group.
	SetLR(lr float64)
	// SetGroupLR sets the learning rate of one parameter group.
	SetGroupLR(group int, lr float64)
}

// ZeroOptimizer shards an optimizer over the ranks of a DDP, as ZeRO stage
// 1 (DeepSpeed; PyTorch's ZeroRedundancyOptimizer) does: each of
// DataParallel's gradient buckets is cut by element into one block per
// rank; backward's hooks start a reduce-scatter of each bucket instead of
// an all-reduce, so that each rank receives the averaged gradient of its
// block only; each rank runs the optimizer on its block of the parameters,
// holding optimizer state for that block only; and an all-gather of the
// updated blocks brings every rank's parameters up to date. The bytes sent
// are those of the all-reduce it replaces, while the optimizer's work and
// memory are divided by the number of ranks; every rank ends each step
// with bit-identical parameters.
//
// The optimizer must update each element from that element's gradient and
// state alone, as SGD, Adam, AdamW, Adagrad, RMSprop, Adamax, NAdam, RAdam,
// Adadelta and Lion do; LAMB, LARS and Adafactor (which use whole-tensor
// norms or factored state) and LBFGS cannot be sharded this way. It has one
// parameter group. The training loop is DataParallel's, with this
// optimizer's Step doing the sharded update (SyncGradients before it is
// optional):
//
//	model, err := distributed.DataParallel(net, pg, distributed.DDPOptions{})
//	opt := distributed.NewZeroOptimizer(model, func(shard []*autograd.Var) distributed.Optimizer {
//		return optim.NewAdam(shard, optim.AdamOptions{LR: 1e-3})
//	})
//	for ... {
//		opt.ZeroGrad()
//		loss := lossFn.Forward(model.Forward(x), y)
//		loss.Backward()
//		opt.Step()
//	}
//
// The parameters' Grad keeps this rank's local gradient: the averaged
// gradient exists only in blocks, so whole-model gradient clipping is not
// available. Parameters that receive no gradient on any rank are skipped,
// as they would be by the unsharded optimizer. Between Backward and Step
// the reduce-scatter may still be reading the parameters' gradients (they
// are sent from where backward left them, without a copy), so code in that
// window may replace a Grad but must not write into it in place; optim's
// ClipGradNorm and ClipGradValue replace it, and ZeroGrad runs after Step.
//
// Checkpoints hold the unsharded optimizer's state: Consolidate (on every
// rank) gathers the blocks, after which StateDict returns exactly what the
// unsharded optimizer over the model's trainable parameters would, and
// LoadStateDict takes such a state dict (every rank loads the whole of it
// and keeps its block). A checkpoint written with ZeroOptimizer therefore
// resumes unsharded training and the other way round.
type ZeroOptimizer struct {
	d       *DDP
	inner   Optimizer
	params  []int         // indices in d.params of the trainable parameters
	segs    []zeroSegment // this rank's share of them, in inner's order
	buckets []zeroBucket  // parallel to d.buckets
	steps   int           // Steps taken
	// consolidated is the state Consolidate gathered after consolidatedAt
	// steps.
	consolidated   map[string]*tensor.Tensor
	consolidatedAt int
}

// zeroBucket is the sharded layout of one DDP bucket of n elements (its
// parameters flattened in bucket order): block b holds elements
// [b·n/W, (b+1)·n/W), padded to size slots, and rank r owns block r+1
// (mod W), as in the ring all-reduce. A block travels as its elements,
// padding and the bucket's used flags (1 for each parameter with a
// gradient on the sending rank).
//
// On a TCPGroup with the bucket in CPU memory (direct), the blocks go
// straight from the gradient tensors to the peers and the updated
// parameters straight from and into the parameter tensors; otherwise they
// are copied through buffers of W blocks for the group's ReduceScatter
// and AllGather.
type zeroBucket struct {
	size   int            // element slots per block
	flags  int            // parameters in the bucket: used flags per block
	owned  int            // block this rank updates
	out    *tensor.Tensor // size+flags: this rank's block, reduced
	pieces []zeroPiece
	direct bool

	// Buffers of the direct path.
	spare []vec // buffers for the reduce-scatter (reduceScatterPartsAsync)
	zeros vec   // size zeros: padding and absent gradients
	used  vec   // this rank's flags

	// Buffers of the other groups.
	grads *tensor.Tensor // W blocks of size+flags
	vals  *tensor.Tensor // W blocks of size
}

// zeroPiece is the part of one parameter that falls in one block.
type zeroPiece struct {
	param    int // index in d.params
	slot     int // the parameter's position in its bucket (its flag)
	paramOff int // first element, in the flattened parameter
	block    int
	within   int // first slot in the block
	n        int
}

// zeroSegment is one trainable piece of an owned block: the Var the inner
// optimizer updates, a view of the parameter's elements.
type zeroSegment struct {
	v      *autograd.Var
	opt    int // index of its parameter in ZeroOptimizer.params
	bucket int
	piece  zeroPiece
}

// shardGroup is implemented by groups that send and receive blocks in
// pieces (TCPGroup); ZeroOptimizer uses ReduceScatter and AllGather over
// buffers with the others.
type shardGroup interface {
	reduceScatterPartsAsync(dt tensor.DType, send func(j int) parts, own parts, spare []vec, dst vec, op ReduceOp) Work
	allGatherPartsAsync(dt tensor.DType, own parts, into func(j int) parts) Work
}

// NewZeroOptimizer switches d to sharded updates and returns the optimizer
// that performs them; newOpt builds the wrapped optimizer over this rank's
// share of the trainable parameters (1-D views of their elements). Call it
// on every rank, before the first backward, once per DDP. It panics if
// the model's parameters are not contiguous or if this rank would hold no
// element (a bucket with fewer elements than ranks).
func NewZeroOptimizer(d *DDP, newOpt func(shard []*autograd.Var) Optimizer) *ZeroOptimizer {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.zero != nil {
		panic("distributed.NewZeroOptimizer: the DDP already has a ZeroOptimizer")
	}
	if len(d.works) > 0 {
		panic("distributed.NewZeroOptimizer: called during a round; call it before backward")
	}
	z := &ZeroOptimizer{d: d, consolidatedAt: -1}
	optIndex := make([]int, len(d.params))
	for i, p := range d.params {
		optIndex[i] = -1
		if p.RequiresGrad() {
			optIndex[i] = len(z.params)
			z.params = append(z.params, i)
		}
	}
	w, rank := d.pg.Size(), d.pg.Rank()
	var shard []*autograd.Var
	for k, bucket := range d.buckets {
		n := 0
		for _, i := range bucket {
			n += d.params[i].Value().Numel()
		}
		b := zeroBucket{size: max((n+w-1)/w, 1), flags: len(bucket), owned: (rank + 1) % w}
		off := 0
		for slot, i := range bucket {
			v := d.params[i].Value()
			if !v.IsContiguous() {
				panic(fmt.Sprintf("distributed.NewZeroOptimizer: parameter %d (shape %v) is not contiguous", i, v.Shape()))
			}
			m := v.Numel()
			for e := off; e < off+m; {
				blk := e * w / n // the block [blk·n/w, (blk+1)·n/w) holding e
				for (blk+1)*n/w <= e {
					blk++
				}
				lo, hi := blk*n/w, (blk+1)*n/w
				end := min(off+m, hi)
				pc := zeroPiece{param: i, slot: slot, paramOff: e - off, block: blk, within: e - lo, n: end - e}
				b.pieces = append(b.pieces, pc)
				if blk == b.owned && optIndex[i] >= 0 {
					seg := autograd.Param(v.View(-1).Narrow(0, pc.paramOff, pc.n))
					z.segs = append(z.segs, zeroSegment{v: seg, opt: optIndex[i], bucket: k, piece: pc})
					shard = append(shard, seg)
				}
				e = end
			}
			off += m
		}
		first := d.params[bucket[0]].Value()
		dev, dt := first.Device(), first.DType()
		b.out = tensor.ZerosOn(dev, []int{b.size + b.flags}, dt)
		_, b.direct = d.pg.(shardGroup)
		for _, i := range bucket {
			if _, ok := tensor.HostData(d.params[i].Value()); !ok {
				b.direct = false
			}
		}
		if b.direct {
			// Received or partial contributions of all but two ranks
			// need a buffer: the rest go straight to b.out.
			for range w - 2 {
				b.spare = append(b.spare, newVec(dt, b.size+b.flags))
			}
			b.zeros, b.used = newVec(dt, b.size), newVec(dt, b.flags)
		} else {
			b.grads = tensor.ZerosOn(dev, []int{w * (b.size + b.flags)}, dt)
			b.vals = tensor.ZerosOn(dev, []int{w * b.size}, dt)
		}
		z.buckets = append(z.buckets, b)
	}
	if len(shard) == 0 {
		panic(fmt.Sprintf("distributed.NewZeroOptimizer: rank %d would hold no trainable element of the model over %d ranks", rank, w))
	}
	z.inner = newOpt(shard)
	d.zero = z
	// The all-reduce buffers are not used any more.
	clear(d.flats)
	clear(d.spares)
	return z
}

// Local returns the wrapped optimizer, which updates this rank's share of
// the parameters (to change hyperparameters through its Groups).
func (z *ZeroOptimizer) Local() Optimizer { return z.inner }

// NumGroups returns the number of parameter groups: 1.
func (z *ZeroOptimizer) NumGroups() int { return z.inner.NumGroups() }

// LR returns the learning rate of group 0.
func (z *ZeroOptimizer) LR(group int) float64 { return z.inner.LR(group) }

// SetLR sets the learning rate (call it alike on every rank).
func (z *ZeroOptimizer) SetLR(lr float64) { z.inner.SetLR(lr) }

// SetGroupLR sets the learning rate of group 0.
func (z *ZeroOptimizer) SetGroupLR(group int, lr float64) { z.inner.SetGroupLR(group, lr) }

// ZeroGrad clears the gradients of the model's parameters.
func (z *ZeroOptimizer) ZeroGrad() {
	for _, p := range z.d.params {
		p.ZeroGrad()
	}
}

// startBucket lays out bucket k's gradients (d.total where the hook
// recorded one, else Grad, else zeros) in blocks, each ending in the
// bucket's used flags, and starts their reduce-scatter: on the direct path
// the blocks are views of the gradients, else copies in b.grads. d.mu must
// be held.
func (z *ZeroOptimizer) startBucket(k int) Work {
	d, b := z.d, &z.buckets[k]
	if b.direct {
		return z.startDirect(k)
	}
	w := d.pg.Size()
	stride := b.size + b.flags
	for _, pc := range b.pieces {
		g := d.total[pc.param]
		if g == nil {
			g = d.params[pc.param].Grad()
		}
		at := pc.block*stride + pc.within
		if g == nil {
			b.grads.Narrow(0, at, pc.n).Fill(0)
			continue
		}
		copyElems(b.grads, at, g, pc.paramOff, pc.n)
	}
	flags := make([]float64, b.flags)
	for slot, i := range d.buckets[k] {
		if d.ready[i] || d.params[i].Grad() != nil {
			flags[slot] = 1
		}
	}
	src := tensor.FromSlice(flags).To(b.grads.DType())
	if b.grads.Device() != tensor.CPU {
		moved, err := src.ToDevice(b.grads.Device())
		if err != nil {
			panic(fmt.Sprintf("distributed.ZeroOptimizer: %v", err)) // the buffer lives there, so its backend is open
		}
		src = moved
	}
	for blk := range w {
		copyElems(b.grads, blk*stride+b.size, src, 0, b.flags)
	}
	ins := make([]*tensor.Tensor, w)
	for j := range ins {
		ins[j] = b.grads.Narrow(0, ((j+1)%w)*stride, stride) // rank j gets block j+1
	}
	return d.pg.ReduceScatterAsync(b.out, ins, Avg)
}

// startDirect starts bucket k's reduce-scatter on the direct path: each
// peer gets its block's pieces of the gradient tensors, this rank's block
// is reduced into b.out.
func (z *ZeroOptimizer) startDirect(k int) Work {
	d, b := z.d, &z.buckets[k]
	w := d.pg.Size()
	blocks := make([]parts, w)
	for _, pc := range b.pieces {
		g := d.total[pc.param]
		if g == nil {
			g = d.params[pc.param].Grad()
		}
		var v vec
		switch {
		case g == nil:
			v = vec{b.zeros.dt, b.zeros.slice(0, pc.n)}
		case g.DType() != b.zeros.dt:
			v = hostVec(g.To(b.zeros.dt).Reshape(-1).Narrow(0, pc.paramOff, pc.n).Contiguous())
		default:
			v = hostVec(g.Reshape(-1).Narrow(0, pc.paramOff, pc.n).Contiguous())
		}
		blocks[pc.block] = append(blocks[pc.block], v)
	}
	for slot, i := range d.buckets[k] {
		used := 0.0
		if d.ready[i] || d.params[i].Grad() != nil {
			used = 1
		}
		switch f := b.used.data.(type) {
		case []float32:
			f[slot] = float32(used)
		case []float64:
			f[slot] = used
		}
	}
	for blk := range blocks {
		if pad := b.size - blocks[blk].len(); pad > 0 {
			blocks[blk] = append(blocks[blk], vec{b.zeros.dt, b.zeros.slice(0, pad)})
		}
		blocks[blk] = append(blocks[blk], b.used)
	}
	dst := hostVec(b.out)
	tensor.MarkWritten(b.out)
	send := func(j int) parts { return blocks[(j+1)%w] }
	return d.pg.(shardGroup).reduceScatterPartsAsync(b.zeros.dt, send, blocks[b.owned], b.spare, dst, Avg)
}

// paramParts returns block blk's pieces of bucket b's parameter tensors.
func (z *ZeroOptimizer) paramParts(b *zeroBucket, blk int) parts {
	var ps parts
	for _, pc := range b.pieces {
		if pc.block == blk {
			ps = append(ps, hostVec(z.d.params[pc.param].Value().View(-1).Narrow(0, pc.paramOff, pc.n)))
		}
	}
	return ps
}

// ownedGrads returns bucket b's owned block of averaged gradients and
// flags once its reduce-scatter has completed.
func (z *ZeroOptimizer) ownedGrads(b *zeroBucket) *tensor.Tensor { return b.out }

// allGatherAsync starts the all-gather of bucket b's buffer t (W blocks of
// b.size elements), to which this rank contributes its owned block, over
// the group's AllGather.
func (z *ZeroOptimizer) allGatherAsync(b *zeroBucket, t *tensor.Tensor) Work {
	w := z.d.pg.Size()
	outs := make([]*tensor.Tensor, w)
	for j := range outs {
		outs[j] = t.Narrow(0, ((j+1)%w)*b.size, b.size)
	}
	return z.d.pg.AllGatherAsync(outs, t.Narrow(0, b.owned*b.size, b.size).Clone())
}

// Step finishes the reduce-scatter of the gradients (SyncGradients), runs
// the wrapped optimizer on this rank's share of the parameters and
// all-gathers the updated shares, so that every rank's model holds the
// same updated parameters. Call it on every rank.
func (z *ZeroOptimizer) Step() error {
	d := z.d
	if err := d.SyncGradients(); err != nil {
		return err
	}
	d.mu.Lock()
	d.synced = false // this round's gradients are used up
	d.mu.Unlock()
	used := make([][]float64, len(z.buckets))
	for k := range z.buckets {
		b := &z.buckets[k]
		used[k] = z.ownedGrads(b).Narrow(0, b.size, b.flags).Float64s()
	}
	for _, s := range z.segs {
		b := &z.buckets[s.bucket]
		if used[s.bucket][s.piece.slot] > 0 {
			s.v.SetGrad(z.ownedGrads(b).Narrow(0, s.piece.within, s.piece.n))
		} else {
			s.v.SetGrad(nil)
		}
	}
	err := z.inner.Step()
	for _, s := range z.segs {
		s.v.SetGrad(nil) // the views are the next round's buffer
	}
	if err != nil {
		return err
	}
	z.steps++
	works := make([]Work, len(z.buckets))
	w := d.pg.Size()
	for k := range z.buckets {
		b := &z.buckets[k]
		if b.direct {
			into := func(j int) parts { return z.paramParts(b, (j+1)%w) }
			works[k] = d.pg.(shardGroup).allGatherPartsAsync(b.zeros.dt, z.paramParts(b, b.owned), into)
			continue
		}
		for _, pc := range b.pieces {
			if pc.block == b.owned {
				copyElems(b.vals, pc.block*b.size+pc.within, d.params[pc.param].Value(), pc.paramOff, pc.n)
			}
		}
		works[k] = z.allGatherAsync(b, b.vals)
	}
	var errs []error
	for k, work := range works {
		if err := wait(work); err != nil {
			errs = append(errs, err)
			continue
		}
		b := &z.buckets[k]
		for _, pc := range b.pieces {
			switch {
			case b.direct:
				tensor.MarkWritten(d.params[pc.param].Value())
			case pc.block != b.owned:
				copyElems(d.params[pc.param].Value(), pc.paramOff, b.vals, pc.block*b.size+pc.within, pc.n)
			}
		}
	}
	return errors.Join(errs...)
}

// copyElems copies n elements of src from element soff of its row-major
// order into dst from element doff; dst must be contiguous.
func copyElems(dst *tensor.Tensor, doff int, src *tensor.Tensor, soff, n int) {
	if d, ok := tensor.HostData(dst); ok {
		if s, ok := tensor.HostData(src); ok {
			switch d := d.(type) {
			case []float32:
				if s, ok := s.([]float32); ok {
					copy(d[doff:doff+n], s[soff:soff+n])
					tensor.MarkWritten(dst)
					return
				}
			case []float64:
				if s, ok := s.([]float64); ok {
					copy(d[doff:doff+n], s[soff:soff+n])
					tensor.MarkWritten(dst)
					return
				}
			}
		}
	}
	dst.View(-1).Narrow(0, doff, n).CopyFrom(src.Reshape(-1).Narrow(0, soff, n))
}

// Key prefixes and kinds of optimizer state dicts (see package optim).
const (
	zeroStatePrefix = "state."
	zeroGroupPrefix = "param_groups.0."
	zeroParamsKey   = zeroGroupPrefix + "params"
	kindScalar      = "s:"
	kindElements    = "e:"
)

// splitStateKey splits "state.<i>.<name>" into i and name.
func splitStateKey(key string) (int, string, bool) {
	rest, ok := strings.CutPrefix(key, zeroStatePrefix)
	if !ok {
		return 0, "", false
	}
	num, name, ok := strings.Cut(rest, ".")
	i, err := strconv.Atoi(num)
	if !ok || err != nil || i < 0 || name == "" {
		return 0, "", false
	}
	return i, name, true
}

// Consolidate gathers every rank's block of the optimizer state, so that
// StateDict returns the whole of it until the next Step. Call it on every
// rank (it is a collective), then save the checkpoint on one.
func (z *ZeroOptimizer) Consolidate() error {
	d := z.d
	local := z.inner.StateDict()
	if _, ok := local["param_groups.1.params"]; ok {
		return errors.New("distributed.ZeroOptimizer.Consolidate: the wrapped optimizer has several parameter groups; ZeroOptimizer supports one")
	}
	// Agree on the state names and their kinds: every rank sends the
	// sorted list it has, and all take the union.
	var mine []string
	for k, t := range local {
		if _, name, ok := splitStateKey(k); ok {
			kind := kindElements
			if t.Dim() == 0 {
				kind = kindScalar
			}
			if !slices.Contains(mine, kind+name) {
				mine = append(mine, kind+name)
			}
		}
	}
	names, err := z.unionStrings(mine)
	if err != nil {
		return err
	}
	// Which parameters have which state, and the scalar state's values.
	nk := len(names)
	own := make([]float64, 2*len(z.params)*nk)
	for j, s := range z.segs {
		for n, kn := range names {
			t, ok := local[zeroStatePrefix+strconv.Itoa(j)+"."+kn[2:]]
			if !ok {
				continue
			}
			at := 2 * (s.opt*nk + n)
			own[at] = 1
			if strings.HasPrefix(kn, kindScalar) {
				own[at+1] = t.Item()
			} else if t.Dim() != 1 || t.Numel() != s.piece.n {
				return fmt.Errorf("distributed.ZeroOptimizer.Consolidate: state %q has shape %v for a shard of %d elements: the optimizer is not elementwise and cannot be sharded", kn[2:], t.Shape(), s.piece.n)
			}
		}
	}
	w := d.pg.Size()
	presence := make([]*tensor.Tensor, w)
	for r := range presence {
		presence[r] = tensor.Zeros([]int{len(own)}, tensor.Float64)
	}
	if err := d.pg.AllGather(onDevice(presence, z.buckets[0].out.Device()), onDevice1(tensor.FromSlice(own), z.buckets[0].out.Device())); err != nil {
		return err
	}
	has := make([]bool, len(z.params)*nk) // parameter p has state name n
	scalar := make([]float64, len(z.params)*nk)
	for r := range w {
		got := presence[r].Float64s()
		for i := 0; i < len(got); i += 2 {
			if got[i] > 0 && !has[i/2] {
				has[i/2] = true
				scalar[i/2] = got[i+1]
			}
		}
	}
	full := map[string]*tensor.Tensor{}
	for pi := range z.params {
		for n, kn := range names {
			if has[pi*nk+n] && strings.HasPrefix(kn, kindScalar) {
				full[zeroStatePrefix+strconv.Itoa(pi)+"."+kn[2:]] = tensor.ScalarOf(scalar[pi*nk+n], tensor.Float64)
			}
		}
	}
	// Elementwise state: all-gather each bucket's blocks per name.
	optIndex := map[int]int{}
	for pi, i := range z.params {
		optIndex[i] = pi
	}
	for n, kn := range names {
		if !strings.HasPrefix(kn, kindElements) {
			continue
		}
		for k := range z.buckets {
			b := &z.buckets[k]
			buf := tensor.ZerosOn(b.out.Device(), []int{w * b.size}, b.out.DType())
			for j, s := range z.segs {
				if s.bucket == k && has[s.opt*nk+n] {
					copyElems(buf, b.owned*b.size+s.piece.within, local[zeroStatePrefix+strconv.Itoa(j)+"."+kn[2:]], 0, s.piece.n)
				}
			}
			if err := wait(z.allGatherAsync(b, buf)); err != nil {
				return err
			}
			for _, pc := range b.pieces {
				pi, ok := optIndex[pc.param]
				if !ok || !has[pi*nk+n] {
					continue
				}
				key := zeroStatePrefix + strconv.Itoa(pi) + "." + kn[2:]
				v := d.params[pc.param].Value()
				if full[key] == nil {
					full[key] = tensor.ZerosOn(v.Device(), v.Shape(), v.DType())
				}
				copyElems(full[key], pc.paramOff, buf, pc.block*b.size+pc.within, pc.n)
			}
		}
	}
	for k, t := range local {
		if strings.HasPrefix(k, zeroGroupPrefix) && k != zeroParamsKey {
			full[k] = t
		}
	}
	ids := make([]int64, len(z.params))
	for i := range ids {
		ids[i] = int64(i)
	}
	full[zeroParamsKey] = tensor.FromSlice(ids)
	z.consolidated, z.consolidatedAt = full, z.steps
	return nil
}

// onDevice moves host tensors to dev (a no-op on the CPU), for groups that
// take device tensors only (NCCL).
func onDevice(ts []*tensor.Tensor, dev tensor.Device) []*tensor.Tensor {
	for i, t := range ts {
		ts[i] = onDevice1(t, dev)
	}
	return ts
}

func onDevice1(t *tensor.Tensor, dev tensor.Device) *tensor.Tensor {
	if dev == tensor.CPU {
		return t
	}
	moved, err := t.ToDevice(dev)
	if err != nil {
		panic(fmt.Sprintf("distributed.ZeroOptimizer: %v", err)) // the parameters live there, so its backend is open
	}
	return moved
}

// unionStrings returns the sorted union of every rank's strings (which
// must not contain NUL).
func (z *ZeroOptimizer) unionStrings(mine []string) ([]string, error) {
	pg := z.d.pg
	dev := z.buckets[0].out.Device()
	enc := []byte(strings.Join(mine, "\x00"))
	length := onDevice1(tensor.FromSlice([]int64{int64(len(enc))}), dev)
	if err := pg.AllReduce(length, Max); err != nil {
		return nil, err
	}
	n := int(length.Int64s()[0])
	bytes := make([]int64, n+1) // one more: an empty list still sends a tensor
	for i, c := range enc {
		bytes[i] = int64(c) + 1 // 0 pads
	}
	outs := make([]*tensor.Tensor, pg.Size())
	for r := range outs {
		outs[r] = tensor.Zeros([]int{n + 1}, tensor.Int64)
	}
	if err := pg.AllGather(onDevice(outs, dev), onDevice1(tensor.FromSlice(bytes), dev)); err != nil {
		return nil, err
	}
	var all []string
	for _, o := range outs {
		var s []byte
		for _, c := range o.Int64s() {
			if c > 0 {
				s = append(s, byte(c-1))
			}
		}
		for _, name := range strings.Split(string(s), "\x00") {
			if name != "" && !slices.Contains(all, name) {
				all = append(all, name)
			}
		}
	}
	slices.Sort(all)
	return all, nil
}

// StateDict returns the state Consolidate gathered, in the layout of the
// unsharded optimizer over the model's trainable parameters (in
// Parameters order). It panics unless Consolidate ran after the last Step.
func (z *ZeroOptimizer) StateDict() map[string]*tensor.Tensor {
	if z.consolidated == nil || z.consolidatedAt != z.steps {
		panic("distributed.ZeroOptimizer.StateDict: the state is sharded; call Consolidate on every rank first (after the last Step)")
	}
	sd := make(map[string]*tensor.Tensor, len(z.consolidated))
	for k, t := range z.consolidated {
		sd[k] = t.Clone()
	}
	return sd
}

// LoadStateDict restores a state dict of the unsharded optimizer over the
// model's trainable parameters (what StateDict returns, or what the
// wrapped optimizer type saved in single-process training): this rank
// keeps its share. Every rank loads the same state dict; no communication
// takes place. On error the optimizer is unchanged.
func (z *ZeroOptimizer) LoadStateDict(sd map[string]*tensor.Tensor) error {
	errf := func(format string, a ...any) error {
		return fmt.Errorf("distributed.ZeroOptimizer.LoadStateDict: "+format, a...)
	}
	local := map[string]*tensor.Tensor{}
	for k, t := range sd {
		if t == nil {
			return errf("%q is nil", k)
		}
		if k == zeroParamsKey {
			want := make([]int64, len(z.params))
			for i := range want {
				want[i] = int64(i)
			}
			if t.DType() != tensor.Int64 || !slices.Equal(t.Int64s(), want) {
				return errf("%q lists %v, want the %d trainable parameters in order", k, t, len(z.params))
			}
			continue
		}
		if strings.HasPrefix(k, zeroGroupPrefix) {
			local[k] = t
			continue
		}
		pi, name, ok := splitStateKey(k)
		if !ok || pi >= len(z.params) {
			return errf("unexpected key %q", k)
		}
		p := z.d.params[z.params[pi]].Value()
		for j, s := range z.segs {
			if s.opt != pi {
				continue
			}
			key := zeroStatePrefix + strconv.Itoa(j) + "." + name
			switch {
			case t.Dim() == 0:
				local[key] = t
			case t.Numel() == p.Numel():
				local[key] = t.Reshape(-1).Narrow(0, s.piece.paramOff, s.piece.n)
			default:
				return errf("%q has shape %v, parameter %d has shape %v", k, t.Shape(), pi, p.Shape())
			}
		}
	}
	ids := make([]int64, len(z.segs))
	for i := range ids {
		ids[i] = int64(i)
	}
	local[zeroParamsKey] = tensor.FromSlice(ids)
	if err := z.inner.LoadStateDict(local); err != nil {
		return errf("%v", err)
	}
	z.consolidated = nil
	return nil
}

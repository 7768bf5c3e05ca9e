package serve

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
)

// ModelOptions configures one model. The zero value is usable: batches of
// up to 8 requests gathered for up to 2 ms, one runner with the whole
// machine's threads, a queue of 64 requests, warm-up at load.
type ModelOptions struct {
	// MaxBatch is the most requests joined into one run; 1 runs every
	// request alone. Zero means 8.
	MaxBatch int
	// MaxBatchRows is the most rows (the size of the batch axis, summed
	// over the joined requests) one run holds, which bounds a joined
	// run's memory; a request with more rows runs alone. Zero means 64.
	MaxBatchRows int
	// MaxWait is how long a runner holding the first request of a batch
	// waits for more. Zero means 2 ms; a negative value means no wait
	// (a batch is whatever is already queued).
	MaxWait time.Duration
	// QueueSize is the most requests that may wait for a runner; one more
	// fails at once with an *OverloadError. Zero means 64.
	QueueSize int
	// Runs is how many session runs of this model may be in progress at
	// once. Zero means 1.
	Runs int
	// Threads is the model's thread budget: each of its Runs runners gets
	// max(1, Threads/Runs) intra-op threads (SessionOptions.IntraOpThreads
	// of its session, left at its default, GOMAXPROCS, when Threads is
	// zero and Runs is 1). Zero means runtime.GOMAXPROCS(0).
	Threads int
	// Session holds the remaining session options (MaxBytes, MaxElements,
	// ...); its IntraOpThreads is set from Threads.
	Session onnx.SessionOptions
	// WarmUp holds inputs for the warm-up runs at load. When nil, inputs
	// are made from the declared input shapes (symbolic dimensions set to
	// 1): small deterministic values for floats, zeros and ones for
	// integers.
	WarmUp map[string]*tensor.Tensor
	// NoWarmUp skips the warm-up runs; batching is then used whenever the
	// model's declared shapes allow it, without the bit-equality check.
	NoWarmUp bool

	// beforeBatch, when set (by tests), is called by a runner holding the
	// first request of a batch before it gathers the others.
	beforeBatch func()
}

// withDefaults fills the zero fields of o.
func (o ModelOptions) withDefaults() ModelOptions {
	if o.MaxBatch <= 0 {
		o.MaxBatch = 8
	}
	if o.MaxBatchRows <= 0 {
		o.MaxBatchRows = 64
	}
	if o.MaxWait == 0 {
		o.MaxWait = 2 * time.Millisecond
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 64
	}
	if o.Runs <= 0 {
		o.Runs = 1
	}
	if o.Threads <= 0 {
		o.Threads = runtime.GOMAXPROCS(0)
		if o.Runs == 1 {
			// The session's default already is GOMAXPROCS threads.
			o.Session.IntraOpThreads = 0
			return o
		}
	}
	o.Session.IntraOpThreads = max(1, o.Threads/o.Runs)
	return o
}

// request is one Predict call waiting for its run.
type request struct {
	ctx    context.Context
	inputs map[string]*tensor.Tensor
	rows   int // size of axis 0 shared by every input, or -1
	key    string
	done   chan answer // buffered: a runner never blocks on it
	// taken is set by the runner that picks the request up, or by Predict
	// when the caller gives up first: whichever sets it answers it.
	taken atomic.Bool
	// release hands back the request's bytes of the server's budget; the
	// runner calls it once the request's run is over.
	release func()
	// answered is set by finish.
	answered atomic.Bool
}

// finish returns r's bytes to the budget and delivers a to r (never
// blocks: done has room for one), so a caller that has its answer sees
// its bytes released; calls after the first do nothing.
func (r *request) finish(a answer) {
	if !r.answered.CompareAndSwap(false, true) {
		return
	}
	if r.release != nil {
		r.release()
	}
	r.done <- a
}

// answer is a request's outputs or error.
type answer struct {
	outputs map[string]*tensor.Tensor
	err     error
	// ran reports whether a run was attempted for it (false when it was
	// dropped because its context had ended).
	ran bool
}

// instance is one loaded version of a model: its session, queue and
// runners.
type instance struct {
	name    string
	sess    *onnx.Session
	opts    ModelOptions
	metrics *metrics
	// batchable reports whether requests are joined along axis 0;
	// batchOff says why not.
	batchable bool
	batchOff  string
	// outRowBytes is the bytes per batch row of all outputs together, or
	// -1 when an output's shape is not known past axis 0.
	outRowBytes int64

	queue chan *request
	// active counts the Predict calls in progress for this instance and
	// inRun the requests its runners hold: when every active request is
	// held, a runner has no one to wait for.
	active  atomic.Int64
	inRun   atomic.Int64
	mu      sync.RWMutex // guards closed against sends on queue
	closed  bool
	users   sync.WaitGroup // Predict calls holding this instance
	runners sync.WaitGroup
}

// newInstance prepares a session for m, warms it up and starts its
// runners.
func newInstance(ctx context.Context, name string, m *onnx.Model, opts ModelOptions, mt *metrics) (*instance, error) {
	sess, err := m.NewSession(opts.Session)
	if err != nil {
		return nil, err
	}
	in := &instance{name: name, sess: sess, opts: opts, metrics: mt}
	for _, v := range sess.Inputs() {
		if v.Kind != "" && v.Kind != "tensor" {
			return nil, fmt.Errorf("serve: model %q: input %q is a %s; Predict feeds tensors only", name, v.Name, v.Kind)
		}
	}
	in.batchable, in.batchOff = batchAxis(sess)
	if opts.MaxBatch == 1 && in.batchable {
		in.batchable, in.batchOff = false, "MaxBatch is 1"
	}
	in.outRowBytes = outputRowBytes(sess)
	if !opts.NoWarmUp {
		if err := in.warmUp(ctx); err != nil {
			return nil, err
		}
	}
	in.queue = make(chan *request, opts.QueueSize)
	for range opts.Runs {
		in.runners.Add(1)
		go in.runLoop()
	}
	return in, nil
}

// batchAxis reports whether requests to sess can be joined along axis 0:
// every input declares the same symbolic first dimension, and shape
// inference gives every output that symbol first. Otherwise it says why
// not.
func batchAxis(sess *onnx.Session) (bool, string) {
	sym := ""
	for _, in := range sess.Inputs() {
		if !in.HasShape || len(in.Shape) == 0 || in.Shape[0].Param == "" {
			return false, fmt.Sprintf("input %q has no symbolic first dimension", in.Name)
		}
		if sym != "" && in.Shape[0].Param != sym {
			return false, fmt.Sprintf("inputs disagree on the first dimension (%q and %q)", sym, in.Shape[0].Param)
		}
		sym = in.Shape[0].Param
	}
	if sym == "" {
		return false, "the model has no inputs"
	}
	for _, out := range sess.Outputs() {
		d := outputShape(sess, out)
		if len(d) == 0 || d[0].Param != sym {
			return false, fmt.Sprintf("output %q does not have the inputs' batch dimension %q first", out.Name, sym)
		}
	}
	return true, ""
}

// outputShape returns the shape of out inferred at load, each dimension
// shape inference left unknown taken from the model's declaration (nil
// when neither knows the rank).
func outputShape(sess *onnx.Session, out onnx.ValueInfo) []onnx.Dim {
	d, ok := sess.ValueShape(out.Name)
	if !ok {
		if out.HasShape {
			return out.Shape
		}
		return nil
	}
	if out.HasShape && len(out.Shape) == len(d) {
		for i := range d {
			if d[i].Value < 0 && d[i].Param == "" {
				d[i] = out.Shape[i]
			}
		}
	}
	return d
}

// outputRowBytes returns the bytes of one batch row of every output, or -1
// when some output's shape past axis 0 or its dtype is unknown.
func outputRowBytes(sess *onnx.Session) int64 {
	var total int64
	for _, out := range sess.Outputs() {
		dt, err := out.DType()
		d := outputShape(sess, out)
		if err != nil || len(d) == 0 {
			return -1
		}
		n := int64(dt.Size())
		for _, dim := range d[1:] {
			if dim.Value < 0 {
				return -1
			}
			n *= dim.Value
		}
		total += n
	}
	return total
}

// warmUp runs the model once on warm-up inputs and, when batching is
// possible, once on two different rows joined: batching is kept only if
// each batched row is bit-equal to its single run.
func (in *instance) warmUp(ctx context.Context) error {
	inputs := in.opts.WarmUp
	if inputs == nil {
		var err error
		if inputs, err = synthInputs(in.sess, 0); err != nil {
			return fmt.Errorf("serve: model %q: %w (give ModelOptions.WarmUp or set NoWarmUp)", in.name, err)
		}
	}
	single, err := in.sess.Run(ctx, inputs)
	if err != nil {
		return fmt.Errorf("serve: model %q: warm-up run: %w", in.name, err)
	}
	if !in.batchable {
		return nil
	}
	other := inputs
	if in.opts.WarmUp == nil {
		other, _ = synthInputs(in.sess, 1)
	}
	otherOut, err := in.sess.Run(ctx, other)
	if err != nil && in.opts.WarmUp == nil {
		// Integer inputs of 1 may be out of range (indices into a short
		// axis): check with the first inputs twice.
		other, otherOut, err = inputs, single, nil
	}
	if err != nil {
		return fmt.Errorf("serve: model %q: warm-up run: %w", in.name, err)
	}
	reqs := []*request{{inputs: inputs}, {inputs: other}}
	for _, r := range reqs {
		r.rows, r.key = signature(r.inputs)
	}
	if reqs[0].rows < 0 || reqs[0].key != reqs[1].key {
		return nil // warm-up inputs that cannot be joined: no check possible
	}
	var scratch batchScratch
	split, err := in.runBatch(ctx, reqs, &scratch)
	if err != nil {
		in.batchable, in.batchOff = false, "a batched warm-up run failed: "+err.Error()
		return nil
	}
	for i, want := range []map[string]*tensor.Tensor{single, otherOut} {
		for name, w := range want {
			if !bitEqual(w, split[i][name]) {
				in.batchable, in.batchOff = false, fmt.Sprintf("batched output %q differs from a single run's in the warm-up check", name)
				return nil
			}
		}
	}
	return nil
}

// synthInputs makes inputs from the declared shapes of sess (symbolic
// dimensions 1): floats follow a deterministic pattern varied by seed;
// other dtypes are zero for seed 0 and alternate 0 and 1 otherwise.
func synthInputs(sess *onnx.Session, seed int) (map[string]*tensor.Tensor, error) {
	out := map[string]*tensor.Tensor{}
	for _, v := range sess.Inputs() {
		if !v.HasShape {
			return nil, fmt.Errorf("input %q declares no shape to make warm-up data from", v.Name)
		}
		dt, err := v.DType()
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", v.Name, err)
		}
		shape := make([]int, len(v.Shape))
		n := 1
		for i, d := range v.Shape {
			shape[i] = 1
			if d.Value >= 0 {
				shape[i] = int(d.Value)
			} else if d.Param == "" {
				return nil, fmt.Errorf("input %q has a dimension of unknown size", v.Name)
			}
			n *= shape[i]
		}
		if n > 1<<24 {
			return nil, fmt.Errorf("input %q holds %d elements: too large for warm-up data", v.Name, n)
		}
		vals := make([]float32, n)
		for i := range vals {
			switch {
			case dt.IsFloat():
				vals[i] = float32((i*7+seed*13)%17)/17 - 0.5
			case seed > 0:
				vals[i] = float32((i + seed) % 2)
			}
		}
		out[v.Name] = tensor.FromSlice(vals, shape...).To(dt)
	}
	return out, nil
}

// bitEqual reports whether a and b have the same shape, dtype and bits.
func bitEqual(a, b *tensor.Tensor) bool {
	if a == nil || b == nil || a.DType() != b.DType() || !slices.Equal(a.Shape(), b.Shape()) {
		return false
	}
	if a.DType().IsFloat() {
		x, y := a.Float64s(), b.Float64s()
		for i := range x {
			if x[i] != y[i] && !(x[i] != x[i] && y[i] != y[i]) { // NaN equals NaN here
				return false
			}
		}
		return true
	}
	if a.DType() == tensor.Bool {
		return slices.Equal(a.Bools(), b.Bools())
	}
	if a.DType() == tensor.Uint64 {
		return slices.Equal(a.Uint64s(), b.Uint64s())
	}
	return slices.Equal(a.Int64s(), b.Int64s())
}

// signature returns the size of axis 0 shared by every input (-1 when
// they differ or an input is a scalar) and a key naming the inputs'
// names, dtypes and shapes past axis 0: requests with equal keys can be
// joined.
func signature(inputs map[string]*tensor.Tensor) (rows int, key string) {
	names := make([]string, 0, len(inputs))
	for n := range inputs {
		names = append(names, n)
	}
	slices.Sort(names)
	rows = -1
	var sb strings.Builder
	for _, n := range names {
		t := inputs[n]
		if t == nil || t.Dim() == 0 {
			return -1, ""
		}
		if rows == -1 {
			rows = t.Shape()[0]
		} else if rows != t.Shape()[0] {
			return -1, ""
		}
		fmt.Fprintf(&sb, "%q %s %v;", n, t.DType(), t.Shape()[1:])
	}
	return rows, sb.String()
}

// submit queues r without waiting: it fails with an *OverloadError when
// the queue is full and with ErrClosed once the instance is closing.
func (in *instance) submit(r *request) error {
	in.mu.RLock()
	defer in.mu.RUnlock()
	if in.closed {
		return ErrClosed
	}
	select {
	case in.queue <- r:
		return nil
	default:
		return &OverloadError{Model: in.name, RetryAfter: time.Second,
			Reason: fmt.Sprintf("queue full (%d requests waiting; ModelOptions.QueueSize)", cap(in.queue))}
	}
}

// close stops accepting requests once no caller holds the instance,
// answers every queued request and waits for the runners to finish.
func (in *instance) close() {
	in.users.Wait()
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		in.runners.Wait()
		return
	}
	in.closed = true
	close(in.queue)
	in.mu.Unlock()
	in.runners.Wait()
}

// runLoop is one runner: it gathers batches from the queue and runs them
// until the queue is closed and empty.
func (in *instance) runLoop() {
	defer in.runners.Done()
	var scratch batchScratch
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	batch := make([]*request, 0, in.opts.MaxBatch)
	for {
		first, ok := <-in.queue
		if !ok {
			return
		}
		in.inRun.Add(1)
		batch = append(batch[:0], first)
		if in.opts.beforeBatch != nil {
			in.opts.beforeBatch()
		}
		if in.batchable {
			batch = in.gather(batch, timer)
		}
		in.safeProcess(batch, &scratch)
		in.inRun.Add(-int64(len(batch)))
		clear(batch)
	}
}

// safeProcess is process with a panic turned into an error answer for
// every request of batch not answered yet, so the runner lives on and
// every caller gets a response.
func (in *instance) safeProcess(batch []*request, scratch *batchScratch) {
	defer func() {
		if p := recover(); p != nil {
			*scratch = batchScratch{}
			err := fmt.Errorf("serve: model %q: internal error: %v", in.name, p)
			for _, r := range batch {
				r.taken.Store(true)
				r.finish(answer{err: err})
			}
		}
	}()
	in.process(batch, scratch)
}

// gather adds queued requests to batch until it holds MaxBatch of them,
// MaxWait has passed since the first, or no other request is in progress
// (a lone caller does not wait for company that cannot come).
func (in *instance) gather(batch []*request, timer *time.Timer) []*request {
	waiting := false
	defer func() {
		if waiting {
			timer.Stop()
		}
	}()
	for len(batch) < in.opts.MaxBatch {
		select {
		case r, ok := <-in.queue:
			if !ok {
				return batch
			}
			in.inRun.Add(1)
			batch = append(batch, r)
			continue
		default:
		}
		if in.opts.MaxWait < 0 || in.active.Load() <= in.inRun.Load() {
			return batch
		}
		if !waiting {
			waiting = true
			timer.Reset(in.opts.MaxWait)
		}
		select {
		case r, ok := <-in.queue:
			if !ok {
				return batch
			}
			in.inRun.Add(1)
			batch = append(batch, r)
		case <-timer.C:
			waiting = false
			return batch
		}
	}
	return batch
}

// process answers every request of batch: those whose context has ended
// are dropped, the others run in groups of joinable requests (alone when
// batching is off or a batched run fails).
func (in *instance) process(batch []*request, scratch *batchScratch) {
	live := batch[:0:0]
	for _, r := range batch {
		if !r.taken.CompareAndSwap(false, true) {
			continue // its caller gave up and answered itself
		}
		if err := r.ctx.Err(); err != nil {
			r.finish(answer{err: err})
			continue
		}
		live = append(live, r)
	}
	for _, group := range in.groups(live) {
		in.runGroup(group, scratch)
	}
}

// groups splits requests into runs: requests with equal signatures are
// joined, in arrival order, while their rows fit in MaxBatchRows; without
// batching, or for a request that cannot be joined, each runs alone.
func (in *instance) groups(live []*request) [][]*request {
	var out [][]*request
	var rows []int // rows of each group in out
	for _, r := range live {
		placed := false
		if in.batchable && r.rows >= 0 {
			for i, g := range out {
				if g[0].rows >= 0 && g[0].key == r.key && rows[i]+r.rows <= in.opts.MaxBatchRows {
					out[i] = append(g, r)
					rows[i] += r.rows
					placed = true
					break
				}
			}
		}
		if !placed {
			out = append(out, []*request{r})
			rows = append(rows, r.rows)
		}
	}
	return out
}

// runGroup runs joinable requests, once for all when there are several,
// and answers each. When the joined run fails each request runs alone, so
// one bad request cannot fail the others.
func (in *instance) runGroup(group []*request, scratch *batchScratch) {
	if len(group) > 1 {
		ctx, cancel := groupContext(group)
		split, err := in.runBatch(ctx, group, scratch)
		cancel()
		if err == nil {
			in.metrics.run(len(group))
			for i, r := range group {
				r.finish(answer{outputs: split[i], ran: true})
			}
			return
		}
		in.metrics.run(len(group))
	}
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.finish(answer{err: err})
			continue
		}
		outs, err := in.runOne(r)
		in.metrics.run(1)
		r.finish(answer{outputs: outs, err: err, ran: true})
	}
}

// runOne runs one request alone, turning a panic into an error.
func (in *instance) runOne(r *request) (outs map[string]*tensor.Tensor, err error) {
	defer func() {
		if p := recover(); p != nil {
			outs, err = nil, fmt.Errorf("serve: model %q: run failed: %v", in.name, p)
		}
	}()
	return in.sess.Run(r.ctx, r.inputs)
}

// groupContext returns a context that is done once every request of group
// is done (each request still sees its own context's end).
func groupContext(group []*request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	var left atomic.Int64
	left.Store(int64(len(group)))
	stops := make([]func() bool, len(group))
	for i, r := range group {
		stops[i] = context.AfterFunc(r.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// batchScratch holds one runner's joined-input buffers, reused from batch
// to batch while the requests' signature stays the same.
type batchScratch struct {
	key  string
	bufs map[string]*tensor.Tensor // capacity rows along axis 0
}

// buffer returns a tensor view of rows rows for input name, shaped like
// like past axis 0, reusing the scratch buffer when it is large enough.
func (s *batchScratch) buffer(key, name string, like *tensor.Tensor, rows int) *tensor.Tensor {
	if s.key != key {
		s.key, s.bufs = key, map[string]*tensor.Tensor{}
	}
	b := s.bufs[name]
	if b == nil || b.Shape()[0] < rows {
		shape := like.Shape()
		shape[0] = rows
		b = tensor.Zeros(shape, like.DType())
		s.bufs[name] = b
	}
	return b.Narrow(0, 0, rows)
}

// forget drops the buffer of input name (an output shares its storage).
func (s *batchScratch) forget(name string) { delete(s.bufs, name) }

// runBatch joins the requests' inputs along axis 0 into scratch buffers,
// runs the session once and splits every output by the requests' rows
// into tensors of their own.
func (in *instance) runBatch(ctx context.Context, group []*request, scratch *batchScratch) (split []map[string]*tensor.Tensor, err error) {
	defer func() {
		if p := recover(); p != nil {
			split, err = nil, fmt.Errorf("serve: model %q: batched run failed: %v", in.name, p)
		}
	}()
	total := 0
	for _, r := range group {
		total += r.rows
	}
	joined := make(map[string]*tensor.Tensor, len(group[0].inputs))
	for name, first := range group[0].inputs {
		buf := scratch.buffer(group[0].key, name, first, total)
		at := 0
		for _, r := range group {
			if r.rows > 0 {
				buf.Narrow(0, at, r.rows).CopyFrom(r.inputs[name])
			}
			at += r.rows
		}
		joined[name] = buf
	}
	outs, err := in.sess.Run(ctx, joined)
	if err != nil {
		return nil, err
	}
	split = make([]map[string]*tensor.Tensor, len(group))
	for i := range split {
		split[i] = make(map[string]*tensor.Tensor, len(outs))
	}
	for name, t := range outs {
		if t.Dim() == 0 || t.Shape()[0] != total {
			return nil, fmt.Errorf("serve: model %q: output %q has shape %v, not the batch of %d rows first", in.name, name, t.Shape(), total)
		}
		for inName, buf := range joined {
			if t.SharesStorage(buf) {
				scratch.forget(inName)
			}
		}
		at := 0
		for i, r := range group {
			split[i][name] = t.Narrow(0, at, r.rows).Clone()
			at += r.rows
		}
	}
	return split, nil
}

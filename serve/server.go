package serve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
)

// DefaultMaxBytesInFlight is the memory budget of a Server whose
// Options.MaxBytesInFlight is zero.
const DefaultMaxBytesInFlight = 1 << 30

// Options configures a Server. The zero value is usable.
type Options struct {
	// MaxBytesInFlight is the server's memory budget for requests in
	// flight: every admitted request reserves its inputs' bytes twice (its
	// own tensors and its rows of the joined batch) plus its expected
	// outputs' bytes, and callers may reserve more with Reserve. Zero
	// means DefaultMaxBytesInFlight.
	MaxBytesInFlight int64
	// AdmissionWait is how long a request waits for room in the budget
	// before it fails with an *OverloadError; zero fails at once. The
	// request's context may end the wait sooner.
	AdmissionWait time.Duration
	// RetryAfter is the hint an *OverloadError carries. Zero means 1 s.
	RetryAfter time.Duration
}

// Server runs requests through several models by name. Its methods may be
// called from many goroutines at once.
type Server struct {
	opts   Options
	budget budget

	mu      sync.RWMutex
	closed  bool
	models  map[string]*instance
	metrics map[string]*metrics
	// loading serializes Load and Unload of one name.
	loading map[string]*sync.Mutex
}

// New returns a Server with no models; add them with Load or LoadFile.
func New(opts Options) *Server {
	if opts.MaxBytesInFlight <= 0 {
		opts.MaxBytesInFlight = DefaultMaxBytesInFlight
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = time.Second
	}
	s := &Server{opts: opts, models: map[string]*instance{}, metrics: map[string]*metrics{}, loading: map[string]*sync.Mutex{}}
	s.budget.limit = opts.MaxBytesInFlight
	return s
}

// nameLock returns the mutex serializing loads of name.
func (s *Server) nameLock(name string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.loading[name]
	if l == nil {
		l = &sync.Mutex{}
		s.loading[name] = l
	}
	return l
}

// LoadFile reads the ONNX model at path and loads it as name (see Load).
func (s *Server) LoadFile(ctx context.Context, name, path string, opts ModelOptions) error {
	m, err := onnx.LoadContext(ctx, path, onnx.LoadOptions{MaxBytes: opts.Session.MaxBytes})
	if err != nil {
		return err
	}
	return s.Load(ctx, name, m, opts)
}

// Load prepares a session for m, warms it up (see ModelOptions.WarmUp)
// and serves it as name. When name is already loaded this is a hot
// reload: the new version takes the requests that arrive from the swap
// on, and the old one answers every request it had accepted before Load
// returns. On error the old version, if any, stays in place.
func (s *Server) Load(ctx context.Context, name string, m *onnx.Model, opts ModelOptions) error {
	if m == nil {
		return errors.New("serve: Load: nil model")
	}
	opts = opts.withDefaults()
	lock := s.nameLock(name)
	lock.Lock()
	defer lock.Unlock()

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	mt := s.metrics[name]
	if mt == nil {
		mt = newMetrics(opts.MaxBatch)
	}
	s.mu.Unlock()

	in, err := newInstance(ctx, name, m, opts, mt)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		in.close()
		return ErrClosed
	}
	old := s.models[name]
	s.models[name] = in
	if s.metrics[name] == nil {
		s.metrics[name] = mt
	}
	mt.mu.Lock()
	mt.version++
	if len(mt.batches.Bounds) == 0 || mt.batches.Bounds[len(mt.batches.Bounds)-1] < float64(opts.MaxBatch) {
		fresh := newMetrics(opts.MaxBatch)
		mt.batches = fresh.batches
	}
	mt.mu.Unlock()
	s.mu.Unlock()
	if old != nil {
		old.close()
	}
	return nil
}

// Unload stops serving name: new requests for it fail with
// ErrUnknownModel, and every request it had accepted is answered before
// Unload returns. The model's memory is then free for the collector.
func (s *Server) Unload(name string) error {
	lock := s.nameLock(name)
	lock.Lock()
	defer lock.Unlock()
	s.mu.Lock()
	in := s.models[name]
	if in == nil {
		s.mu.Unlock()
		return fmt.Errorf("%w %q", ErrUnknownModel, name)
	}
	delete(s.models, name)
	delete(s.metrics, name)
	s.mu.Unlock()
	in.close()
	return nil
}

// Close stops accepting requests and loads, and answers every request in
// flight before it returns (or until ctx ends, with ctx's error).
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	ins := make([]*instance, 0, len(s.models))
	for name, in := range s.models {
		ins = append(ins, in)
		delete(s.models, name)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		for _, in := range ins {
			in.close()
		}
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ModelInfo describes a loaded model.
type ModelInfo struct {
	// Name is the name the model is served as.
	Name string
	// Inputs and Outputs are the model's declared inputs and outputs.
	Inputs, Outputs []onnx.ValueInfo
	// Batching reports whether requests are joined along the batch axis;
	// BatchingOff says why not.
	Batching    bool
	BatchingOff string
	// Options are the model's options with their defaults filled in.
	Options ModelOptions
}

// Model describes the model loaded as name.
func (s *Server) Model(name string) (ModelInfo, error) {
	s.mu.RLock()
	in := s.models[name]
	s.mu.RUnlock()
	if in == nil {
		return ModelInfo{}, fmt.Errorf("%w %q", ErrUnknownModel, name)
	}
	return in.info(), nil
}

// Models describes every loaded model, sorted by name.
func (s *Server) Models() []ModelInfo {
	s.mu.RLock()
	out := make([]ModelInfo, 0, len(s.models))
	for _, in := range s.models {
		out = append(out, in.info())
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b ModelInfo) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// info describes in.
func (in *instance) info() ModelInfo {
	return ModelInfo{Name: in.name, Inputs: in.sess.Inputs(), Outputs: in.sess.Outputs(),
		Batching: in.batchable, BatchingOff: in.batchOff, Options: in.opts}
}

// Ready reports whether the server is open and serves at least one model.
func (s *Server) Ready() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return !s.closed && len(s.models) > 0
}

// Stats returns a snapshot of the server's statistics.
func (s *Server) Stats() Stats {
	st := Stats{BytesInFlight: s.budget.inFlight(), MaxBytesInFlight: s.budget.limit, Models: map[string]ModelStats{}}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for name, in := range s.models {
		ms := in.metrics.snapshot()
		ms.Batching, ms.BatchingOff = in.batchable, in.batchOff
		ms.QueueDepth, ms.QueueSize = len(in.queue), cap(in.queue)
		st.Models[name] = ms
	}
	return st
}

// Reserve takes n bytes of the server's memory budget for the caller's
// own use (a request body being read, say), waiting as a request would
// (Options.AdmissionWait, bounded by ctx). Call release exactly once when
// the bytes are no longer held.
func (s *Server) Reserve(ctx context.Context, n int64) (release func(), err error) {
	if err := s.budget.acquire(ctx, "", n, s.opts.AdmissionWait, s.opts.RetryAfter); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { s.budget.release(n) }) }, nil
}

// acquire returns the instance serving name, held until the caller calls
// in.users.Done.
func (s *Server) acquire(name string) (*instance, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	in := s.models[name]
	if in == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownModel, name)
	}
	in.users.Add(1)
	return in, nil
}

// requestBytes is the budget a request reserves: its inputs twice (its
// tensors and its rows of a joined batch) and its expected outputs (as
// much as its inputs when the output shapes are not known).
func (in *instance) requestBytes(inputs map[string]*tensor.Tensor, rows int) int64 {
	var n int64
	for _, t := range inputs {
		if t != nil {
			n += int64(t.Numel()) * int64(t.DType().Size())
		}
	}
	out := n
	if in.outRowBytes >= 0 && rows >= 0 {
		out = in.outRowBytes * int64(rows)
	}
	return 2*n + out
}

// Predict runs inputs (keyed by the model's input names) through the
// model loaded as name and returns its outputs by name, each a tensor of
// its own. It returns ctx's error when ctx ends first (a request not yet
// run is then never run), an *OverloadError when admission refuses the
// request, an error wrapping ErrUnknownModel for a name not loaded,
// ErrClosed once the server is closed, and the session's error when the
// model rejects the inputs.
func (s *Server) Predict(ctx context.Context, name string, inputs map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	start := time.Now()
	in, err := s.acquire(name)
	if err != nil {
		return nil, err
	}
	defer in.users.Done()
	in.active.Add(1)
	defer in.active.Add(-1)
	if err := ctx.Err(); err != nil {
		in.metrics.request(outcomeExpired, 0, false)
		return nil, err
	}
	r := &request{ctx: ctx, inputs: inputs, done: make(chan answer, 1)}
	r.rows, r.key = signature(inputs)
	n := in.requestBytes(inputs, r.rows)
	if err := s.budget.acquire(ctx, name, n, s.opts.AdmissionWait, s.opts.RetryAfter); err != nil {
		if errors.Is(err, ErrOverloaded) {
			in.metrics.request(outcomeRejected, 0, false)
		} else {
			in.metrics.request(outcomeExpired, 0, false)
		}
		return nil, err
	}
	r.release = func() { s.budget.release(n) }
	if err := in.submit(r); err != nil {
		r.release()
		in.metrics.request(outcomeRejected, 0, false)
		return nil, err
	}
	var a answer
	select {
	case a = <-r.done:
	case <-ctx.Done():
		if r.taken.CompareAndSwap(false, true) {
			// Still queued: answer here; the runner will skip it.
			r.release()
			a = answer{err: ctx.Err()}
		} else {
			// A runner has it: its run sees ctx's end (a joined run once
			// every request in it has gone) and releases the bytes.
			a = answer{err: ctx.Err()}
		}
	}
	o := outcomeOK
	switch {
	case a.err == nil:
	case errors.Is(a.err, context.Canceled) || errors.Is(a.err, context.DeadlineExceeded):
		o = outcomeExpired
	default:
		o = outcomeError
	}
	in.metrics.request(o, time.Since(start), true)
	if a.err != nil {
		return nil, a.err
	}
	return a.outputs, nil
}

package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
)

// The test models, exported by torch.onnx.export
// (internal/golden/gen/gen_onnx.py): a small CNN with input "x"
// [N, 3, 9, 9] and output [N, 5], and a transformer layer with static
// shapes [4, 2, 8].
const (
	cnnModel         = "../onnx/testdata/models/cnn_opset13/model.onnx"
	transformerModel = "../onnx/testdata/models/transformer_opset13/model.onnx"
)

func loadModel(t testing.TB, path string) *onnx.Model {
	t.Helper()
	m, err := onnx.Load(path)
	require.NoError(t, err)
	return m
}

// image returns a deterministic CNN input of batch n, varied by seed.
func image(n, seed int) *tensor.Tensor {
	v := make([]float32, n*3*9*9)
	for i := range v {
		v[i] = float32(math.Sin(float64(i*7+seed*131)) * 2)
	}
	return tensor.FromSlice(v, n, 3, 9, 9)
}

// reference runs x through a fresh session of the CNN alone.
func reference(t testing.TB, m *onnx.Model, x *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	s, err := m.NewSession(onnx.SessionOptions{})
	require.NoError(t, err)
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": x})
	require.NoError(t, err)
	return out[s.Outputs()[0].Name]
}

func newServer(t testing.TB, opts Options) *Server {
	t.Helper()
	s := New(opts)
	t.Cleanup(func() { require.NoError(t, s.Close(context.Background())) })
	return s
}

// outputName is the CNN's output.
func outputName(t testing.TB, s *Server, name string) string {
	info, err := s.Model(name)
	require.NoError(t, err)
	return info.Outputs[0].Name
}

func TestPredictMatchesSession(t *testing.T) {
	m := loadModel(t, cnnModel)
	s := newServer(t, Options{})
	require.NoError(t, s.Load(context.Background(), "cnn", m, ModelOptions{}))
	info, err := s.Model("cnn")
	require.NoError(t, err)
	assert.True(t, info.Batching, info.BatchingOff)
	x := image(3, 1)
	out, err := s.Predict(context.Background(), "cnn", map[string]*tensor.Tensor{"x": x})
	require.NoError(t, err)
	got := out[outputName(t, s, "cnn")]
	assert.Equal(t, []int{3, 5}, got.Shape())
	assert.True(t, bitEqual(reference(t, m, x), got))

	_, err = s.Predict(context.Background(), "nope", map[string]*tensor.Tensor{"x": x})
	require.ErrorIs(t, err, ErrUnknownModel)
	_, err = s.Predict(context.Background(), "cnn", map[string]*tensor.Tensor{"x": tensor.Ones([]int{1, 4, 9, 9})})
	require.ErrorContains(t, err, "axis 1 must be 3")
	st := s.Stats().Models["cnn"]
	assert.Equal(t, uint64(1), st.OK)
	assert.Equal(t, uint64(1), st.Errors)
}

// activeRequests returns the Predict calls in progress for name.
func activeRequests(s *Server, name string) int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if in := s.models[name]; in != nil {
		return in.active.Load()
	}
	return -1
}

// TestBatchedBitEqual joins four requests of batch sizes 1 and 2 into one
// run and checks every answer bit for bit against the request run alone.
func TestBatchedBitEqual(t *testing.T) {
	m := loadModel(t, cnnModel)
	s := newServer(t, Options{})
	entered, release := blockedModel(t, s, ModelOptions{MaxBatch: 4, MaxWait: time.Minute})
	out := outputName(t, s, "cnn")
	inputs := make([]*tensor.Tensor, 4)
	results := make([]*tensor.Tensor, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range inputs {
		inputs[i] = image(i%2+1, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := s.Predict(context.Background(), "cnn", map[string]*tensor.Tensor{"x": inputs[i]})
			errs[i] = err
			if err == nil {
				results[i] = o[out]
			}
		}()
	}
	<-entered
	require.Eventually(t, func() bool { return activeRequests(s, "cnn") == 4 }, 10*time.Second, time.Millisecond)
	close(release)
	wg.Wait()
	for i := range inputs {
		require.NoError(t, errs[i])
		assert.Equal(t, []int{i%2 + 1, 5}, results[i].Shape())
		assert.True(t, bitEqual(reference(t, m, inputs[i]), results[i]), "request %d", i)
	}
	st := s.Stats().Models["cnn"]
	assert.Equal(t, uint64(1), st.Runs, "the four requests share one run")
	assert.Equal(t, uint64(1), st.BatchSizes.Counts[2], "one batch in the bucket of size 4 (bounds %v)", st.BatchSizes.Bounds)
	assert.Equal(t, uint64(4), st.OK)
	assert.Equal(t, uint64(4), st.Latency.Count)
}

// TestBadRequestInBatchDoesNotFailOthers gathers a good request and one
// the model refuses into one batch: their shapes differ past axis 0, so
// they run apart, and the good one gets its answer.
func TestBadRequestInBatchDoesNotFailOthers(t *testing.T) {
	m := loadModel(t, cnnModel)
	s := newServer(t, Options{})
	entered, release := blockedModel(t, s, ModelOptions{MaxBatch: 2, MaxWait: time.Minute})
	good, bad := image(1, 3), tensor.Ones([]int{1, 3, 2, 2}) // too small for the CNN's pooling
	goodC := make(chan map[string]*tensor.Tensor, 1)
	go func() {
		out, err := s.Predict(context.Background(), "cnn", map[string]*tensor.Tensor{"x": good})
		assert.NoError(t, err)
		goodC <- out
	}()
	<-entered
	badC := predictAsync(s, context.Background(), bad)
	require.Eventually(t, func() bool { return activeRequests(s, "cnn") == 2 }, 10*time.Second, time.Millisecond)
	close(release)
	out := <-goodC
	require.NotNil(t, out)
	assert.True(t, bitEqual(reference(t, m, good), out[outputName(t, s, "cnn")]))
	require.Error(t, <-badC)
	st := s.Stats().Models["cnn"]
	assert.Equal(t, uint64(2), st.Runs, "one batch of two requests that cannot be joined: two runs")
	assert.Equal(t, uint64(1), st.OK)
	assert.Equal(t, uint64(1), st.Errors)
}

// TestRace64 sends requests from 64 goroutines at once (run it with
// -race) and checks every answer bit for bit.
func TestRace64(t *testing.T) {
	m := loadModel(t, cnnModel)
	s := newServer(t, Options{})
	require.NoError(t, s.Load(context.Background(), "cnn", m, ModelOptions{MaxBatch: 8, MaxWait: time.Millisecond, Runs: 2, QueueSize: 64}))
	out := outputName(t, s, "cnn")
	const kinds = 4
	inputs := make([]*tensor.Tensor, kinds)
	wants := make([]*tensor.Tensor, kinds)
	for k := range kinds {
		inputs[k] = image(k%3+1, k)
		wants[k] = reference(t, m, inputs[k])
	}
	const goroutines, each = 64, 3
	var wg sync.WaitGroup
	errc := make(chan error, goroutines*each)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range each {
				k := (g + r) % kinds
				o, err := s.Predict(context.Background(), "cnn", map[string]*tensor.Tensor{"x": inputs[k]})
				if err != nil {
					errc <- err
					continue
				}
				if !bitEqual(wants[k], o[out]) {
					errc <- fmt.Errorf("goroutine %d request %d: output differs from a single run", g, r)
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
	st := s.Stats()
	assert.Equal(t, uint64(goroutines*each), st.Models["cnn"].OK)
	assert.Zero(t, st.BytesInFlight, "every reservation is given back")
	assert.Less(t, st.Models["cnn"].Runs, uint64(goroutines*each), "some requests were batched")
}

// blockedModel loads the CNN with a runner that stops before each batch
// until release is closed; entered receives once per stop.
func blockedModel(t *testing.T, s *Server, opts ModelOptions) (entered chan struct{}, release chan struct{}) {
	entered, release = make(chan struct{}, 16), make(chan struct{})
	opts.beforeBatch = func() {
		entered <- struct{}{}
		<-release
	}
	require.NoError(t, s.Load(context.Background(), "cnn", loadModel(t, cnnModel), opts))
	return entered, release
}

func predictAsync(s *Server, ctx context.Context, x *tensor.Tensor) chan error {
	c := make(chan error, 1)
	go func() {
		_, err := s.Predict(ctx, "cnn", map[string]*tensor.Tensor{"x": x})
		c <- err
	}()
	return c
}

func TestOverloadFailsFast(t *testing.T) {
	s := newServer(t, Options{})
	entered, release := blockedModel(t, s, ModelOptions{MaxBatch: 1, QueueSize: 1})
	first := predictAsync(s, context.Background(), image(1, 0))
	<-entered // the runner holds the first request
	second := predictAsync(s, context.Background(), image(1, 1))
	require.Eventually(t, func() bool { return s.Stats().Models["cnn"].QueueDepth == 1 }, 10*time.Second, time.Millisecond)
	_, err := s.Predict(context.Background(), "cnn", map[string]*tensor.Tensor{"x": image(1, 2)})
	var oe *OverloadError
	require.ErrorAs(t, err, &oe)
	require.ErrorIs(t, err, ErrOverloaded)
	assert.Contains(t, oe.Reason, "queue full")
	assert.Equal(t, time.Second, oe.RetryAfter)
	close(release)
	require.NoError(t, <-first)
	require.NoError(t, <-second)
	st := s.Stats().Models["cnn"]
	assert.Equal(t, uint64(1), st.Rejected)
	assert.Equal(t, uint64(2), st.OK)
}

func TestDeadlinePassedInQueueIsNotRun(t *testing.T) {
	s := newServer(t, Options{})
	entered, release := blockedModel(t, s, ModelOptions{MaxBatch: 1})
	first := predictAsync(s, context.Background(), image(1, 0))
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	late := predictAsync(s, ctx, image(1, 1))
	require.ErrorIs(t, <-late, context.DeadlineExceeded, "answered when its deadline passed, while still queued")
	close(release)
	require.NoError(t, <-first)
	require.Eventually(t, func() bool { return s.Stats().BytesInFlight == 0 }, 10*time.Second, time.Millisecond)
	st := s.Stats().Models["cnn"]
	assert.Equal(t, uint64(1), st.Runs, "the expired request never ran")
	assert.Equal(t, uint64(1), st.Expired)

	// A context already done is refused before admission.
	done, stop := context.WithCancel(context.Background())
	stop()
	_, err := s.Predict(done, "cnn", map[string]*tensor.Tensor{"x": image(1, 2)})
	require.ErrorIs(t, err, context.Canceled)
}

func TestCancelledRequestDroppedByRunner(t *testing.T) {
	s := newServer(t, Options{})
	entered, release := blockedModel(t, s, ModelOptions{MaxBatch: 4, MaxWait: -1})
	ctx, cancel := context.WithCancel(context.Background())
	r := predictAsync(s, ctx, image(1, 0))
	<-entered // the runner holds it, blocked before the run
	cancel()
	require.ErrorIs(t, <-r, context.Canceled)
	close(release)
	require.Eventually(t, func() bool { return s.Stats().BytesInFlight == 0 }, 10*time.Second, time.Millisecond)
	assert.Zero(t, s.Stats().Models["cnn"].Runs, "a request cancelled before its run is not run")
}

func TestGroupContextEndsWhenEveryRequestHasGone(t *testing.T) {
	a, cancelA := context.WithCancel(context.Background())
	b, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	ctx, stop := groupContext([]*request{{ctx: a}, {ctx: b}})
	defer stop()
	cancelA()
	select {
	case <-ctx.Done():
		t.Fatal("the joined run was cancelled while one of its requests is still waiting")
	case <-time.After(20 * time.Millisecond):
	}
	cancelB()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the joined run was not cancelled once every request had gone")
	}
}

func TestMemoryBudget(t *testing.T) {
	m := loadModel(t, cnnModel)
	x := image(1, 0)
	// One request reserves 2×972 input bytes + 20 output bytes.
	const need = 2*3*9*9*4 + 5*4
	s := newServer(t, Options{MaxBytesInFlight: need + 100})
	require.NoError(t, s.Load(context.Background(), "cnn", m, ModelOptions{}))
	_, err := s.Predict(context.Background(), "cnn", map[string]*tensor.Tensor{"x": image(2, 0)})
	require.ErrorIs(t, err, ErrOverloaded, "a request larger than the whole budget")
	assert.Contains(t, err.Error(), "more than the server's whole budget")

	release, err := s.Reserve(context.Background(), 200)
	require.NoError(t, err)
	_, err = s.Predict(context.Background(), "cnn", map[string]*tensor.Tensor{"x": x})
	require.ErrorIs(t, err, ErrOverloaded, "no AdmissionWait: fails at once")
	assert.Equal(t, int64(200), s.Stats().BytesInFlight)
	release()
	release() // a second call is harmless
	_, err = s.Predict(context.Background(), "cnn", map[string]*tensor.Tensor{"x": x})
	require.NoError(t, err)
	assert.Zero(t, s.Stats().BytesInFlight)
}

func TestMemoryBudgetWaits(t *testing.T) {
	m := loadModel(t, cnnModel)
	s := newServer(t, Options{MaxBytesInFlight: 4000, AdmissionWait: time.Minute})
	require.NoError(t, s.Load(context.Background(), "cnn", m, ModelOptions{}))
	release, err := s.Reserve(context.Background(), 4000)
	require.NoError(t, err)
	r := predictAsync(s, context.Background(), image(1, 0))
	select {
	case err := <-r:
		t.Fatalf("admitted past the budget: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	release()
	require.NoError(t, <-r)

	// A waiting request whose context ends gets the context's error.
	release, err = s.Reserve(context.Background(), 4000)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = s.Predict(ctx, "cnn", map[string]*tensor.Tensor{"x": image(1, 0)})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	release()
	assert.Zero(t, s.Stats().BytesInFlight)
}

// TestReloadDrainsOld reloads a model while a request waits in the old
// version's queue: the request is answered by the old version, and the
// next one by the new.
func TestReloadDrainsOld(t *testing.T) {
	s := newServer(t, Options{})
	entered, release := blockedModel(t, s, ModelOptions{MaxBatch: 1})
	m := loadModel(t, cnnModel)
	held := predictAsync(s, context.Background(), image(1, 0))
	<-entered
	queued := predictAsync(s, context.Background(), image(1, 1))
	require.Eventually(t, func() bool { return s.Stats().Models["cnn"].QueueDepth == 1 }, 10*time.Second, time.Millisecond)
	loaded := make(chan error, 1)
	go func() { loaded <- s.Load(context.Background(), "cnn", m, ModelOptions{MaxBatch: 2}) }()
	// The new version serves while the old drains.
	require.Eventually(t, func() bool { return s.Stats().Models["cnn"].Version == 2 }, 10*time.Second, time.Millisecond)
	out, err := s.Predict(context.Background(), "cnn", map[string]*tensor.Tensor{"x": image(1, 2)})
	require.NoError(t, err)
	assert.True(t, bitEqual(reference(t, m, image(1, 2)), out[outputName(t, s, "cnn")]))
	select {
	case err := <-loaded:
		t.Fatalf("Load returned before the old version drained: %v", err)
	default:
	}
	close(release)
	require.NoError(t, <-held)
	require.NoError(t, <-queued)
	require.NoError(t, <-loaded)
	info, err := s.Model("cnn")
	require.NoError(t, err)
	assert.Equal(t, 2, info.Options.MaxBatch)
	assert.Equal(t, uint64(3), s.Stats().Models["cnn"].OK, "counters are kept across the reload")
}

func TestReloadUnderLoad(t *testing.T) {
	m := loadModel(t, cnnModel)
	s := newServer(t, Options{})
	require.NoError(t, s.Load(context.Background(), "cnn", m, ModelOptions{}))
	want := reference(t, m, image(1, 5))
	out := outputName(t, s, "cnn")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errc := make(chan error, 1000)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				select {
				case <-stop:
					return
				default:
				}
				o, err := s.Predict(context.Background(), "cnn", map[string]*tensor.Tensor{"x": image(1, 5)})
				if err != nil {
					errc <- err
					return
				}
				if !bitEqual(want, o[out]) {
					errc <- errors.New("wrong output during reload")
					return
				}
			}
		}()
	}
	for range 3 {
		require.NoError(t, s.Load(context.Background(), "cnn", m, ModelOptions{MaxBatch: 4}))
	}
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err, "no request fails because of a reload")
	}
	assert.Equal(t, 4, s.Stats().Models["cnn"].Version)
}

func TestUnloadAndClose(t *testing.T) {
	s := New(Options{})
	assert.False(t, s.Ready())
	require.NoError(t, s.Load(context.Background(), "a", loadModel(t, cnnModel), ModelOptions{}))
	require.NoError(t, s.Load(context.Background(), "b", loadModel(t, transformerModel), ModelOptions{}))
	assert.True(t, s.Ready())
	names := []string{}
	for _, mi := range s.Models() {
		names = append(names, mi.Name)
	}
	assert.Equal(t, []string{"a", "b"}, names)
	require.NoError(t, s.Unload("a"))
	require.ErrorIs(t, s.Unload("a"), ErrUnknownModel)
	_, err := s.Predict(context.Background(), "a", map[string]*tensor.Tensor{"x": image(1, 0)})
	require.ErrorIs(t, err, ErrUnknownModel)
	_, ok := s.Stats().Models["a"]
	assert.False(t, ok)
	require.NoError(t, s.Close(context.Background()))
	assert.False(t, s.Ready())
	_, err = s.Predict(context.Background(), "b", nil)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.Load(context.Background(), "a", loadModel(t, cnnModel), ModelOptions{}), ErrClosed)
}

func TestStaticBatchRunsOneByOne(t *testing.T) {
	s := newServer(t, Options{})
	m := loadModel(t, transformerModel)
	require.NoError(t, s.Load(context.Background(), "tf", m, ModelOptions{MaxBatch: 8, MaxWait: time.Minute}))
	info, err := s.Model("tf")
	require.NoError(t, err)
	assert.False(t, info.Batching)
	assert.Contains(t, info.BatchingOff, "no symbolic first dimension")
	x := tensor.FromSlice(make([]float32, 4*2*8), 4, 2, 8)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Predict(context.Background(), "tf", map[string]*tensor.Tensor{"query": x})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	assert.Equal(t, uint64(3), s.Stats().Models["tf"].Runs, "no MaxWait: requests run as they come, alone")
}

func TestWarmUpErrors(t *testing.T) {
	s := newServer(t, Options{})
	err := s.Load(context.Background(), "cnn", loadModel(t, cnnModel), ModelOptions{
		WarmUp: map[string]*tensor.Tensor{"x": tensor.Ones([]int{1, 3, 2, 2})}})
	require.ErrorContains(t, err, "warm-up run")
	assert.False(t, s.Ready(), "a model that fails its warm-up is not served")
}

func TestPrometheusAndExpvar(t *testing.T) {
	s := newServer(t, Options{MaxBytesInFlight: 1 << 20})
	require.NoError(t, s.Load(context.Background(), `c"nn`, loadModel(t, cnnModel), ModelOptions{MaxBatch: 4}))
	for i := range 3 {
		_, err := s.Predict(context.Background(), `c"nn`, map[string]*tensor.Tensor{"x": image(1, i)})
		require.NoError(t, err)
	}
	var b strings.Builder
	require.NoError(t, s.WritePrometheus(&b))
	text := b.String()
	for _, line := range []string{
		"# TYPE ember_serve_requests_total counter",
		`ember_serve_requests_total{model="c\"nn",outcome="ok"} 3`,
		`ember_serve_runs_total{model="c\"nn"} 3`,
		`ember_serve_batch_size_bucket{model="c\"nn",le="1"} 3`,
		`ember_serve_batch_size_bucket{model="c\"nn",le="+Inf"} 3`,
		`ember_serve_request_duration_seconds_count{model="c\"nn"} 3`,
		`ember_serve_queue_size{model="c\"nn"} 64`,
		"ember_serve_bytes_budget 1048576",
		"ember_serve_bytes_in_flight 0",
	} {
		assert.Contains(t, text, line+"\n")
	}
	var st Stats
	require.NoError(t, json.Unmarshal([]byte(s.Expvar().String()), &st))
	assert.Equal(t, uint64(3), st.Models[`c"nn`].OK)
	assert.Equal(t, 1, st.Models[`c"nn`].Version)
}

func TestHistogramQuantile(t *testing.T) {
	h := newHistogram([]float64{1, 2, 4})
	assert.Zero(t, h.Quantile(0.5))
	for _, v := range []float64{0.5, 1.5, 1.5, 3, 10} {
		h.observe(v)
	}
	assert.Equal(t, []uint64{1, 2, 1, 1}, h.Counts)
	assert.Equal(t, 2.0, h.Quantile(0.5))
	assert.Equal(t, 4.0, h.Quantile(0.99), "the overflow bucket reports the largest bound")
	assert.Equal(t, 16.5, h.Sum)
}

// TestLoneRequestDoesNotWait: with nobody else in progress a runner does
// not hold a request for MaxWait (an hour here) waiting for company.
func TestLoneRequestDoesNotWait(t *testing.T) {
	s := newServer(t, Options{})
	require.NoError(t, s.Load(context.Background(), "cnn", loadModel(t, cnnModel), ModelOptions{MaxWait: time.Hour}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 3 {
		_, err := s.Predict(ctx, "cnn", map[string]*tensor.Tensor{"x": image(1, i)})
		require.NoError(t, err)
	}
	assert.Equal(t, uint64(3), s.Stats().Models["cnn"].Runs)
}

func TestGroupsRespectKeysAndRows(t *testing.T) {
	in := &instance{batchable: true, opts: ModelOptions{MaxBatchRows: 4}}
	req := func(rows int, key string) *request { return &request{rows: rows, key: key} }
	a1, b1, a3, a2, big, odd := req(1, "a"), req(1, "b"), req(3, "a"), req(2, "a"), req(9, "a"), req(-1, "")
	got := in.groups([]*request{a1, b1, a3, a2, big, odd})
	assert.Equal(t, [][]*request{{a1, a3}, {b1}, {a2}, {big}, {odd}}, got)
	in.batchable = false
	assert.Len(t, in.groups([]*request{a1, a3}), 2, "without batching every request runs alone")
}

// TestRunnerPanicAnswersEveryRequest: a panic while a runner processes a
// batch (a nil context here) becomes an error answer for each request.
func TestRunnerPanicAnswersEveryRequest(t *testing.T) {
	in := &instance{name: "m", metrics: newMetrics(2), opts: ModelOptions{MaxBatchRows: 4}}
	released := 0
	rs := []*request{{done: make(chan answer, 1)}, {done: make(chan answer, 1)}}
	for _, r := range rs {
		r.release = func() { released++ }
	}
	in.safeProcess(rs, &batchScratch{})
	for _, r := range rs {
		a := <-r.done
		require.ErrorContains(t, a.err, `serve: model "m": internal error`)
	}
	assert.Equal(t, 2, released)
}

func TestThreadBudget(t *testing.T) {
	o := ModelOptions{}.withDefaults()
	assert.Zero(t, o.Session.IntraOpThreads, "the default leaves the session's own default")
	assert.Equal(t, 1, o.Runs)
	o = ModelOptions{Threads: 6, Runs: 2}.withDefaults()
	assert.Equal(t, 3, o.Session.IntraOpThreads)
	o = ModelOptions{Threads: 1, Runs: 4}.withDefaults()
	assert.Equal(t, 1, o.Session.IntraOpThreads, "at least one thread a run")
	o = ModelOptions{Runs: 2}.withDefaults()
	assert.Equal(t, max(1, o.Threads/2), o.Session.IntraOpThreads)
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test model: a small CNN exported by torch.onnx.export with input
// "input" [N, 3, 9, 9] and output [N, 5] (internal/golden/gen/gen_onnx.py).
const testModel = "../../onnx/testdata/models/cnn_opset13/model.onnx"

func testSession(t *testing.T) *onnx.Session {
	t.Helper()
	m, err := onnx.Load(testModel)
	require.NoError(t, err)
	s, err := m.NewSession(onnx.SessionOptions{})
	require.NoError(t, err)
	return s
}

func testServer(t *testing.T, cfg config) (*server, *onnx.Session) {
	t.Helper()
	sess := testSession(t)
	if cfg.maxBatch == 0 {
		cfg = config{maxBatch: 8, batchWait: time.Millisecond, maxBody: 1 << 20, maxElems: 1 << 16, timeout: 10 * time.Second}
	}
	srv, err := newServer(sess, cfg, log.New(io.Discard, "", 0))
	require.NoError(t, err)
	t.Cleanup(srv.close)
	return srv, sess
}

// image returns a deterministic input of batch n, varied by seed.
func image(n, seed int) *tensor.Tensor {
	v := make([]float32, n*3*9*9)
	for i := range v {
		v[i] = float32(math.Sin(float64(i*7+seed*131)) * 2)
	}
	return tensor.FromSlice(v, n, 3, 9, 9)
}

func jsonBody(t *testing.T, name string, x *tensor.Tensor) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"inputs": map[string]any{name: map[string]any{"shape": x.Shape(), "data": x.Float32s()}}})
	require.NoError(t, err)
	return b
}

func npyBody(t *testing.T, x *tensor.Tensor) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, tensor.WriteNpy(&b, x))
	return b.Bytes()
}

// decodeOutput reads the single output of a response.
func decodeOutput(t *testing.T, body []byte) ([]int, []float64) {
	t.Helper()
	var resp struct {
		Outputs map[string]struct {
			Shape []int     `json:"shape"`
			DType string    `json:"dtype"`
			Data  []float64 `json:"data"`
		} `json:"outputs"`
	}
	require.NoError(t, json.Unmarshal(body, &resp), string(body))
	require.Len(t, resp.Outputs, 1)
	for _, o := range resp.Outputs {
		assert.Equal(t, "float32", o.DType)
		return o.Shape, o.Data
	}
	return nil, nil
}

func direct(t *testing.T, sess *onnx.Session, x *tensor.Tensor) []float64 {
	t.Helper()
	out, err := sess.Run(context.Background(), map[string]*tensor.Tensor{sess.Inputs()[0].Name: x})
	require.NoError(t, err)
	return out[sess.Outputs()[0].Name].Float64s()
}

func assertClose(t *testing.T, want, got []float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.InDelta(t, want[i], got[i], 1e-5+1e-5*math.Abs(want[i]), "element %d", i)
	}
}

func TestPredict(t *testing.T) {
	srv, sess := testServer(t, config{})
	h := srv.handler()
	name := sess.Inputs()[0].Name
	x := image(2, 1)
	want := direct(t, sess, x)
	cases := []struct {
		name, method, ctype string
		body                []byte
		status              int
		errPart             string
	}{
		{name: "json", method: "POST", ctype: "application/json", body: jsonBody(t, name, x), status: 200},
		{name: "json without content type", method: "POST", body: jsonBody(t, name, x), status: 200},
		{name: "npy", method: "POST", ctype: "application/x-npy", body: npyBody(t, x), status: 200},
		{name: "npy sniffed", method: "POST", ctype: "application/octet-stream", body: npyBody(t, x), status: 200},
		{name: "get", method: "GET", status: 405, errPart: "use POST"},
		{name: "bad json", method: "POST", ctype: "application/json", body: []byte(`{"inputs": {`), status: 400, errPart: "decoding JSON"},
		{name: "unknown field", method: "POST", body: []byte(`{"input": {}}`), status: 400, errPart: "unknown field"},
		{name: "no inputs", method: "POST", body: []byte(`{"inputs": {}}`), status: 400, errPart: "no inputs"},
		{name: "unknown input", method: "POST", body: []byte(`{"inputs": {"nope": {"shape": [1], "data": [1]}}}`), status: 400, errPart: `"nope" is not an input`},
		{name: "data length", method: "POST", body: []byte(fmt.Sprintf(`{"inputs": {%q: {"shape": [1, 3, 9, 9], "data": [1, 2]}}}`, name)), status: 400, errPart: "needs 243 values, got 2"},
		{name: "negative dim", method: "POST", body: []byte(fmt.Sprintf(`{"inputs": {%q: {"shape": [-1], "data": []}}}`, name)), status: 400, errPart: "negative dimension"},
		{name: "huge shape", method: "POST", body: []byte(fmt.Sprintf(`{"inputs": {%q: {"shape": [1000000, 1000000, 1000000], "data": []}}}`, name)), status: 400, errPart: "more than"},
		{name: "not a number", method: "POST", body: []byte(fmt.Sprintf(`{"inputs": {%q: {"shape": [1], "data": ["x"]}}}`, name)), status: 400, errPart: "decoding JSON"},
		{name: "bad dtype", method: "POST", body: []byte(fmt.Sprintf(`{"inputs": {%q: {"shape": [1], "dtype": "complex", "data": [1]}}}`, name)), status: 400, errPart: "unknown dtype"},
		{name: "wrong shape", method: "POST", body: jsonBody(t, name, tensor.Ones([]int{1, 4, 9, 9})), status: 422, errPart: "axis 1 must be 3"},
		{name: "wrong dtype", method: "POST", body: []byte(fmt.Sprintf(`{"inputs": {%q: {"shape": [1], "dtype": "int64", "data": [1]}}}`, name)), status: 422, errPart: "dtype int64"},
		{name: "bad npy", method: "POST", ctype: "application/x-npy", body: []byte("\x93NUMPY garbage"), status: 400, errPart: "reading .npy"},
		{name: "media type", method: "POST", ctype: "text/plain", body: []byte("hi"), status: 415, errPart: "application/json"},
		{name: "too large", method: "POST", body: bytes.Repeat([]byte(" "), 2<<20), status: 413, errPart: "exceeds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, "/predict", bytes.NewReader(c.body))
			if c.ctype != "" {
				req.Header.Set("Content-Type", c.ctype)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			require.Equal(t, c.status, rec.Code, rec.Body.String())
			assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			if c.status != 200 {
				var e errorResponse
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e))
				assert.Contains(t, e.Error, c.errPart)
				return
			}
			shape, got := decodeOutput(t, rec.Body.Bytes())
			assert.Equal(t, []int{2, 5}, shape)
			assertClose(t, want, got)
		})
	}
}

func TestStringModelRefused(t *testing.T) {
	for _, c := range []struct{ dir, msg string }{
		{"test_strnormalizer_export_monday_casesensintive_upper", `input "x" is a string tensor`},
		{"test_cast_FLOAT_to_STRING", `output "output" is a string tensor`},
	} {
		m, err := onnx.Load("/usr/share/libonnx-testdata/data/node/" + c.dir + "/model.onnx")
		if err != nil {
			t.Skip("ONNX test data absent (apt-get install libonnx-testdata):", err)
		}
		sess, err := m.NewSession(onnx.SessionOptions{})
		require.NoError(t, err)
		_, err = newServer(sess, config{maxBatch: 1}, log.New(io.Discard, "", 0))
		require.ErrorContains(t, err, c.msg)
	}
}

func TestHealthz(t *testing.T) {
	srv, _ := testServer(t, config{})
	rec := httptest.NewRecorder()
	srv.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	require.Equal(t, 200, rec.Code)
	var got map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	assert.Equal(t, "ok", got["status"])
	assert.Equal(t, true, got["batching"], "the CNN's batch axis is dynamic")
	rec = httptest.NewRecorder()
	srv.handler().ServeHTTP(rec, httptest.NewRequest("POST", "/healthz", nil))
	assert.Equal(t, 405, rec.Code)
}

func TestBatchesConcurrentRequests(t *testing.T) {
	// A long wait and max-batch 4: the four requests below share one run.
	srv, sess := testServer(t, config{maxBatch: 4, batchWait: time.Minute, maxBody: 1 << 20, maxElems: 1 << 16, timeout: time.Minute})
	name := sess.Inputs()[0].Name
	var wg sync.WaitGroup
	results := make([]result, 4)
	inputs := make([]*tensor.Tensor, 4)
	for i := range 4 {
		inputs[i] = image(i%2+1, i) // batch sizes 1 and 2 mixed
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = srv.batcher.submit(context.Background(), map[string]*tensor.Tensor{name: inputs[i]})
		}()
	}
	wg.Wait()
	for i, r := range results {
		require.NoError(t, r.err)
		assert.Equal(t, 4, r.batched)
		out := r.outputs[sess.Outputs()[0].Name]
		assert.Equal(t, []int{i%2 + 1, 5}, out.Shape())
		assertClose(t, direct(t, sess, inputs[i]), out.Float64s())
	}
	requests, runs := srv.batcher.stats()
	assert.Equal(t, 4, requests)
	assert.Equal(t, 1, runs)
}

func TestBadRequestInBatchDoesNotFailOthers(t *testing.T) {
	srv, sess := testServer(t, config{maxBatch: 2, batchWait: time.Minute, maxBody: 1 << 20, maxElems: 1 << 16, timeout: time.Minute})
	name := sess.Inputs()[0].Name
	good, bad := image(1, 3), tensor.Ones([]int{1, 3, 2, 2}) // too small for the CNN's pooling
	var wg sync.WaitGroup
	var rg, rb result
	wg.Add(2)
	go func() {
		defer wg.Done()
		rg = srv.batcher.submit(context.Background(), map[string]*tensor.Tensor{name: good})
	}()
	go func() {
		defer wg.Done()
		rb = srv.batcher.submit(context.Background(), map[string]*tensor.Tensor{name: bad})
	}()
	wg.Wait()
	require.NoError(t, rg.err)
	assertClose(t, direct(t, sess, good), rg.outputs[sess.Outputs()[0].Name].Float64s())
	require.Error(t, rb.err)
}

func TestShutdownRefusesNewWork(t *testing.T) {
	srv, sess := testServer(t, config{})
	srv.close()
	r := srv.batcher.submit(context.Background(), map[string]*tensor.Tensor{sess.Inputs()[0].Name: image(1, 0)})
	require.ErrorIs(t, r.err, errShuttingDown)
}

// TestLoad sends 8 goroutines × 50 requests to a real listener on
// 127.0.0.1 and checks every answer against a direct session run.
func TestLoad(t *testing.T) {
	srv, sess := testServer(t, config{maxBatch: 8, batchWait: 2 * time.Millisecond, maxBody: 1 << 20, maxElems: 1 << 16, timeout: time.Minute})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, srv, log.New(io.Discard, "", 0)) }()
	url := "http://" + ln.Addr().String()
	name := sess.Inputs()[0].Name
	const workers, perWorker = 8, 50
	inputs := make([]*tensor.Tensor, 5)
	wants := make([][]float64, len(inputs))
	jsonBodies, npyBodies := make([][]byte, len(inputs)), make([][]byte, len(inputs))
	for i := range inputs {
		inputs[i] = image(i%3+1, i)
		wants[i] = direct(t, sess, inputs[i])
		jsonBodies[i], npyBodies[i] = jsonBody(t, name, inputs[i]), npyBody(t, inputs[i])
	}
	client := &http.Client{Timeout: 30 * time.Second}
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range perWorker {
				k := (w + r) % len(inputs)
				body, ctype := jsonBodies[k], "application/json"
				if r%2 == 1 {
					body, ctype = npyBodies[k], "application/x-npy"
				}
				resp, err := client.Post(url+"/predict", ctype, bytes.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- fmt.Errorf("status %d: %s", resp.StatusCode, b)
					return
				}
				var raw struct {
					Outputs map[string]struct {
						Data []float64 `json:"data"`
					} `json:"outputs"`
				}
				if err := json.Unmarshal(b, &raw); err != nil {
					errs <- err
					return
				}
				got := raw.Outputs[sess.Outputs()[0].Name].Data
				for i := range wants[k] {
					if math.Abs(got[i]-wants[k][i]) > 1e-5+1e-5*math.Abs(wants[k][i]) {
						errs <- fmt.Errorf("request %d/%d element %d: %v, want %v", w, r, i, got[i], wants[k][i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	requests, runs := srv.batcher.stats()
	assert.Equal(t, workers*perWorker, requests)
	t.Logf("%d requests in %d session runs", requests, runs)
	cancel()
	require.NoError(t, <-done)
	resp, err := client.Get(url + "/healthz")
	if err == nil {
		resp.Body.Close()
	}
	require.Error(t, err, "the listener is closed after shutdown")
	assert.True(t, strings.Contains(err.Error(), "refused") || strings.Contains(err.Error(), "connect"), err.Error())
}

func TestRunFlags(t *testing.T) {
	require.ErrorContains(t, run(nil), "-model is required")
	require.Error(t, run([]string{"-model", "does-not-exist.onnx"}))
	require.Error(t, run([]string{"-bogus"}))
}

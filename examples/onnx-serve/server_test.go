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
	"github.com/emberml/ember/serve"
	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test model: a small CNN exported by torch.onnx.export with input
// "x" [N, 3, 9, 9] and output [N, 5] (internal/golden/gen/gen_onnx.py).
const testModel = "../../onnx/testdata/models/cnn_opset13/model.onnx"

// testServer loads the CNN into a serve.Server and returns the HTTP side
// and the model for direct runs. A zero cfg gets test defaults.
func testServer(t *testing.T, opts serve.ModelOptions, sopts serve.Options, cfg config) (*server, *onnx.Model) {
	t.Helper()
	m, err := onnx.Load(testModel)
	require.NoError(t, err)
	srv := serve.New(sopts)
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	require.NoError(t, srv.Load(context.Background(), "cnn", m, opts))
	if cfg.maxBody == 0 {
		cfg = config{maxBody: 1 << 20, maxElems: 1 << 16, timeout: 10 * time.Second}
	}
	s, err := newServer(srv, "cnn", cfg, log.New(io.Discard, "", 0))
	require.NoError(t, err)
	return s, m
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

// direct runs x through a fresh session of m.
func direct(t *testing.T, m *onnx.Model, x *tensor.Tensor) []float64 {
	t.Helper()
	sess, err := m.NewSession(onnx.SessionOptions{})
	require.NoError(t, err)
	out, err := sess.Run(context.Background(), map[string]*tensor.Tensor{sess.Inputs()[0].Name: x})
	require.NoError(t, err)
	return out[sess.Outputs()[0].Name].Float64s()
}

// assertSame checks that the JSON round trip of float32 outputs kept
// every value (shortest float32 digits are exact).
func assertSame(t *testing.T, want, got []float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, float32(want[i]), float32(got[i]), "element %d", i)
	}
}

func do(h http.Handler, method, path, ctype string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestPredict is the request table: good requests in both codecs, and
// every kind of malformed request with its 4xx and message.
func TestPredict(t *testing.T) {
	srv, m := testServer(t, serve.ModelOptions{}, serve.Options{}, config{})
	h := srv.handler()
	const name = "x"
	x := image(2, 1)
	want := direct(t, m, x)
	cases := []struct {
		name, method, path, ctype string
		body                      []byte
		status                    int
		errPart                   string
	}{
		{name: "json", method: "POST", ctype: "application/json", body: jsonBody(t, name, x), status: 200},
		{name: "json without content type", method: "POST", body: jsonBody(t, name, x), status: 200},
		{name: "json by model name", method: "POST", path: "/models/cnn/predict", body: jsonBody(t, name, x), status: 200},
		{name: "npy", method: "POST", ctype: "application/x-npy", body: npyBody(t, x), status: 200},
		{name: "npy sniffed", method: "POST", ctype: "application/octet-stream", body: npyBody(t, x), status: 200},
		{name: "unknown model", method: "POST", path: "/models/nope/predict", body: jsonBody(t, name, x), status: 404, errPart: `unknown model "nope"`},
		{name: "get", method: "GET", status: 405, errPart: "use POST"},
		{name: "bad json", method: "POST", ctype: "application/json", body: []byte(`{"inputs": {`), status: 400, errPart: "decoding JSON"},
		{name: "truncated json", method: "POST", body: jsonBody(t, name, x)[:100], status: 400, errPart: "decoding JSON"},
		{name: "trailing data", method: "POST", body: append(jsonBody(t, name, x), []byte(` {}`)...), status: 400, errPart: "trailing data"},
		{name: "unknown field", method: "POST", body: []byte(`{"input": {}}`), status: 400, errPart: "unknown field"},
		{name: "no inputs", method: "POST", body: []byte(`{"inputs": {}}`), status: 400, errPart: "no inputs"},
		{name: "unknown input", method: "POST", body: []byte(`{"inputs": {"nope": {"shape": [1], "data": [1]}}}`), status: 400, errPart: `"nope" is not an input`},
		{name: "data length", method: "POST", body: []byte(fmt.Sprintf(`{"inputs": {%q: {"shape": [1, 3, 9, 9], "data": [1, 2]}}}`, name)), status: 400, errPart: "needs 243 values, got 2"},
		{name: "negative dim", method: "POST", body: []byte(fmt.Sprintf(`{"inputs": {%q: {"shape": [-1], "data": []}}}`, name)), status: 400, errPart: "negative dimension"},
		{name: "huge shape", method: "POST", body: []byte(fmt.Sprintf(`{"inputs": {%q: {"shape": [1000000, 1000000, 1000000], "data": []}}}`, name)), status: 400, errPart: "more than"},
		{name: "rank too high", method: "POST", body: []byte(fmt.Sprintf(`{"inputs": {%q: {"shape": [1,1,1,1,1,1,1,1,1], "data": [1]}}}`, name)), status: 400, errPart: "rank 9 exceeds"},
		{name: "not a number", method: "POST", body: []byte(fmt.Sprintf(`{"inputs": {%q: {"shape": [1], "data": ["x"]}}}`, name)), status: 400, errPart: "decoding JSON"},
		{name: "bad dtype", method: "POST", body: []byte(fmt.Sprintf(`{"inputs": {%q: {"shape": [1], "dtype": "complex", "data": [1]}}}`, name)), status: 400, errPart: "unknown dtype"},
		{name: "wrong shape", method: "POST", body: jsonBody(t, name, tensor.Ones([]int{1, 4, 9, 9})), status: 422, errPart: "axis 1 must be 3"},
		{name: "wrong dtype", method: "POST", body: []byte(fmt.Sprintf(`{"inputs": {%q: {"shape": [1], "dtype": "int64", "data": [1]}}}`, name)), status: 422, errPart: "dtype int64"},
		{name: "bad npy", method: "POST", ctype: "application/x-npy", body: []byte("\x93NUMPY garbage"), status: 400, errPart: "reading .npy"},
		{name: "truncated npy", method: "POST", ctype: "application/x-npy", body: npyBody(t, x)[:200], status: 400, errPart: "reading .npy"},
		{name: "npy too many elements", method: "POST", ctype: "application/x-npy", body: npyBody(t, tensor.Zeros([]int{1 << 16, 2}, tensor.Float32)), status: 413, errPart: "elements, more than"},
		{name: "media type", method: "POST", ctype: "text/plain", body: []byte("hi"), status: 415, errPart: "application/json"},
		{name: "bad content type", method: "POST", ctype: "a/b; ===", body: []byte("hi"), status: 415, errPart: "bad Content-Type"},
		{name: "too large", method: "POST", body: bytes.Repeat([]byte(" "), 2<<20), status: 413, errPart: "exceeds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := c.path
			if path == "" {
				path = "/predict"
			}
			rec := do(h, c.method, path, c.ctype, c.body)
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
			assertSame(t, want, got)
		})
	}
	assert.Zero(t, srv.srv.Stats().BytesInFlight, "every request gave its bytes back")
}

func TestNpyResponse(t *testing.T) {
	srv, m := testServer(t, serve.ModelOptions{}, serve.Options{}, config{})
	x := image(1, 4)
	req := httptest.NewRequest("POST", "/predict", bytes.NewReader(npyBody(t, x)))
	req.Header.Set("Content-Type", "application/x-npy")
	req.Header.Set("Accept", "application/json, application/x-npy")
	rec := httptest.NewRecorder()
	srv.handler().ServeHTTP(rec, req)
	require.Equal(t, 200, rec.Code, rec.Body.String())
	assert.Equal(t, "application/x-npy", rec.Header().Get("Content-Type"))
	got, err := tensor.ReadNpy(rec.Body)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 5}, got.Shape())
	assert.Equal(t, direct(t, m, x), got.Float64s())
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
		srv := serve.New(serve.Options{})
		require.NoError(t, srv.Load(context.Background(), "m", m, serve.ModelOptions{NoWarmUp: true}))
		_, err = newServer(srv, "m", config{}, log.New(io.Discard, "", 0))
		require.ErrorContains(t, err, c.msg)
		require.NoError(t, srv.Close(context.Background()))
	}
}

func TestHealthReadyMetrics(t *testing.T) {
	srv, _ := testServer(t, serve.ModelOptions{}, serve.Options{}, config{})
	h := srv.handler()
	rec := do(h, "GET", "/healthz", "", nil)
	require.Equal(t, 200, rec.Code)
	var got map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	assert.Equal(t, "ok", got["status"])
	assert.Equal(t, true, got["batching"], "the CNN's batch axis is dynamic")
	assert.Equal(t, 405, do(h, "POST", "/healthz", "", nil).Code)
	assert.Equal(t, 200, do(h, "GET", "/readyz", "", nil).Code)

	require.Equal(t, 200, do(h, "POST", "/predict", "application/x-npy", npyBody(t, image(1, 0))).Code)
	rec = do(h, "GET", "/metrics", "", nil)
	require.Equal(t, 200, rec.Code)
	assert.Contains(t, rec.Body.String(), `ember_serve_requests_total{model="cnn",outcome="ok"} 1`+"\n")
	rec = do(h, "GET", "/stats", "", nil)
	require.Equal(t, 200, rec.Code)
	var st struct {
		Serve serve.Stats `json:"serve"`
		RSS   int64       `json:"rss_bytes"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &st))
	assert.Equal(t, uint64(1), st.Serve.Models["cnn"].OK)
	if _, ok := residentBytes(); ok {
		assert.Greater(t, st.RSS, int64(1<<20), "resident memory of a Go process holding a model")
	}
	rec = do(h, "GET", "/models", "", nil)
	require.Equal(t, 200, rec.Code)
	assert.Contains(t, rec.Body.String(), `"name":"cnn"`)

	srv.draining.Store(true)
	assert.Equal(t, 503, do(h, "GET", "/readyz", "", nil).Code, "not ready while shutting down")
}

// TestOverloadAndBudget: requests past the server's byte budget get 503
// with Retry-After at once (admission-wait 0), and do not disturb the
// requests that fit.
func TestOverloadAndBudget(t *testing.T) {
	srv, _ := testServer(t, serve.ModelOptions{}, serve.Options{MaxBytesInFlight: 64 << 10}, config{})
	h := srv.handler()
	body := npyBody(t, image(1, 0))
	release, err := srv.srv.Reserve(context.Background(), 64<<10)
	require.NoError(t, err)
	rec := do(h, "POST", "/predict", "application/x-npy", body)
	require.Equal(t, 503, rec.Code, rec.Body.String())
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	assert.Contains(t, rec.Body.String(), "memory budget exhausted")
	release()
	rec = do(h, "POST", "/predict", "application/x-npy", body)
	require.Equal(t, 200, rec.Code, rec.Body.String())
	// A body whose decoding alone would exceed the budget.
	rec = do(h, "POST", "/predict", "", jsonBody(t, "x", image(8, 0)))
	require.Equal(t, 503, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), "more than the server's whole budget")
}

func TestTimeoutIs504(t *testing.T) {
	srv, _ := testServer(t, serve.ModelOptions{}, serve.Options{}, config{maxBody: 1 << 20, maxElems: 1 << 16, timeout: time.Nanosecond})
	rec := do(srv.handler(), "POST", "/predict", "application/x-npy", npyBody(t, image(1, 0)))
	require.Equal(t, 504, rec.Code, rec.Body.String())
	assert.Zero(t, srv.srv.Stats().Models["cnn"].Runs, "a request whose time is up is not run")
}

// TestBadRequestInBatchDoesNotFailOthers joins a good request and one the
// model refuses into one batch: the good one gets its answer.
func TestBadRequestInBatchDoesNotFailOthers(t *testing.T) {
	srv, m := testServer(t, serve.ModelOptions{MaxBatch: 2, MaxWait: time.Minute}, serve.Options{}, config{})
	h := srv.handler()
	good, bad := image(1, 3), tensor.Ones([]int{1, 3, 2, 2}) // too small for the CNN's pooling
	var wg sync.WaitGroup
	var rg, rb *httptest.ResponseRecorder
	wg.Add(2)
	go func() { defer wg.Done(); rg = do(h, "POST", "/predict", "application/x-npy", npyBody(t, good)) }()
	go func() { defer wg.Done(); rb = do(h, "POST", "/predict", "application/x-npy", npyBody(t, bad)) }()
	wg.Wait()
	require.Equal(t, 200, rg.Code, rg.Body.String())
	_, got := decodeOutput(t, rg.Body.Bytes())
	assertSame(t, direct(t, m, good), got)
	require.Equal(t, 422, rb.Code, rb.Body.String())
}

// startServer serves srv on a fresh 127.0.0.1 port and returns its URL
// and a function that shuts it down as SIGTERM would.
func startServer(t *testing.T, srv *server, to timeouts) (string, func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveHTTP(ctx, ln, srv, to, log.New(io.Discard, "", 0)) }()
	return "http://" + ln.Addr().String(), func() error { cancel(); return <-done }
}

// TestLoad sends 8 goroutines × 50 requests to a real listener on
// 127.0.0.1 and checks every answer against a direct session run, then
// shuts the server down.
func TestLoad(t *testing.T) {
	srv, m := testServer(t, serve.ModelOptions{MaxBatch: 8}, serve.Options{}, config{})
	url, shutdown := startServer(t, srv, defaultTimeouts(time.Minute))
	const name = "x"
	const workers, perWorker = 8, 50
	inputs := make([]*tensor.Tensor, 5)
	wants := make([][]float64, len(inputs))
	jsonBodies, npyBodies := make([][]byte, len(inputs)), make([][]byte, len(inputs))
	for i := range inputs {
		inputs[i] = image(i%3+1, i)
		wants[i] = direct(t, m, inputs[i])
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
				for _, o := range raw.Outputs {
					for i := range wants[k] {
						if float32(o.Data[i]) != float32(wants[k][i]) {
							errs <- fmt.Errorf("request %d/%d element %d: %v, want %v", w, r, i, o.Data[i], wants[k][i])
							return
						}
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
	st := srv.srv.Stats().Models["cnn"]
	assert.Equal(t, uint64(workers*perWorker), st.OK)
	t.Logf("%d requests in %d session runs", st.OK, st.Runs)
	require.NoError(t, shutdown())
	resp, err := client.Get(url + "/healthz")
	if err == nil {
		resp.Body.Close()
	}
	require.Error(t, err, "the listener is closed after shutdown")
	assert.True(t, strings.Contains(err.Error(), "refused") || strings.Contains(err.Error(), "connect"), err.Error())
}

// TestSlowSenderCutOff: a client that sends half its body and stalls is
// cut off by the read timeout, and a request sent meanwhile is answered.
func TestSlowSenderCutOff(t *testing.T) {
	srv, _ := testServer(t, serve.ModelOptions{}, serve.Options{}, config{})
	to := defaultTimeouts(time.Minute)
	to.read = 200 * time.Millisecond
	url, shutdown := startServer(t, srv, to)
	defer func() { require.NoError(t, shutdown()) }()
	body := npyBody(t, image(1, 0))
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-npy\r\nContent-Length: %d\r\n\r\n", len(body))
	require.NoError(t, err)
	_, err = conn.Write(body[:len(body)/2])
	require.NoError(t, err)

	resp, err := http.Post(url+"/predict", "application/x-npy", bytes.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode, "others are served while a sender stalls")

	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	reply, _ := io.ReadAll(conn) // the server answers 400 or closes the connection
	assert.NotContains(t, string(reply), "200 OK")
	require.Eventually(t, func() bool { return srv.srv.Stats().BytesInFlight == 0 }, 10*time.Second, 5*time.Millisecond,
		"the stalled request gave its bytes back")
}

// TestLargeConcurrentRequestsStayInBudget sends 16 large requests at once
// to a server whose budget holds a few of them: every client gets 200 or
// 503, never a dropped connection, and the budget is never exceeded.
func TestLargeConcurrentRequestsStayInBudget(t *testing.T) {
	x := image(64, 1) // 62 KiB of float32, an .npy body of about 62 KiB
	body := npyBody(t, x)
	perRequest := int64(len(body))*npyBodyFactor + 3*int64(x.Numel()*4)
	budget := 3 * perRequest
	srv, _ := testServer(t, serve.ModelOptions{}, serve.Options{MaxBytesInFlight: budget, AdmissionWait: 50 * time.Millisecond}, config{})
	url, shutdown := startServer(t, srv, defaultTimeouts(time.Minute))
	defer func() { require.NoError(t, shutdown()) }()
	var wg sync.WaitGroup
	codes := make([]int, 16)
	var peak int64
	var peakMu sync.Mutex
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			b := srv.srv.Stats().BytesInFlight
			peakMu.Lock()
			peak = max(peak, b)
			peakMu.Unlock()
			time.Sleep(100 * time.Microsecond)
		}
	}()
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(url+"/predict", "application/x-npy", bytes.NewReader(body))
			if err != nil {
				codes[i] = -1
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	close(stop)
	ok := 0
	for i, c := range codes {
		assert.Contains(t, []int{200, 503}, c, "client %d", i)
		if c == 200 {
			ok++
		}
	}
	assert.Positive(t, ok)
	peakMu.Lock()
	assert.LessOrEqual(t, peak, budget)
	peakMu.Unlock()
}

func TestRunFlags(t *testing.T) {
	require.ErrorContains(t, run(nil), "-model is required")
	require.Error(t, run([]string{"-model", "does-not-exist.onnx"}))
	require.Error(t, run([]string{"-bogus"}))
}

func TestModelFlags(t *testing.T) {
	var m modelSpecs
	require.NoError(t, m.Set("dir/a.onnx"))
	require.NoError(t, m.Set("b=dir/x.onnx"))
	require.NoError(t, m.Set("dir/c.onnx"))
	require.NoError(t, m.Set("./weird=name.onnx"))
	require.Error(t, m.Set(""))
	require.NoError(t, m.name("first"))
	assert.Equal(t, modelSpecs{{"first", "dir/a.onnx"}, {"b", "dir/x.onnx"}, {"c", "dir/c.onnx"}, {"weird=name", "./weird=name.onnx"}}, m)
	assert.Equal(t, "first=dir/a.onnx,b=dir/x.onnx,c=dir/c.onnx,weird=name=./weird=name.onnx", m.String())
	two := modelSpecs{{"", "m.onnx"}, {"", "x/a.onnx"}}
	require.NoError(t, two.name("model"))
	assert.Equal(t, modelSpecs{{"model", "m.onnx"}, {"a", "x/a.onnx"}}, two)
	dup := modelSpecs{{"", "a.onnx"}, {"", "x/a.onnx"}}
	require.ErrorContains(t, dup.name("a"), `two models named "a"`)
	dup = modelSpecs{{"", "a.onnx"}, {"model", "b.onnx"}}
	require.ErrorContains(t, dup.name("model"), `two models named "model"`)
}

// TestReloadAndSeveralModels serves the CNN and the transformer, reloads
// both as SIGHUP does, and checks a failed reload keeps the old version.
func TestReloadAndSeveralModels(t *testing.T) {
	srv, _ := testServer(t, serve.ModelOptions{}, serve.Options{}, config{})
	const tf = "../../onnx/testdata/models/transformer_opset13/model.onnx"
	require.NoError(t, srv.srv.LoadFile(context.Background(), "tf", tf, serve.ModelOptions{}))
	srv.sources = []modelSpec{{"cnn", testModel}, {"tf", tf}}
	var logs strings.Builder
	srv.log = log.New(&logs, "", 0)
	assert.Zero(t, srv.reload(context.Background()))
	assert.Contains(t, logs.String(), `reloaded "tf"`)
	st := srv.srv.Stats()
	assert.Equal(t, 2, st.Models["cnn"].Version)
	assert.Equal(t, 2, st.Models["tf"].Version)

	srv.sources = []modelSpec{{"cnn", "does-not-exist.onnx"}}
	assert.Equal(t, 1, srv.reload(context.Background()))
	assert.Contains(t, logs.String(), "the old version stays")
	assert.Equal(t, 2, srv.srv.Stats().Models["cnn"].Version)

	h := srv.handler()
	body := []byte(fmt.Sprintf(`{"inputs": {"query": {"shape": [4, 2, 8], "data": [%s0]}}}`, strings.Repeat("0.5, ", 63)))
	rec := do(h, "POST", "/models/tf/predict", "application/json", body)
	require.Equal(t, 200, rec.Code, rec.Body.String())
	shape, _ := decodeOutput(t, rec.Body.Bytes())
	assert.Equal(t, []int{4, 2, 8}, shape)
	assert.Equal(t, 200, do(h, "POST", "/predict", "application/x-npy", npyBody(t, image(1, 0))).Code)
}

// TestSlowUploadStillAnswered: a body that arrives after the server's
// write timeout has passed still gets its response (the issue's
// "closed with no response at all").
func TestSlowUploadStillAnswered(t *testing.T) {
	srv, _ := testServer(t, serve.ModelOptions{}, serve.Options{}, config{maxBody: 1 << 20, maxElems: 1 << 16, timeout: 5 * time.Second})
	to := defaultTimeouts(time.Minute)
	to.write = 100 * time.Millisecond
	url, shutdown := startServer(t, srv, to)
	defer func() { require.NoError(t, shutdown()) }()
	body := npyBody(t, image(1, 0))
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-npy\r\nConnection: close\r\nContent-Length: %d\r\n\r\n", len(body))
	require.NoError(t, err)
	_, err = conn.Write(body[:len(body)/2])
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond) // past the write timeout
	_, err = conn.Write(body[len(body)/2:])
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	reply, err := io.ReadAll(conn)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(reply), "HTTP/1.1 200 OK"), "%.200q", reply)
}

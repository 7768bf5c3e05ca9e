package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"log"
	"math"
	"mime"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/serve"
	"github.com/emberml/ember/tensor"
)

// npyMagic starts every .npy file.
var npyMagic = []byte("\x93NUMPY")

// npyType is the media type of .npy bodies.
const npyType = "application/x-npy"

// config holds the HTTP side's settings.
type config struct {
	// maxBody caps a request body in bytes; maxElems caps the elements of
	// one input tensor.
	maxBody  int64
	maxElems int
	// timeout bounds one request's wait and run.
	timeout time.Duration
}

// Bytes of the server's budget a request body reserves while it is read
// and decoded, per body byte: a JSON body becomes json.Number strings,
// then float64s, then the tensor; an .npy body is copied once.
const (
	jsonBodyFactor = 6
	npyBodyFactor  = 2
)

// server answers the HTTP endpoints for the models of a serve.Server.
type server struct {
	srv *serve.Server
	// model is the model /predict serves.
	model    string
	cfg      config
	log      *log.Logger
	draining atomic.Bool
	bodies   sync.Pool // *bytes.Buffer, reused across requests
	// sources and modelOpts are where and how the models were loaded, for
	// reload.
	sources   []modelSpec
	modelOpts serve.ModelOptions
}

// reload loads every model again from its file (a hot reload: the new
// version serves once warmed up, the old one answers what it accepted)
// and logs each outcome; a model that fails keeps its old version. It
// returns how many failed.
func (s *server) reload(ctx context.Context) int {
	failed := 0
	for _, m := range s.sources {
		if err := s.srv.LoadFile(ctx, m.name, m.path, s.modelOpts); err != nil {
			failed++
			s.log.Printf("reloading %q from %s: %v (the old version stays)", m.name, m.path, err)
			continue
		}
		s.log.Printf("reloaded %q from %s", m.name, m.path)
	}
	return failed
}

// newServer prepares the HTTP side for srv, whose model named model
// answers /predict. It refuses models whose inputs or outputs the codecs
// cannot carry.
func newServer(srv *serve.Server, model string, cfg config, logger *log.Logger) (*server, error) {
	if _, err := srv.Model(model); err != nil {
		return nil, err
	}
	for _, info := range srv.Models() {
		for _, in := range info.Inputs {
			if in.Kind != "" && in.Kind != "tensor" {
				return nil, fmt.Errorf("model %q: input %q is a %s; the service feeds tensors only", info.Name, in.Name, in.Kind)
			}
			if in.ElemType == "STRING" {
				return nil, fmt.Errorf("model %q: input %q is a string tensor; the service's codecs carry numeric tensors only", info.Name, in.Name)
			}
		}
		for _, out := range info.Outputs {
			if out.ElemType == "STRING" {
				return nil, fmt.Errorf("model %q: output %q is a string tensor; the service's codecs carry numeric tensors only", info.Name, out.Name)
			}
		}
	}
	s := &server{srv: srv, model: model, cfg: cfg, log: logger}
	s.bodies.New = func() any { return new(bytes.Buffer) }
	return s, nil
}

// handler routes the service's endpoints.
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/predict", func(w http.ResponseWriter, r *http.Request) { s.predict(w, r, s.model) })
	mux.HandleFunc("/models/{name}/predict", func(w http.ResponseWriter, r *http.Request) { s.predict(w, r, r.PathValue("name")) })
	mux.HandleFunc("/models", s.models)
	mux.HandleFunc("/healthz", s.healthz)
	mux.HandleFunc("/readyz", s.readyz)
	mux.HandleFunc("/metrics", s.metrics)
	mux.HandleFunc("/stats", s.stats)
	mux.Handle("/debug/vars", expvar.Handler())
	return recoverer(mux)
}

// recoverer turns a handler panic into a 500 JSON error.
func recoverer(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				writeError(w, http.StatusInternalServerError, fmt.Sprintf("internal error: %v", p))
			}
		}()
		h.ServeHTTP(w, r)
	})
}

// onlyGet answers 405 unless r is a GET or HEAD.
func onlyGet(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "use GET")
		return false
	}
	return true
}

// healthz reports liveness: the process answers.
func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	if !onlyGet(w, r) {
		return
	}
	info, err := s.srv.Model(s.model)
	batching := err == nil && info.Batching
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "model": s.model, "batching": batching})
}

// readyz reports readiness: a model is loaded and the server is not
// shutting down.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	if !onlyGet(w, r) {
		return
	}
	if s.draining.Load() || !s.srv.Ready() {
		writeError(w, http.StatusServiceUnavailable, "not ready")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// models lists the loaded models, their inputs and outputs.
func (s *server) models(w http.ResponseWriter, r *http.Request) {
	if !onlyGet(w, r) {
		return
	}
	type valueDesc struct {
		Name  string `json:"name"`
		Type  string `json:"type"`
		Shape string `json:"shape"`
	}
	desc := func(vs []onnx.ValueInfo) []valueDesc {
		out := []valueDesc{}
		for _, v := range vs {
			shape := "?"
			if v.HasShape {
				shape = fmt.Sprint(v.Shape)
			}
			out = append(out, valueDesc{v.Name, v.ElemType, shape})
		}
		return out
	}
	var list []map[string]any
	for _, m := range s.srv.Models() {
		list = append(list, map[string]any{"name": m.Name, "inputs": desc(m.Inputs), "outputs": desc(m.Outputs),
			"batching": m.Batching, "batching_off": m.BatchingOff})
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": list})
}

// metrics writes the Prometheus text exposition: the serve statistics and
// the process's resident memory.
func (s *server) metrics(w http.ResponseWriter, r *http.Request) {
	if !onlyGet(w, r) {
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	if err := s.srv.WritePrometheus(w); err != nil {
		return
	}
	if rss, ok := residentBytes(); ok {
		fmt.Fprintf(w, "# HELP process_resident_memory_bytes Resident memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %d\n", rss)
	}
}

// stats writes the serve statistics as JSON with the process's resident
// memory (rss_bytes, absent where it cannot be read) and Go heap.
func (s *server) stats(w http.ResponseWriter, r *http.Request) {
	if !onlyGet(w, r) {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	out := map[string]any{"serve": s.srv.Stats(), "heap_inuse_bytes": ms.HeapInuse, "goroutines": runtime.NumGoroutine()}
	if rss, ok := residentBytes(); ok {
		out["rss_bytes"] = rss
	}
	writeJSON(w, http.StatusOK, out)
}

// residentBytes reads the process's resident set size from /proc (Linux);
// ok is false elsewhere.
func residentBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}

// predict reserves the body's bytes of the memory budget, reads and
// decodes the inputs, runs them through model and writes the outputs (as
// JSON, or as .npy when the client accepts it and the model has one
// output).
func (s *server) predict(w http.ResponseWriter, r *http.Request, model string) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	info, err := s.srv.Model(model)
	if err != nil {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	if r.ContentLength > s.cfg.maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes exceeds %d bytes", r.ContentLength, s.cfg.maxBody))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.timeout)
	defer cancel()
	mt, err := mediaType(r.Header.Get("Content-Type"))
	if err != nil {
		writeError(w, http.StatusUnsupportedMediaType, err.Error())
		return
	}
	size := r.ContentLength
	if size < 0 {
		size = s.cfg.maxBody // unknown length: assume the largest
	}
	factor := int64(jsonBodyFactor)
	if mt == npyType || mt == "application/octet-stream" {
		factor = npyBodyFactor
	}
	release, err := s.srv.Reserve(ctx, size*factor)
	if err != nil {
		s.writeServeError(w, err)
		return
	}
	defer release()
	buf := s.bodies.Get().(*bytes.Buffer)
	defer s.putBody(buf)
	buf.Reset()
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, s.cfg.maxBody)); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", s.cfg.maxBody))
			return
		}
		writeError(w, http.StatusBadRequest, "reading body: "+err.Error())
		return
	}
	// The server's WriteTimeout counts from the request's headers, so a
	// slow upload could leave no time to answer: give the answer its own
	// time from here (the request's timeout and a margin to write it).
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.cfg.timeout + answerMargin))
	inputs, status, err := s.decode(info, mt, buf.Bytes())
	if err != nil {
		writeError(w, status, err.Error())
		return
	}
	outs, err := s.srv.Predict(ctx, model, inputs)
	if err != nil {
		s.writeServeError(w, err)
		return
	}
	if acceptsNpy(r.Header.Get("Accept")) && len(outs) == 1 {
		for _, t := range outs {
			buf.Reset()
			if err := tensor.WriteNpy(buf, t); err != nil {
				writeError(w, http.StatusInternalServerError, "writing .npy: "+err.Error())
				return
			}
			w.Header().Set("Content-Type", npyType)
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(buf.Bytes())
		}
		return
	}
	resp := predictResponse{Outputs: map[string]outTensor{}}
	for name, t := range outs {
		resp.Outputs[name] = encodeTensor(t)
	}
	writeJSON(w, http.StatusOK, resp)
}

// answerMargin is the time a response has to be written once its run is
// over.
const answerMargin = 10 * time.Second

// maxPooledBody is the largest body buffer kept for reuse; larger ones
// are left to the collector so one huge request does not pin its memory.
const maxPooledBody = 4 << 20

// putBody returns buf to the pool when it is not too large.
func (s *server) putBody(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledBody {
		s.bodies.Put(buf)
	}
}

// acceptsNpy reports whether an Accept header asks for .npy.
func acceptsNpy(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == npyType {
			return true
		}
	}
	return false
}

// writeServeError answers an error of serve.Server: 503 with Retry-After
// for overload and shutdown, 504 for a deadline, 404 for an unknown model,
// 422 for inputs the model refused.
func (s *server) writeServeError(w http.ResponseWriter, err error) {
	var overload *serve.OverloadError
	switch {
	case errors.As(err, &overload):
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(overload.RetryAfter.Seconds())))))
		writeError(w, http.StatusServiceUnavailable, err.Error())
	case errors.Is(err, serve.ErrClosed):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "server is shutting down")
	case errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusGatewayTimeout, "request timed out")
	case errors.Is(err, context.Canceled):
		writeError(w, http.StatusServiceUnavailable, "request canceled")
	case errors.Is(err, serve.ErrUnknownModel):
		writeError(w, http.StatusNotFound, err.Error())
	default:
		// The model refused these inputs (names, dtypes, shapes).
		writeError(w, http.StatusUnprocessableEntity, err.Error())
	}
}

// mediaType parses a Content-Type header ("" when absent).
func mediaType(contentType string) (string, error) {
	if contentType == "" {
		return "", nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", fmt.Errorf("bad Content-Type %q", contentType)
	}
	return mt, nil
}

// decode reads a JSON body or, for a single-input model, an .npy body.
// It returns the status to answer with on error.
func (s *server) decode(info serve.ModelInfo, mt string, body []byte) (map[string]*tensor.Tensor, int, error) {
	isNpy := bytes.HasPrefix(body, npyMagic)
	switch {
	case mt == npyType || (isNpy && (mt == "" || mt == "application/octet-stream")):
		if len(info.Inputs) != 1 {
			return nil, http.StatusBadRequest, fmt.Errorf("an .npy body feeds a single-input model; this one has %d inputs: send JSON", len(info.Inputs))
		}
		t, err := tensor.ReadNpy(bytes.NewReader(body))
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("reading .npy: %v", err)
		}
		if t.Numel() > s.cfg.maxElems {
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("input has %d elements, more than %d", t.Numel(), s.cfg.maxElems)
		}
		return map[string]*tensor.Tensor{info.Inputs[0].Name: t}, 0, nil
	case mt == "" || mt == "application/json":
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		dec.DisallowUnknownFields()
		var req predictRequest
		if err := dec.Decode(&req); err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("decoding JSON: %v", err)
		}
		if dec.More() {
			return nil, http.StatusBadRequest, errors.New("decoding JSON: trailing data after the request object")
		}
		if len(req.Inputs) == 0 {
			return nil, http.StatusBadRequest, errors.New(`no inputs: send {"inputs": {"name": {"shape": [...], "data": [...]}}}`)
		}
		dtypes := map[string]tensor.DType{}
		for _, in := range info.Inputs {
			dt, err := in.DType()
			if err != nil {
				dt = tensor.Float32 // undeclared element type: the request may name one
			}
			dtypes[in.Name] = dt
		}
		inputs := map[string]*tensor.Tensor{}
		for name, wt := range req.Inputs {
			dt, ok := dtypes[name]
			if !ok {
				return nil, http.StatusBadRequest, fmt.Errorf("%q is not an input of the model", name)
			}
			t, err := decodeTensor(name, wt, dt, s.cfg.maxElems)
			if err != nil {
				return nil, http.StatusBadRequest, err
			}
			inputs[name] = t
		}
		return inputs, 0, nil
	}
	return nil, http.StatusUnsupportedMediaType, fmt.Errorf("Content-Type %q: send application/json or application/x-npy", mt)
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes {"error": msg} with status.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorResponse{Error: msg})
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net/http"
	"time"

	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
)

// npyMagic starts every .npy file.
var npyMagic = []byte("\x93NUMPY")

// config holds the service's settings.
type config struct {
	// maxBatch and batchWait bound how many requests share one run and how
	// long the first of them waits for company.
	maxBatch  int
	batchWait time.Duration
	// maxBody caps a request body in bytes; maxElems caps the elements of
	// one input tensor.
	maxBody  int64
	maxElems int
	// timeout bounds one request's wait and run.
	timeout time.Duration
}

// server answers /predict and /healthz for one model.
type server struct {
	sess    *onnx.Session
	dtypes  map[string]tensor.DType
	cfg     config
	batcher *batcher
	log     *log.Logger
}

// newServer prepares a server for sess; call close to stop its batcher.
func newServer(sess *onnx.Session, cfg config, logger *log.Logger) (*server, error) {
	s := &server{sess: sess, cfg: cfg, dtypes: map[string]tensor.DType{}, log: logger}
	for _, in := range sess.Inputs() {
		if in.Kind != "" && in.Kind != "tensor" {
			return nil, fmt.Errorf("input %q is a %s; the service feeds tensors only", in.Name, in.Kind)
		}
		if in.ElemType == "STRING" {
			return nil, fmt.Errorf("input %q is a string tensor; the service's codecs carry numeric tensors only", in.Name)
		}
		dt, err := in.DType()
		if err != nil {
			dt = tensor.Float32 // undeclared element type: the request may name one
		}
		s.dtypes[in.Name] = dt
	}
	for _, out := range sess.Outputs() {
		if out.ElemType == "STRING" {
			return nil, fmt.Errorf("output %q is a string tensor; the service's codecs carry numeric tensors only", out.Name)
		}
	}
	s.batcher = newBatcher(sess, cfg.maxBatch, cfg.batchWait)
	return s, nil
}

// close stops the batcher after answering the queued requests.
func (s *server) close() { s.batcher.close() }

// handler routes the service's endpoints.
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/predict", s.predict)
	mux.HandleFunc("/healthz", s.healthz)
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

// healthz reports liveness, the model's inputs and outputs and counters.
func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "use GET")
		return
	}
	requests, runs := s.batcher.stats()
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
	writeJSON(w, http.StatusOK, map[string]any{
		"status": "ok", "inputs": desc(s.sess.Inputs()), "outputs": desc(s.sess.Outputs()),
		"batching": s.batcher.batchable, "requests": requests, "runs": runs,
	})
}

// predict decodes the inputs, queues them for a batch and writes the
// outputs.
func (s *server) predict(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", s.cfg.maxBody))
			return
		}
		writeError(w, http.StatusBadRequest, "reading body: "+err.Error())
		return
	}
	inputs, status, err := s.decode(r.Header.Get("Content-Type"), body)
	if err != nil {
		writeError(w, status, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.timeout)
	defer cancel()
	res := s.batcher.submit(ctx, inputs)
	switch {
	case errors.Is(res.err, errShuttingDown):
		writeError(w, http.StatusServiceUnavailable, res.err.Error())
		return
	case errors.Is(res.err, context.DeadlineExceeded):
		writeError(w, http.StatusGatewayTimeout, "request timed out")
		return
	case errors.Is(res.err, context.Canceled):
		writeError(w, http.StatusServiceUnavailable, "request canceled")
		return
	case res.err != nil:
		// The model refused these inputs (names, dtypes, shapes).
		writeError(w, http.StatusUnprocessableEntity, res.err.Error())
		return
	}
	resp := predictResponse{Outputs: map[string]outTensor{}}
	for name, t := range res.outputs {
		resp.Outputs[name] = encodeTensor(t)
	}
	writeJSON(w, http.StatusOK, resp)
}

// decode reads a JSON body or, for a single-input model, an .npy body.
// It returns the status to answer with on error.
func (s *server) decode(contentType string, body []byte) (map[string]*tensor.Tensor, int, error) {
	mt := ""
	if contentType != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(contentType); err != nil {
			return nil, http.StatusUnsupportedMediaType, fmt.Errorf("bad Content-Type %q", contentType)
		}
	}
	isNpy := bytes.HasPrefix(body, npyMagic)
	switch {
	case mt == "application/x-npy" || (isNpy && (mt == "" || mt == "application/octet-stream")):
		ins := s.sess.Inputs()
		if len(ins) != 1 {
			return nil, http.StatusBadRequest, fmt.Errorf("an .npy body feeds a single-input model; this one has %d inputs: send JSON", len(ins))
		}
		t, err := tensor.ReadNpy(bytes.NewReader(body))
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("reading .npy: %v", err)
		}
		if t.Numel() > s.cfg.maxElems {
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("input has %d elements, more than %d", t.Numel(), s.cfg.maxElems)
		}
		return map[string]*tensor.Tensor{ins[0].Name: t}, 0, nil
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
		inputs := map[string]*tensor.Tensor{}
		for name, wt := range req.Inputs {
			dt, ok := s.dtypes[name]
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

// Command onnx-serve serves an ONNX model over HTTP with Ember's serve
// package.
//
//	go run ./examples/onnx-serve -model FILE.onnx -addr HOST:PORT
//	go run ./examples/onnx-serve -model a.onnx -model b=other.onnx ...  # several models
//
// POST /predict takes {"inputs": {"name": {"shape": [...], "data": [...]}}}
// (dtype optional: the model's), or for a single-input model an .npy body
// (Content-Type application/x-npy, or any body starting with the .npy
// magic), and returns {"outputs": {"name": {"shape", "dtype", "data"}}}, or
// the single output as .npy when the request says Accept: application/x-npy.
// POST /models/NAME/predict does the same for the model NAME (the one
// loaded is named by -name).
//
// Concurrent requests are batched: up to -max-batch requests (and
// -max-batch-rows rows), or those arriving within -batch-wait of the
// first, are joined along axis 0 and run once when the model's batch axis
// is dynamic (and a warm-up check shows
// batched rows bit-equal to single runs); -runs runs proceed at once, each
// with -threads/-runs intra-op threads. At most -queue requests wait; one
// more gets 503 with Retry-After at once. The bytes in flight (bodies
// being read and decoded, inputs, batches, outputs) stay within -budget:
// past it a request waits up to -admission-wait and then gets 503 with
// Retry-After. Each request's -timeout reaches the run: a request whose
// time is up gets 504 and is not run if it has not started.
//
// -budget bounds the bytes the requests hold; the model's weights and the
// intermediates of the -runs runs in progress come on top, and Go's
// collector lets the heap grow to about twice what is live: set
// GOMEMLIMIT (e.g. GOMEMLIMIT=1500MiB) to keep the resident size near a
// figure.
//
// GET /healthz is liveness, GET /readyz readiness (503 while shutting
// down), GET /metrics the Prometheus text exposition (with
// process_resident_memory_bytes), GET /stats the same as JSON with
// rss_bytes, GET /debug/vars expvar, GET /models the loaded models. Errors
// are JSON {"error": "..."}: 400 for malformed requests, 404 for unknown
// models, 405 for wrong methods, 413 for oversized ones, 415 for other
// media types, 422 when the model rejects the inputs, 503 when overloaded,
// 504 on timeout. SIGHUP reloads every model from its file (load, warm
// up, swap, drain the old version; a model that fails to load keeps its
// old version). SIGINT or SIGTERM turns readiness off, stops accepting
// connections, answers the requests in flight and exits.
package main

import (
	"context"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/emberml/ember/serve"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "onnx-serve:", err)
		os.Exit(1)
	}
}

// timeouts are the HTTP server's connection timeouts.
type timeouts struct {
	readHeader, read, write, idle, shutdown time.Duration
}

// run parses args, serves until SIGINT/SIGTERM and shuts down gracefully.
func run(args []string) error {
	fs := flag.NewFlagSet("onnx-serve", flag.ContinueOnError)
	var specs modelSpecs
	fs.Var(&specs, "model", "ONNX model file, or NAME=FILE; repeat for several models (the first also answers /predict)")
	name := fs.String("name", "model", "name of the first model when -model gives none (POST /models/NAME/predict)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	maxBatch := fs.Int("max-batch", 8, "most requests joined into one run")
	maxBatchRows := fs.Int("max-batch-rows", 64, "most rows (batch-axis size) in one joined run; larger requests run alone")
	batchWait := fs.Duration("batch-wait", 2*time.Millisecond, "how long the first request of a batch waits for others")
	queue := fs.Int("queue", 64, "most requests waiting for a run; more get 503")
	runs := fs.Int("runs", 1, "session runs in progress at once")
	threads := fs.Int("threads", 0, "the model's thread budget, split between its runs (0: GOMAXPROCS)")
	budget := fs.Int64("budget", 1<<30, "bytes in flight for all requests together (bodies, inputs, batches, outputs)")
	admissionWait := fs.Duration("admission-wait", 100*time.Millisecond, "how long a request waits for room in -budget before 503")
	maxBody := fs.Int64("max-body", 32<<20, "largest request body in bytes")
	maxElems := fs.Int("max-elements", 1<<24, "most elements of one input tensor")
	timeout := fs.Duration("timeout", 30*time.Second, "limit on one request's queueing and run")
	var to timeouts
	fs.DurationVar(&to.readHeader, "read-header-timeout", 10*time.Second, "limit on reading a request's headers")
	fs.DurationVar(&to.read, "read-timeout", 60*time.Second, "limit on reading a whole request (slow senders are cut off)")
	fs.DurationVar(&to.write, "write-timeout", 0, "limit on writing a response (0: twice -timeout)")
	fs.DurationVar(&to.idle, "idle-timeout", 120*time.Second, "how long an idle keep-alive connection stays open")
	fs.DurationVar(&to.shutdown, "shutdown-timeout", 30*time.Second, "how long shutdown waits for requests in flight")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(specs) == 0 {
		return errors.New("-model is required")
	}
	if err := specs.name(*name); err != nil {
		return err
	}
	if to.write == 0 {
		to.write = 2 * *timeout
	}
	srv := serve.New(serve.Options{MaxBytesInFlight: *budget, AdmissionWait: *admissionWait})
	opts := serve.ModelOptions{MaxBatch: *maxBatch, MaxBatchRows: *maxBatchRows, MaxWait: *batchWait, QueueSize: *queue, Runs: *runs, Threads: *threads}
	for _, m := range specs {
		if err := srv.LoadFile(context.Background(), m.name, m.path, opts); err != nil {
			_ = srv.Close(context.Background())
			return fmt.Errorf("model %q: %w", m.name, err)
		}
	}
	logger := log.New(os.Stderr, "onnx-serve: ", log.LstdFlags)
	hs, err := newServer(srv, specs[0].name, config{maxBody: *maxBody, maxElems: *maxElems, timeout: *timeout}, logger)
	if err != nil {
		_ = srv.Close(context.Background())
		return err
	}
	hs.sources, hs.modelOpts = specs, opts
	expvar.Publish("ember_serve", srv.Expvar())
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		_ = srv.Close(context.Background())
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				hs.reload(ctx)
			}
		}
	}()
	return serveHTTP(ctx, ln, hs, to, logger)
}

// modelSpec is one -model flag: the name a model is served as and its
// file.
type modelSpec struct {
	name, path string
}

// modelSpecs collects repeated -model flags.
type modelSpecs []modelSpec

// String lists the models as NAME=FILE.
func (m *modelSpecs) String() string {
	parts := make([]string, len(*m))
	for i, s := range *m {
		parts[i] = s.name + "=" + s.path
	}
	return strings.Join(parts, ",")
}

// Set adds FILE or NAME=FILE (a name has no "/" and no "=").
func (m *modelSpecs) Set(v string) error {
	if v == "" {
		return errors.New("empty -model")
	}
	spec := modelSpec{path: v}
	if name, path, ok := strings.Cut(v, "="); ok && name != "" && !strings.ContainsAny(name, `/\`) {
		spec = modelSpec{name: name, path: path}
	}
	*m = append(*m, spec)
	return nil
}

// name gives the unnamed models their names: first the first, then each
// its file's base name without .onnx; names must be distinct.
func (m modelSpecs) name(first string) error {
	seen := map[string]bool{}
	for i := range m {
		if m[i].name == "" {
			m[i].name = first
			if i > 0 {
				m[i].name = strings.TrimSuffix(filepath.Base(m[i].path), ".onnx")
			}
		}
		if seen[m[i].name] {
			return fmt.Errorf("two models named %q: name them with -model NAME=FILE", m[i].name)
		}
		seen[m[i].name] = true
	}
	return nil
}

// serveHTTP answers on ln until ctx is done, then turns readiness off,
// stops accepting, waits up to to.shutdown for requests in flight and
// closes the models.
func serveHTTP(ctx context.Context, ln net.Listener, s *server, to timeouts, logger *log.Logger) error {
	hs := &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: to.readHeader,
		ReadTimeout:       to.read,
		WriteTimeout:      to.write,
		IdleTimeout:       to.idle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          logger,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	logger.Printf("serving %q on http://%s", s.model, ln.Addr())
	select {
	case err := <-errc:
		_ = s.srv.Close(context.Background())
		return err
	case <-ctx.Done():
	}
	logger.Print("shutting down")
	s.draining.Store(true)
	sctx, cancel := context.WithTimeout(context.Background(), to.shutdown)
	defer cancel()
	err := hs.Shutdown(sctx)
	if cerr := s.srv.Close(sctx); err == nil {
		err = cerr
	}
	<-errc // http.ErrServerClosed once Shutdown has begun
	return err
}

// defaultTimeouts are the flags' defaults, for tests.
func defaultTimeouts(timeout time.Duration) timeouts {
	return timeouts{readHeader: 10 * time.Second, read: 60 * time.Second, write: 2 * timeout, idle: 120 * time.Second, shutdown: 30 * time.Second}
}

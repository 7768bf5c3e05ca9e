// Command onnx-serve serves an ONNX model over HTTP with Ember.
//
//	onnx-serve -model model.onnx -addr :8080 [-max-batch 8] [-batch-wait 2ms] [-threads N]
//
// POST /predict takes {"inputs": {"name": {"shape": [...], "data": [...]}}}
// (dtype optional: the model's), or for a single-input model an .npy body
// (Content-Type application/x-npy, or any body starting with the .npy
// magic), and returns {"outputs": {"name": {"shape", "dtype", "data"}}}.
// Concurrent requests are batched: up to -max-batch requests, or those
// arriving within -batch-wait of the first, are concatenated along axis 0
// and run once when the model's batch axis is dynamic, and the outputs are
// split back. GET /healthz reports the model and counters. Errors are JSON
// {"error": "..."}: 400 for malformed requests, 413 for oversized ones, 415
// for other media types, 422 when the model rejects the inputs. SIGINT or
// SIGTERM stops accepting connections, finishes the requests in flight and
// exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/emberml/ember/onnx"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "onnx-serve:", err)
		os.Exit(1)
	}
}

// run parses args, serves until SIGINT/SIGTERM and shuts down gracefully.
func run(args []string) error {
	fs := flag.NewFlagSet("onnx-serve", flag.ContinueOnError)
	modelPath := fs.String("model", "", "ONNX model file (required)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	maxBatch := fs.Int("max-batch", 8, "most requests batched into one run")
	batchWait := fs.Duration("batch-wait", 2*time.Millisecond, "how long the first request of a batch waits for others")
	maxBody := fs.Int64("max-body", 32<<20, "largest request body in bytes")
	maxElems := fs.Int("max-elements", 1<<24, "most elements of one input tensor")
	timeout := fs.Duration("timeout", 30*time.Second, "limit on one request's queueing and run")
	threads := fs.Int("threads", 0, "intra-op threads per kernel (0: GOMAXPROCS)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *modelPath == "" {
		return errors.New("-model is required")
	}
	m, err := onnx.Load(*modelPath)
	if err != nil {
		return err
	}
	sess, err := m.NewSession(onnx.SessionOptions{IntraOpThreads: *threads})
	if err != nil {
		return err
	}
	logger := log.New(os.Stderr, "onnx-serve: ", log.LstdFlags)
	srv, err := newServer(sess, config{
		maxBatch: *maxBatch, batchWait: *batchWait, maxBody: *maxBody, maxElems: *maxElems, timeout: *timeout,
	}, logger)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		srv.close()
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, ln, srv, logger)
}

// serve answers on ln until ctx is done, then stops accepting, waits up to
// 30 s for requests in flight and stops the batcher.
func serve(ctx context.Context, ln net.Listener, srv *server, logger *log.Logger) error {
	hs := &http.Server{
		Handler:           srv.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      2 * srv.cfg.timeout,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	logger.Printf("serving on http://%s", ln.Addr())
	select {
	case err := <-errc:
		srv.close()
		return err
	case <-ctx.Done():
	}
	logger.Print("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	srv.close()
	<-errc // http.ErrServerClosed once Shutdown has begun
	return err
}

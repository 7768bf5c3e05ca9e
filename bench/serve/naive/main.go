// Command naive is the baseline of the serving benchmarks (issue 25): a
// net/http server sharing one onnx.Session across requests with no
// batching, no queue and no limit on requests in flight, as a new user
// writes it first.
//
//	go run ./bench/serve/naive -model FILE.onnx -addr 127.0.0.1:8081
//
// POST /predict takes an .npy body for a single-input model and answers
// its first output as .npy; GET /stats reports rss_bytes as
// examples/onnx-serve does, so ember serve-bench measures both alike.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "naive:", err)
		os.Exit(1)
	}
}

// run loads the model and serves until the process is stopped.
func run(args []string) error {
	fs := flag.NewFlagSet("naive", flag.ContinueOnError)
	modelPath := fs.String("model", "", "ONNX model file with one input (required)")
	addr := fs.String("addr", "127.0.0.1:8081", "listen address")
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
	sess, err := m.NewSession(onnx.SessionOptions{})
	if err != nil {
		return err
	}
	if len(sess.Inputs()) != 1 {
		return fmt.Errorf("the model has %d inputs; naive serves single-input models", len(sess.Inputs()))
	}
	in, out := sess.Inputs()[0].Name, sess.Outputs()[0].Name
	mux := http.NewServeMux()
	mux.HandleFunc("POST /predict", func(w http.ResponseWriter, r *http.Request) {
		x, err := tensor.ReadNpy(http.MaxBytesReader(w, r.Body, 64<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		outs, err := sess.Run(r.Context(), map[string]*tensor.Tensor{in: x})
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnprocessableEntity)
			return
		}
		var b bytes.Buffer
		if err := tensor.WriteNpy(&b, outs[out]); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-npy")
		_, _ = io.Copy(w, &b)
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"rss_bytes": %d}`, residentBytes())
	})
	log.Printf("naive: serving on http://%s", *addr)
	hs := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return hs.ListenAndServe()
}

// residentBytes reads the resident set size from /proc (Linux), or 0.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

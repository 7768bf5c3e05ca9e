package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

func TestLoopbackURL(t *testing.T) {
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080/predict", true},
		{"http://127.3.4.5/predict", true},
		{"http://localhost:9/predict", true},
		{"http://LOCALHOST:9/predict", true},
		{"http://[::1]:8080/predict", true},
		{"https://127.0.0.1/predict", true},
		{"http://10.0.0.1/predict", false},
		{"http://128.0.0.1/predict", false},
		{"http://example.com/predict", false},
		{"http://localhost.example.com/predict", false},
		{"http://[::2]/predict", false},
		{"http://0.0.0.0:8080/predict", false},
		{"ftp://127.0.0.1/predict", false},
		{"", false},
		{"127.0.0.1:8080", false},
	} {
		_, err := loopbackURL(c.url)
		if c.ok {
			assert.NoError(t, err, c.url)
		} else {
			assert.Error(t, err, c.url)
		}
	}
}

// writeInput writes a small .npy file and returns its path.
func writeInput(t *testing.T) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, tensor.WriteNpy(&b, tensor.Ones([]int{1, 3}, tensor.Float32)))
	path := filepath.Join(t.TempDir(), "x.npy")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o600))
	return path
}

// TestServeBench runs the load generator against a stand-in server that
// fails every fifth request with 503 and reports a growing RSS.
func TestServeBench(t *testing.T) {
	var predicts, statsCalls atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/predict":
			if r.Header.Get("Content-Type") != "application/x-npy" {
				w.WriteHeader(http.StatusUnsupportedMediaType)
				return
			}
			if predicts.Add(1)%5 == 0 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.Write([]byte("ok"))
		case "/stats":
			n := statsCalls.Add(1)
			fmt.Fprintf(w, `{"rss_bytes": %d}`, (10+n)<<20)
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	require.True(t, strings.HasPrefix(ts.URL, "http://127.0.0.1:"), ts.URL)
	var stdout, stderr bytes.Buffer
	code := runServeBench([]string{"-url", ts.URL + "/predict", "-input", writeInput(t), "-clients", "4", "-requests", "40", "-warmup", "4"}, &stdout, &stderr)
	assert.Equal(t, 1, code, "errors make the exit status 1: %s", stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	last := lines[len(lines)-1]
	re := regexp.MustCompile(`^requests=(\d+) errors=(\d+) throughput=([0-9.]+)/s p50_ms=([0-9.]+) p95_ms=([0-9.]+) p99_ms=([0-9.]+) rss_start_mb=([0-9.]+) rss_end_mb=([0-9.]+)$`)
	m := re.FindStringSubmatch(last)
	require.NotNil(t, m, "last line: %q", last)
	assert.Equal(t, "40", m[1])
	assert.Equal(t, "8", m[2], "every fifth of the 44 predicts (warm-up first) failed: 8 of the 40 measured")
	p50, _ := strconv.ParseFloat(m[4], 64)
	p99, _ := strconv.ParseFloat(m[6], 64)
	assert.LessOrEqual(t, p50, p99)
	assert.Equal(t, "11.0", m[7], "RSS read once after warm-up")
	rssEnd, _ := strconv.ParseFloat(m[8], 64)
	assert.Greater(t, rssEnd, 11.0)
	assert.Contains(t, stdout.String(), "status 503: 8\n")
	assert.Equal(t, int64(44), predicts.Load())

	// Paced: the same summary, every request sent.
	stdout.Reset()
	predicts.Store(0)
	code = runServeBench([]string{"-url", ts.URL + "/predict", "-input", writeInput(t), "-clients", "2", "-requests", "6", "-warmup", "1", "-rate", "1000"}, &stdout, &stderr)
	lines = strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.NotNil(t, re.FindStringSubmatch(lines[len(lines)-1]), "%q", stdout.String())
	assert.True(t, strings.HasPrefix(lines[len(lines)-1], "requests=6 "), lines[len(lines)-1])
	assert.Equal(t, 1, code, "the fifth predict failed")
	assert.Equal(t, int64(7), predicts.Load())
}

func TestServeBenchRefuses(t *testing.T) {
	input := writeInput(t)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-url", "http://192.168.1.1/predict", "-input", input}, "not a loopback address"},
		{[]string{"-url", "http://127.0.0.1:1/predict", "-input", input, "-clients", "0"}, "-clients 0"},
		{[]string{"-url", "http://127.0.0.1:1/predict", "-input", input, "-requests", "0"}, "-requests 0"},
		{[]string{"-url", "http://127.0.0.1:1/predict"}, "-input X.npy is required"},
		{[]string{"-url", "http://127.0.0.1:1/predict", "-input", input, "-rate", "-1"}, "-rate -1"},
		{[]string{"-url", "http://127.0.0.1:1/predict", "-input", filepath.Join(t.TempDir(), "none.npy")}, "no such file"},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, runServeBench(c.args, &stdout, &stderr), c.args)
		assert.Contains(t, stderr.String(), c.msg)
		assert.Empty(t, stdout.String())
	}
	// A server that is not there: the warm-up fails with a clear error.
	var stdout, stderr bytes.Buffer
	ln := httptest.NewServer(http.NotFoundHandler())
	url := ln.URL
	ln.Close()
	assert.Equal(t, 1, runServeBench([]string{"-url", url + "/predict", "-input", input, "-requests", "1"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "warm-up request 0")
}

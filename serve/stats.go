package serve

import (
	"bufio"
	"expvar"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// latencyBounds are the upper bounds, in seconds, of the latency
// histogram's buckets (the last bucket, +Inf, is implicit).
var latencyBounds = [...]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// Histogram counts observations per bucket (not cumulatively, unlike
// Prometheus): Counts[i] is the number of observations at most Bounds[i]
// and above Bounds[i-1]; the last count, Counts[len(Bounds)], holds those
// above every bound.
type Histogram struct {
	Bounds []float64 `json:"bounds"`
	Counts []uint64  `json:"counts"`
	Sum    float64   `json:"sum"`
	Count  uint64    `json:"count"`
}

// observe adds v to h.
func (h *Histogram) observe(v float64) {
	i, _ := slices.BinarySearch(h.Bounds, v)
	h.Counts[i]++
	h.Sum += v
	h.Count++
}

// Quantile returns an estimate of the q-quantile (0 < q < 1): the upper
// bound of the bucket holding it (the largest bound for the overflow
// bucket), or 0 for an empty histogram.
func (h Histogram) Quantile(q float64) float64 {
	if h.Count == 0 {
		return 0
	}
	rank := uint64(q*float64(h.Count-1)) + 1
	var seen uint64
	for i, c := range h.Counts {
		seen += c
		if seen >= rank {
			return h.Bounds[min(i, len(h.Bounds)-1)]
		}
	}
	return h.Bounds[len(h.Bounds)-1]
}

// newHistogram returns an empty histogram over bounds.
func newHistogram(bounds []float64) Histogram {
	return Histogram{Bounds: slices.Clone(bounds), Counts: make([]uint64, len(bounds)+1)}
}

// ModelStats are the counters of one model name, kept across reloads.
type ModelStats struct {
	// Version counts the loads of this name: 1 after the first Load, 2
	// after the first reload, ...
	Version int `json:"version"`
	// Batching reports whether requests are joined along the batch axis;
	// BatchingOff says why not when they are not.
	Batching    bool   `json:"batching"`
	BatchingOff string `json:"batching_off,omitempty"`
	// QueueDepth is the number of requests waiting now; QueueSize the
	// most that may wait.
	QueueDepth int `json:"queue_depth"`
	QueueSize  int `json:"queue_size"`
	// Runs is the number of session runs made (a batch is one run).
	Runs uint64 `json:"runs"`
	// OK counts answered requests with outputs; Errors requests the model
	// failed (bad inputs, run errors); Rejected requests refused by
	// admission (queue full or memory budget); Expired requests whose
	// context ended before or during their run.
	OK       uint64 `json:"ok"`
	Errors   uint64 `json:"errors"`
	Rejected uint64 `json:"rejected"`
	Expired  uint64 `json:"expired"`
	// BatchSizes is the histogram of how many requests shared each run.
	BatchSizes Histogram `json:"batch_sizes"`
	// Latency is the histogram of request latencies in seconds, from
	// Predict's call to its return, for requests that were admitted.
	Latency Histogram `json:"latency_seconds"`
}

// Stats is a snapshot of a Server's statistics.
type Stats struct {
	// BytesInFlight is the memory reserved by requests now;
	// MaxBytesInFlight the server's budget.
	BytesInFlight    int64 `json:"bytes_in_flight"`
	MaxBytesInFlight int64 `json:"max_bytes_in_flight"`
	// Models holds each loaded model's statistics by name.
	Models map[string]ModelStats `json:"models"`
}

// metrics holds the counters of one model name; it outlives reloads.
type metrics struct {
	mu      sync.Mutex
	version int
	runs    uint64
	ok      uint64
	errors  uint64
	reject  uint64
	expired uint64
	batches Histogram
	latency Histogram
}

// newMetrics returns the counters of a model whose batches hold at most
// maxBatch requests.
func newMetrics(maxBatch int) *metrics {
	var bounds []float64
	for b := 1; ; b *= 2 {
		bounds = append(bounds, float64(min(b, maxBatch)))
		if b >= maxBatch {
			break
		}
	}
	return &metrics{batches: newHistogram(bounds), latency: newHistogram(latencyBounds[:])}
}

// outcome is how a request ended, for the counters.
type outcome int

const (
	outcomeOK outcome = iota
	outcomeError
	outcomeRejected
	outcomeExpired
)

// request records one answered request.
func (m *metrics) request(o outcome, latency time.Duration, admitted bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch o {
	case outcomeOK:
		m.ok++
	case outcomeError:
		m.errors++
	case outcomeRejected:
		m.reject++
	case outcomeExpired:
		m.expired++
	}
	if admitted {
		m.latency.observe(latency.Seconds())
	}
}

// run records one session run of n requests.
func (m *metrics) run(n int) {
	m.mu.Lock()
	m.runs++
	m.batches.observe(float64(n))
	m.mu.Unlock()
}

// snapshot copies the counters into a ModelStats.
func (m *metrics) snapshot() ModelStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp := func(h Histogram) Histogram {
		h.Bounds, h.Counts = slices.Clone(h.Bounds), slices.Clone(h.Counts)
		return h
	}
	return ModelStats{
		Version: m.version, Runs: m.runs, OK: m.ok, Errors: m.errors, Rejected: m.reject, Expired: m.expired,
		BatchSizes: cp(m.batches), Latency: cp(m.latency),
	}
}

// Expvar returns the server's statistics as an expvar.Var; publish it
// under a name of your choice: expvar.Publish("ember_serve", s.Expvar()).
func (s *Server) Expvar() expvar.Var {
	return expvar.Func(func() any { return s.Stats() })
}

// WritePrometheus writes the server's statistics to w in the Prometheus
// text exposition format (version 0.0.4), every series labelled with its
// model.
func (s *Server) WritePrometheus(w io.Writer) error {
	st := s.Stats()
	names := make([]string, 0, len(st.Models))
	for n := range st.Models {
		names = append(names, n)
	}
	slices.Sort(names)
	bw := bufio.NewWriter(w)
	family := func(name, typ, help string) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	family("ember_serve_bytes_in_flight", "gauge", "Bytes reserved by requests in flight.")
	fmt.Fprintf(bw, "ember_serve_bytes_in_flight %d\n", st.BytesInFlight)
	family("ember_serve_bytes_budget", "gauge", "The server's memory budget for requests in flight, in bytes.")
	fmt.Fprintf(bw, "ember_serve_bytes_budget %d\n", st.MaxBytesInFlight)
	perModel := func(name, typ, help string, value func(ModelStats) string) {
		family(name, typ, help)
		for _, n := range names {
			fmt.Fprintf(bw, "%s{model=\"%s\"} %s\n", name, escapeLabel(n), value(st.Models[n]))
		}
	}
	perModel("ember_serve_model_version", "gauge", "Loads of the model name (1 for the first load).", func(m ModelStats) string { return fmt.Sprint(m.Version) })
	perModel("ember_serve_batching", "gauge", "1 when requests are joined along the batch axis.", func(m ModelStats) string {
		if m.Batching {
			return "1"
		}
		return "0"
	})
	perModel("ember_serve_queue_depth", "gauge", "Requests waiting in the model's queue.", func(m ModelStats) string { return fmt.Sprint(m.QueueDepth) })
	perModel("ember_serve_queue_size", "gauge", "Capacity of the model's queue.", func(m ModelStats) string { return fmt.Sprint(m.QueueSize) })
	perModel("ember_serve_runs_total", "counter", "Session runs (a batch is one run).", func(m ModelStats) string { return fmt.Sprint(m.Runs) })
	family("ember_serve_requests_total", "counter", "Requests answered, by outcome (ok, error, rejected, expired).")
	for _, n := range names {
		m := st.Models[n]
		for _, o := range []struct {
			label string
			v     uint64
		}{{"ok", m.OK}, {"error", m.Errors}, {"rejected", m.Rejected}, {"expired", m.Expired}} {
			fmt.Fprintf(bw, "ember_serve_requests_total{model=\"%s\",outcome=\"%s\"} %d\n", escapeLabel(n), o.label, o.v)
		}
	}
	histogram := func(name, help string, get func(ModelStats) Histogram) {
		family(name, "histogram", help)
		for _, n := range names {
			h := get(st.Models[n])
			label := escapeLabel(n)
			var cum uint64
			for i, b := range h.Bounds {
				cum += h.Counts[i]
				fmt.Fprintf(bw, "%s_bucket{model=\"%s\",le=\"%g\"} %d\n", name, label, b, cum)
			}
			fmt.Fprintf(bw, "%s_bucket{model=\"%s\",le=\"+Inf\"} %d\n", name, label, h.Count)
			fmt.Fprintf(bw, "%s_sum{model=\"%s\"} %g\n", name, label, h.Sum)
			fmt.Fprintf(bw, "%s_count{model=\"%s\"} %d\n", name, label, h.Count)
		}
	}
	histogram("ember_serve_batch_size", "Requests per session run.", func(m ModelStats) Histogram { return m.BatchSizes })
	histogram("ember_serve_request_duration_seconds", "Latency of admitted requests, queueing included.", func(m ModelStats) Histogram { return m.Latency })
	return bw.Flush()
}

// escapeLabel escapes a Prometheus label value.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emberml/ember/tensor"
)

// serveBenchConfig is what "ember serve-bench" was asked to do.
type serveBenchConfig struct {
	url            *url.URL // the predict endpoint
	statsURL       string   // the server's JSON stats, with rss_bytes
	body           []byte   // the .npy request body
	clients        int
	requests       int
	warmup         int
	duration       time.Duration // bound on the measured phase
	requestTimeout time.Duration
	// rate, when positive, paces the requests: at most rate per second
	// from all clients together (clients still wait for their answers).
	rate float64
}

// serveBenchResult is the measured phase's outcome.
type serveBenchResult struct {
	requests  int
	errors    int
	codes     map[int]int // status codes; 0 for transport errors
	elapsed   time.Duration
	latencies []time.Duration // of every finished request, errors included
	rssStart  int64           // -1 when the server does not report it
	rssEnd    int64
	rssPeak   int64
}

// runServeBench is "ember serve-bench": a bounded load generator for a
// server on the loopback address.
func runServeBench(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ember serve-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rawURL := fs.String("url", "", "predict endpoint on a loopback address (http://127.0.0.1:8080/predict)")
	input := fs.String("input", "", ".npy file sent as every request's body")
	clients := fs.Int("clients", 8, "concurrent clients (1 to 1024)")
	requests := fs.Int("requests", 1000, "requests to send after warm-up (1 to 10,000,000)")
	warmup := fs.Int("warmup", 0, "requests sent before measuring (default: one per client, at least 10)")
	duration := fs.Duration("duration", 10*time.Minute, "stop sending once this much time has passed")
	requestTimeout := fs.Duration("request-timeout", time.Minute, "limit on one request")
	stats := fs.String("stats", "/stats", "path of the server's JSON stats (with rss_bytes)")
	rate := fs.Float64("rate", 0, "requests per second from all clients together (0: as fast as the server answers)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ember serve-bench -url URL -input X.npy -clients N -requests M")
		fmt.Fprintln(stderr, "  POSTs X.npy (Content-Type application/x-npy) to a server on 127.0.0.0/8, ::1 or localhost,")
		fmt.Fprintln(stderr, "  from N clients (paced to -rate per second when given) until M requests are answered or -duration passes,")
		fmt.Fprintln(stderr, "  and ends with: requests=M errors=E throughput=R/s p50_ms=… p95_ms=… p99_ms=… rss_start_mb=… rss_end_mb=…")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg, err := newServeBenchConfig(*rawURL, *input, *stats, *clients, *requests, *warmup, *duration, *requestTimeout)
	if err == nil && (*rate < 0 || *rate > 1e6) {
		err = fmt.Errorf("-rate %g: want 0 to 1,000,000", *rate)
	}
	if err != nil {
		fmt.Fprintln(stderr, "ember serve-bench:", err)
		return 2
	}
	cfg.rate = *rate
	res, err := serveBench(context.Background(), cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "ember serve-bench:", err)
		return 1
	}
	printServeBench(stdout, res)
	if res.errors > 0 {
		return 1
	}
	return 0
}

// newServeBenchConfig checks the flags: the URL must name a loopback host,
// the counts must be in range and the input must be an .npy file.
func newServeBenchConfig(rawURL, input, statsPath string, clients, requests, warmup int, duration, requestTimeout time.Duration) (serveBenchConfig, error) {
	var cfg serveBenchConfig
	u, err := loopbackURL(rawURL)
	if err != nil {
		return cfg, err
	}
	if clients < 1 || clients > 1024 {
		return cfg, fmt.Errorf("-clients %d: want 1 to 1024", clients)
	}
	if requests < 1 || requests > 10_000_000 {
		return cfg, fmt.Errorf("-requests %d: want 1 to 10,000,000", requests)
	}
	if warmup <= 0 {
		warmup = max(clients, 10)
	}
	if duration <= 0 || requestTimeout <= 0 {
		return cfg, errors.New("-duration and -request-timeout must be positive")
	}
	if input == "" {
		return cfg, errors.New("-input X.npy is required")
	}
	body, err := os.ReadFile(input)
	if err != nil {
		return cfg, err
	}
	if _, err := tensor.ReadNpy(bytes.NewReader(body)); err != nil {
		return cfg, fmt.Errorf("-input %s: %w", input, err)
	}
	stats := *u
	stats.Path, stats.RawQuery = statsPath, ""
	return serveBenchConfig{url: u, statsURL: stats.String(), body: body, clients: clients, requests: requests,
		warmup: warmup, duration: duration, requestTimeout: requestTimeout}, nil
}

// loopbackURL parses raw and refuses anything but http(s) to a loopback
// address: 127.0.0.0/8, ::1 or localhost (no name is looked up).
func loopbackURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("-url is required")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("-url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("-url %q: scheme must be http or https", raw)
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return u, nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("-url %q: host %q is not a loopback address (127.0.0.0/8, ::1 or localhost); serve-bench only loads servers on this machine", raw, host)
	}
	return u, nil
}

// serveBench sends the warm-up requests one client at a time, reads the
// server's resident memory, sends cfg.requests requests from cfg.clients
// clients (stopping early once cfg.duration has passed), sampling the
// server's memory every 100 ms, and reads it again.
func serveBench(ctx context.Context, cfg serveBenchConfig, stderr io.Writer) (serveBenchResult, error) {
	transport := &http.Transport{MaxIdleConnsPerHost: cfg.clients, MaxConnsPerHost: cfg.clients + 2, Proxy: nil}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: cfg.requestTimeout}
	for i := range cfg.warmup {
		if _, code, err := post(ctx, client, cfg); err != nil || code != http.StatusOK {
			return serveBenchResult{}, fmt.Errorf("warm-up request %d: status %d, %v", i, code, err)
		}
	}
	res := serveBenchResult{codes: map[int]int{}, rssStart: serverRSS(ctx, client, cfg.statsURL)}
	res.rssPeak = res.rssStart
	ctx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	var next atomic.Int64
	var mu sync.Mutex
	samplerDone := make(chan struct{})
	stopSampler := make(chan struct{})
	go func() {
		defer close(samplerDone)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampler:
				return
			case <-tick.C:
				if rss := serverRSS(ctx, client, cfg.statsURL); rss >= 0 {
					mu.Lock()
					res.rssPeak = max(res.rssPeak, rss)
					mu.Unlock()
				}
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	for range cfg.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(cfg.requests) || ctx.Err() != nil {
					return
				}
				if cfg.rate > 0 { // request i is due at start + (i-1)/rate
					due := start.Add(time.Duration(float64(i-1) / cfg.rate * float64(time.Second)))
					select {
					case <-time.After(time.Until(due)):
					case <-ctx.Done():
						return
					}
				}
				d, code, err := post(ctx, client, cfg)
				if err != nil && ctx.Err() != nil {
					return // the run's time is up: not counted
				}
				mu.Lock()
				res.requests++
				res.latencies = append(res.latencies, d)
				res.codes[code]++
				if err != nil || code != http.StatusOK {
					res.errors++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	close(stopSampler)
	<-samplerDone
	res.rssEnd = serverRSS(context.Background(), client, cfg.statsURL)
	res.rssPeak = max(res.rssPeak, res.rssEnd)
	if res.requests < cfg.requests {
		fmt.Fprintf(stderr, "ember serve-bench: -duration %v reached after %d of %d requests\n", cfg.duration, res.requests, cfg.requests)
	}
	return res, nil
}

// post sends one request and returns its latency and status (0 for a
// transport error), reading the whole response.
func post(ctx context.Context, client *http.Client, cfg serveBenchConfig) (time.Duration, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.url.String(), bytes.NewReader(cfg.body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/x-npy")
	req.Header.Set("Accept", "application/x-npy")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return time.Since(start), 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return time.Since(start), resp.StatusCode, err
}

// serverRSS reads rss_bytes from the server's JSON stats, or -1.
func serverRSS(ctx context.Context, client *http.Client, statsURL string) int64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, statsURL, nil)
	if err != nil {
		return -1
	}
	resp, err := client.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var st struct {
		RSS *int64 `json:"rss_bytes"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st) != nil || st.RSS == nil {
		return -1
	}
	return *st.RSS
}

// printServeBench writes the status counts, the server's peak memory and
// the summary line (always last).
func printServeBench(w io.Writer, r serveBenchResult) {
	codes := make([]int, 0, len(r.codes))
	for c := range r.codes {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	for _, c := range codes {
		label := fmt.Sprint(c)
		if c == 0 {
			label = "transport error"
		}
		fmt.Fprintf(w, "status %s: %d\n", label, r.codes[c])
	}
	fmt.Fprintf(w, "server rss_peak_mb=%s (sampled every 100 ms)\n", mb(r.rssPeak))
	lat := slices.Clone(r.latencies)
	slices.Sort(lat)
	throughput := 0.0
	if r.elapsed > 0 {
		throughput = float64(r.requests) / r.elapsed.Seconds()
	}
	fmt.Fprintf(w, "requests=%d errors=%d throughput=%.1f/s p50_ms=%.2f p95_ms=%.2f p99_ms=%.2f rss_start_mb=%s rss_end_mb=%s\n",
		r.requests, r.errors, throughput, percentileMs(lat, 0.50), percentileMs(lat, 0.95), percentileMs(lat, 0.99), mb(r.rssStart), mb(r.rssEnd))
}

// percentileMs returns the q-quantile of sorted latencies in milliseconds
// (nearest rank), or 0 when there are none.
func percentileMs(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return float64(sorted[min(max(i, 0), len(sorted)-1)]) / float64(time.Millisecond)
}

// mb formats bytes as megabytes, or "n/a" for an unknown (negative) size.
func mb(b int64) string {
	if b < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", float64(b)/(1<<20))
}

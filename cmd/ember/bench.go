package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/emberml/ember/profiler"
	"github.com/emberml/ember/tensor"
)

// benchOptions are the flags of "ember bench".
type benchOptions struct {
	workload string // comma-separated names, prefixes ("resnet18") or "all"
	threads  int    // GOMAXPROCS for the run; 0 keeps the current value
	steps    int    // timed steps (gemm: samples per size); 0 means the workload's default
	warmup   int    // untimed steps before timing; 0 means the workload's default
	json     bool   // print one JSON object per line instead of text
	sizes    []int  // square GEMM sizes
	tiny     bool   // shrink batches and sizes (tests only: not comparable to PyTorch)
	cpuProf  string // write a CPU profile of the timed steps here
	dev      benchDevice
	tf32     bool   // let float32 matrix products on a GPU use TF32
	profile  bool   // print a per-op table (package profiler) of the timed steps
	trace    string // write the timed steps' ops as a Chrome trace here
}

// benchResult is one measured line of "ember bench". The first six fields
// are the keys every workload prints (and bench/torch_workloads.py prints the
// same); gemm adds its size and GFLOP/s.
type benchResult struct {
	Workload    string  `json:"workload"`
	Threads     int     `json:"threads"`
	Batch       int     `json:"batch"`
	MedianMS    float64 `json:"median_ms"`
	SamplesPerS float64 `json:"samples_per_s"`
	PeakRSSMB   float64 `json:"peak_rss_mb"`
	Steps       int     `json:"steps"`
	N           int     `json:"n,omitempty"`
	GFLOPS      float64 `json:"gflops,omitempty"`
	// The keys below appear only on a GPU (-device cuda): the device, the
	// peak of its allocated memory during the workload in MB, whether TF32
	// was allowed, and gemm's rate in TFLOP/s.
	Device    string   `json:"device,omitempty"`
	PeakGPUMB *float64 `json:"peak_gpu_mb,omitempty"`
	TF32      bool     `json:"tf32,omitempty"`
	TFLOPS    float64  `json:"tflops,omitempty"`
	// CPU is the CPU's model and ISA the instruction path the CPU kernels
	// took (tensor.HostCPU), so that a line names what it measured.
	CPU string `json:"cpu,omitempty"`
	ISA string `json:"isa,omitempty"`
	// trace holds the timed steps' ops with -profile or -trace.
	trace *profiler.Trace
}

// gpuSizes are the gemm sizes on a GPU when -sizes is not given.
const gpuSizes = "1024,2048,4096,8192"

func runBench(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ember bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o benchOptions
	var sizes, device string
	fs.StringVar(&o.workload, "workload", "all",
		"workloads to run, comma-separated: "+strings.Join(workloadNames(), ", ")+
			"; a prefix such as resnet18 selects all its batch sizes; all runs every CPU workload "+
			"(every one but resnet50_b64 and resnet50_train_b64), or with -device cuda the GPU set")
	fs.IntVar(&o.threads, "threads", 0, "threads to use (sets GOMAXPROCS and tensor.SetNumThreads); 0 keeps GOMAXPROCS")
	fs.IntVar(&o.steps, "steps", 0, "timed steps per workload (gemm: samples per size); 0 uses the workload's default")
	fs.IntVar(&o.warmup, "warmup", 0, "untimed warm-up steps; 0 uses the workload's default")
	fs.BoolVar(&o.json, "json", false, "print one JSON object per line: workload, threads, batch, median_ms, samples_per_s, peak_rss_mb "+
		"(on a GPU also device and peak_gpu_mb)")
	fs.StringVar(&o.cpuProf, "cpuprofile", "", "write a CPU profile (go tool pprof) of the run to this file")
	fs.StringVar(&sizes, "sizes", "256,512,1024,2048", "square matrix sizes of the gemm workload, comma-separated (on a GPU: "+gpuSizes+")")
	fs.StringVar(&device, "device", "cpu", "where to run: cpu, cuda (device 0) or cuda:N (needs a binary built with -tags cuda); "+
		"-workload all then runs "+strings.Join(defaultWorkloadNames(true), ", "))
	cpuInfo := fs.Bool("cpuinfo", false, "print the CPU model, its cache sizes and the kernels' instruction path (set by EMBER_CPU=avx512|avx2|generic) and exit")
	fs.BoolVar(&o.tf32, "tf32", false, "let float32 matrix products on the GPU use TF32 tensor cores (default: full FP32)")
	fs.BoolVar(&o.profile, "profile", false, "profile the timed steps op by op (package profiler) and print each workload's table, "+
		"sorted by self time (on stderr with -json); the times include the profiler's bookkeeping")
	fs.StringVar(&o.trace, "trace", "", "write the timed steps' ops as Chrome trace JSON (Perfetto, chrome://tracing) to this file; "+
		"with several workloads, each gets its own file, named FILE with .WORKLOAD before the extension")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ember bench [-workload all|NAME[,NAME...]] [-device cpu|cuda[:N]] [-threads N] [-steps N] [-warmup N] [-json]")
		fmt.Fprintln(stderr, "Runs training or inference steps on synthetic data with fixed seeds and prints the")
		fmt.Fprintln(stderr, "median ms/step, samples/s and the process's peak RSS (VmHWM, reset per workload);")
		fmt.Fprintln(stderr, "on a GPU also the peak of its allocated memory. Text output starts with a cpu: line")
		fmt.Fprintln(stderr, "(model, kernels' instruction path, caches); JSON lines carry cpu and isa keys.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ember bench: unexpected arguments %q\n", fs.Args())
		return 2
	}
	var err error
	if o.dev, err = parseBenchDevice(device); err != nil {
		fmt.Fprintf(stderr, "ember bench: -device: %v\n", err)
		return 2
	}
	if o.tf32 && !o.dev.gpu() {
		fmt.Fprintln(stderr, "ember bench: -tf32 needs -device cuda")
		return 2
	}
	if (o.profile || o.trace != "") && o.dev.gpu() {
		fmt.Fprintln(stderr, "ember bench: -profile and -trace time ops on the CPU's clock; on a GPU that is when kernels are queued, so they run on -device cpu only")
		return 2
	}
	if o.dev.gpu() && !flagSet(fs, "sizes") {
		sizes = gpuSizes
	}
	if o.sizes, err = parseSizes(sizes); err != nil {
		fmt.Fprintf(stderr, "ember bench: -sizes: %v\n", err)
		return 2
	}
	if o.threads < 0 || o.steps < 0 || o.warmup < 0 {
		fmt.Fprintln(stderr, "ember bench: -threads, -steps and -warmup must be non-negative")
		return 2
	}
	if o.threads > 0 {
		runtime.GOMAXPROCS(o.threads)
		tensor.SetNumThreads(o.threads)
	}
	o.threads = runtime.GOMAXPROCS(0)
	host := tensor.HostCPU()
	if *cpuInfo {
		fmt.Fprintln(stdout, host)
		return 0
	}

	specs, err := selectWorkloads(o.workload, o.dev.gpu())
	if err != nil {
		fmt.Fprintf(stderr, "ember bench: %v\n", err)
		return 2
	}
	if err := o.dev.open(o.tf32); err != nil {
		fmt.Fprintf(stderr, "ember bench: -device %s: %v\n", o.dev.dev, err)
		return 1
	}
	if o.cpuProf != "" {
		f, err := os.Create(o.cpuProf)
		if err != nil {
			fmt.Fprintf(stderr, "ember bench: -cpuprofile: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "ember bench: -cpuprofile: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if !o.json {
		fmt.Fprintf(stdout, "cpu: %s; GOMAXPROCS %d\n", host, o.threads)
	}
	status := 0
	for _, w := range specs {
		results, err := runWorkload(w, o)
		if err != nil {
			fmt.Fprintf(stderr, "ember bench: %s: %v\n", w.name, err)
			status = 1
			continue
		}
		for _, r := range results {
			r.CPU, r.ISA = host.Model, host.Path
			printResult(stdout, r, o.json)
			if err := reportProfile(stdout, stderr, r, o, len(specs) > 1); err != nil {
				fmt.Fprintf(stderr, "ember bench: %s: %v\n", w.name, err)
				status = 1
			}
		}
	}
	return status
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// selectWorkloads resolves the -workload value to workload definitions in
// the canonical order. "all" and prefixes ("resnet50") select among the
// device's default workloads (gpu: those a GPU runs by default); an exact
// name selects any workload on any device.
func selectWorkloads(sel string, gpu bool) ([]workload, error) {
	all := workloads()
	var ws []workload
	for _, w := range all {
		if (gpu && w.gpu) || (!gpu && !w.gpuOnly) {
			ws = append(ws, w)
		}
	}
	if sel == "all" {
		return ws, nil
	}
	var out []workload
	add := func(w workload) {
		if !slices.ContainsFunc(out, func(x workload) bool { return x.name == w.name }) {
			out = append(out, w)
		}
	}
	for name := range strings.SplitSeq(sel, ",") {
		name = strings.TrimSpace(name)
		if i := slices.IndexFunc(all, func(w workload) bool { return w.name == name }); i >= 0 {
			add(all[i])
			continue
		}
		// A prefix selects its members among the device's defaults, or
		// among all workloads if it has none there.
		var matched []workload
		for _, set := range [][]workload{ws, all} {
			for _, w := range set {
				if strings.HasPrefix(w.name, name+"_") {
					matched = append(matched, w)
				}
			}
			if len(matched) > 0 {
				break
			}
		}
		if len(matched) == 0 {
			return nil, fmt.Errorf("unknown workload %q (have %s)", name, strings.Join(workloadNames(), ", "))
		}
		for _, w := range matched {
			add(w)
		}
	}
	return out, nil
}

// workloadNames returns the name of every workload.
func workloadNames() []string {
	var names []string
	for _, w := range workloads() {
		names = append(names, w.name)
	}
	return names
}

// defaultWorkloadNames returns the names "-workload all" runs on the CPU
// (gpu false) or on a GPU.
func defaultWorkloadNames(gpu bool) []string {
	ws, err := selectWorkloads("all", gpu)
	if err != nil {
		panic(err) // "all" always resolves
	}
	var names []string
	for _, w := range ws {
		names = append(names, w.name)
	}
	return names
}

// runWorkload builds one workload, resets the peak-RSS mark (and on a GPU
// the peak of device memory), moves the model and data to the device, warms
// up and times its steps. On a GPU each timed step ends with a device
// synchronization, so its time covers the queued kernels.
func runWorkload(w workload, o benchOptions) ([]benchResult, error) {
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS()
	if w.name == "gemm" {
		return runGEMM(o)
	}
	base, err := o.dev.resetPeak()
	if err != nil {
		return nil, err
	}
	run, err := w.build(o.tiny)
	if err != nil {
		return nil, err
	}
	if err := o.dev.move(run); err != nil {
		return nil, err
	}
	step, batch := run.step, run.batch
	steps, warmup := w.steps, w.warmup
	if o.steps > 0 {
		steps = o.steps
	}
	if o.warmup > 0 {
		warmup = o.warmup
	}
	for range warmup {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := o.dev.sync(); err != nil {
		return nil, err
	}
	var prof *profiler.Profiler
	if o.profile || o.trace != "" {
		prof = profiler.New(profiler.Options{})
		run.watch = prof.Watch
	}
	times := make([]float64, 0, steps)
	for range steps {
		t0 := time.Now()
		if err := step(); err != nil {
			return nil, err
		}
		if err := o.dev.sync(); err != nil {
			return nil, err
		}
		times = append(times, time.Since(t0).Seconds())
		if prof != nil {
			prof.Step()
		}
	}
	med := median(times)
	r := benchResult{
		Workload:    w.name,
		Threads:     o.threads,
		Batch:       batch,
		MedianMS:    round3(med * 1e3),
		SamplesPerS: round3(float64(batch) / med),
		PeakRSSMB:   peakRSSMB(),
		Steps:       steps,
		TF32:        o.tf32,
	}
	if err := o.dev.annotate(&r, base); err != nil {
		return nil, err
	}
	if prof != nil {
		r.trace = prof.Trace()
	}
	return []benchResult{r}, nil
}

// reportProfile prints r's per-op table (with -profile; on stderr with
// -json, so that stdout stays JSON lines) and writes its Chrome trace
// (with -trace; named after the workload when several run).
func reportProfile(stdout, stderr io.Writer, r benchResult, o benchOptions, several bool) error {
	if r.trace == nil {
		return nil
	}
	if o.profile {
		w := stdout
		if o.json {
			w = stderr
		}
		fmt.Fprintf(w, "%s: ops of %d timed steps\n%s", r.Workload, r.Steps, r.trace.Table(profiler.SortBySelfTime, 25))
	}
	if o.trace == "" {
		return nil
	}
	name := o.trace
	if several {
		ext := filepath.Ext(name)
		name = strings.TrimSuffix(name, ext) + "." + r.Workload + ext
	}
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("-trace: %w", err)
	}
	if err := r.trace.WriteChromeTrace(f); err != nil {
		f.Close()
		return fmt.Errorf("-trace: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("-trace: %w", err)
	}
	return nil
}

func printResult(w io.Writer, r benchResult, asJSON bool) {
	if asJSON {
		b, err := json.Marshal(r)
		if err != nil {
			panic(fmt.Sprintf("ember bench: encoding result: %v", err)) // plain struct: cannot fail
		}
		fmt.Fprintln(w, string(b))
		return
	}
	gpu := ""
	if r.PeakGPUMB != nil {
		tf32 := ""
		if r.TF32 {
			tf32 = " (TF32)"
		}
		gpu = fmt.Sprintf("  %s%s peak %6.0f MB", r.Device, tf32, *r.PeakGPUMB)
	}
	if r.N > 0 {
		if r.TFLOPS > 0 {
			fmt.Fprintf(w, "%-14s threads=%d n=%-5d median %9.3f ms  %8.2f TFLOP/s  peak RSS %6.0f MB%s\n",
				r.Workload, r.Threads, r.N, r.MedianMS, r.TFLOPS, r.PeakRSSMB, gpu)
			return
		}
		fmt.Fprintf(w, "%-14s threads=%d n=%-5d median %9.3f ms  %8.1f GFLOP/s  peak RSS %6.0f MB%s\n",
			r.Workload, r.Threads, r.N, r.MedianMS, r.GFLOPS, r.PeakRSSMB, gpu)
		return
	}
	fmt.Fprintf(w, "%-14s threads=%d batch=%-3d median %9.2f ms/step  %10.1f samples/s  peak RSS %6.0f MB%s\n",
		r.Workload, r.Threads, r.Batch, r.MedianMS, r.SamplesPerS, r.PeakRSSMB, gpu)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func round3(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 3, 64), 64)
	return v
}

// resetPeakRSS resets the kernel's peak-RSS mark (VmHWM) of this process by
// writing 5 to /proc/self/clear_refs (Linux ≥ 4.0), so each workload of one
// run reports its own peak. Elsewhere it does nothing.
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSSMB returns the process's peak resident set size in MB (VmHWM from
// /proc/self/status), or -1 where that file does not exist.
func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	return parseVmHWM(string(b))
}

// parseVmHWM extracts VmHWM (in kB) from the text of /proc/self/status and
// returns it in MB, or -1 when the line is missing or malformed.
func parseVmHWM(status string) float64 {
	for line := range strings.SplitSeq(status, "\n") {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return -1
		}
		kb, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return -1
		}
		return round3(kb / 1024)
	}
	return -1
}

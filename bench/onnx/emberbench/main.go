// Command emberbench times an Ember ONNX session on one model and input,
// for bench/onnx/compare.sh.
//
//	emberbench -model MODEL.onnx -input INPUT.npy [-threads N] [-iters 30] [-ref OUT.npy] [-cpuprofile FILE]
//	emberbench -cpuinfo
//
// It prints one JSON line: median and min latency in ms over -iters runs
// (after 5 warm-up runs), peak RSS in MiB (VmHWM from /proc/self/status;
// 0 where that file does not exist) and, with -ref, the largest absolute
// difference from the reference output. -cpuinfo prints the CPU model, its
// caches and the kernels' instruction path (tensor.HostCPU; EMBER_CPU
// forces a lower path) and exits, for the script's header.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "emberbench:", err)
		os.Exit(1)
	}
}

// report is the JSON line emberbench prints.
type report struct {
	Engine      string   `json:"engine"`
	Threads     int      `json:"threads"`
	MedianMS    float64  `json:"median_ms"`
	MinMS       float64  `json:"min_ms"`
	PeakRSSMiB  float64  `json:"peak_rss_mib"`
	MaxAbsDiff  *float64 `json:"max_abs_diff,omitempty"`
	RunsTimed   int      `json:"runs"`
	NodesInPlan int      `json:"-"`
}

func run(args []string) error {
	fs := flag.NewFlagSet("emberbench", flag.ContinueOnError)
	modelPath := fs.String("model", "", "ONNX model (required)")
	inputPath := fs.String("input", "", ".npy input for the model's first input (required)")
	threads := fs.Int("threads", 1, "intra-op threads (tensor.SetNumThreads)")
	iters := fs.Int("iters", 30, "timed runs")
	refPath := fs.String("ref", "", "reference output .npy (optional)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed runs to this file")
	cpuInfo := fs.Bool("cpuinfo", false, "print the CPU model, caches and the kernels' instruction path, and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuInfo {
		fmt.Println(tensor.HostCPU())
		return nil
	}
	if *modelPath == "" || *inputPath == "" {
		return errors.New("-model and -input are required")
	}
	if *iters < 1 {
		return errors.New("-iters must be positive")
	}
	m, err := onnx.Load(*modelPath)
	if err != nil {
		return err
	}
	sess, err := m.NewSession(onnx.SessionOptions{IntraOpThreads: *threads})
	if err != nil {
		return err
	}
	x, err := tensor.LoadNpy(*inputPath)
	if err != nil {
		return err
	}
	feeds := map[string]*tensor.Tensor{m.Inputs[0].Name: x}
	ctx := context.Background()
	var out map[string]*tensor.Tensor
	for range 5 {
		if out, err = sess.Run(ctx, feeds); err != nil {
			return err
		}
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	times := make([]float64, *iters)
	for i := range times {
		t0 := time.Now()
		if out, err = sess.Run(ctx, feeds); err != nil {
			return err
		}
		times[i] = float64(time.Since(t0).Nanoseconds()) / 1e6
	}
	slices.Sort(times)
	r := report{
		Engine: "ember", Threads: tensor.NumThreads(), MedianMS: times[len(times)/2], MinMS: times[0],
		PeakRSSMiB: peakRSSMiB(), RunsTimed: len(times),
	}
	if *refPath != "" {
		want, err := tensor.LoadNpy(*refPath)
		if err != nil {
			return err
		}
		got := out[m.Outputs[0].Name].Float64s()
		d := 0.0
		for i, w := range want.Float64s() {
			d = math.Max(d, math.Abs(got[i]-w))
		}
		r.MaxAbsDiff = &d
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	return nil
}

// peakRSSMiB reads the process's peak resident set (VmHWM) from
// /proc/self/status; 0 when unavailable.
func peakRSSMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return 0
			}
			return kb / 1024
		}
	}
	return 0
}

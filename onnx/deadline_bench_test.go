package onnx

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/emberml/ember/tensor"
)

// BenchmarkRunDeadline measures how long after its context's deadline a
// cancelled Run returns, on the model named by EMBER_ONNX_DEADLINE_MODEL
// (e.g. a ResNet-50 from "ember onnx export -model resnet50 -input-shape
// 1,3,224,224 -o model.onnx"), fed ones of its declared input shape with
// symbolic axes set to EMBER_ONNX_DEADLINE_BATCH (default 1). Each iteration sets the deadline at a different
// point of the run; the metrics are the median, 90th percentile and
// worst overshoot.
func BenchmarkRunDeadline(b *testing.B) {
	path := os.Getenv("EMBER_ONNX_DEADLINE_MODEL")
	if path == "" {
		b.Skip("set EMBER_ONNX_DEADLINE_MODEL to an ONNX model file")
	}
	m, err := Load(path)
	if err != nil {
		b.Fatal(err)
	}
	s, err := m.NewSession(SessionOptions{})
	if err != nil {
		b.Fatal(err)
	}
	symbolic := 1
	if v := os.Getenv("EMBER_ONNX_DEADLINE_BATCH"); v != "" {
		if symbolic, err = strconv.Atoi(v); err != nil || symbolic < 1 {
			b.Fatalf("EMBER_ONNX_DEADLINE_BATCH=%q: want a positive integer", v)
		}
	}
	inputs := map[string]*tensor.Tensor{}
	for _, in := range m.Inputs {
		dt, err := in.DType()
		if err != nil {
			b.Fatal(err)
		}
		shape := make([]int, len(in.Shape))
		for i, d := range in.Shape {
			shape[i] = int(d.Value)
			if d.Value < 0 {
				shape[i] = symbolic
			}
		}
		inputs[in.Name] = tensor.Ones(shape, dt)
	}
	start := time.Now()
	if _, err := s.Run(context.Background(), inputs); err != nil {
		b.Fatal(err)
	}
	full := time.Since(start)
	b.Logf("one full run: %v", full)
	var lates []time.Duration
	b.ResetTimer()
	for i := range b.N {
		// Deadlines spread over the first half of a run: 5%, 10%, ...,
		// 50% of the first full run (runs that finish first, on a machine
		// gone faster, are not counted).
		after := full * time.Duration(5+5*(i%10)) / 100
		ctx, cancel := context.WithTimeout(context.Background(), after)
		deadline, _ := ctx.Deadline()
		_, err := s.Run(ctx, inputs)
		late := time.Since(deadline)
		cancel()
		switch {
		case err == nil:
			continue
		case !errors.Is(err, context.DeadlineExceeded):
			b.Fatalf("run with a deadline after %v: %v", after, err)
		}
		lates = append(lates, late)
	}
	if len(lates) > 0 {
		slices.Sort(lates)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(lates[len(lates)/2]), "ms-late-p50")
		b.ReportMetric(ms(lates[len(lates)*9/10]), "ms-late-p90")
		b.ReportMetric(ms(lates[len(lates)-1]), "ms-late-max")
	}
}

package onnx

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

// conformanceRoot is where Debian's libonnx-testdata installs the ONNX
// backend test cases.
const conformanceRoot = "/usr/share/libonnx-testdata/data"

// conformanceSuites are the suites the conformance test runs.
var conformanceSuites = []string{"node", "pytorch-converted", "pytorch-operator", "simple"}

// caseResult is the outcome of one conformance case.
type caseResult int

const (
	casePassed caseResult = iota
	caseFailed
	caseUnsupported // the model uses an operator Ember lacks
	caseSkipped     // element types or value kinds Ember tensors cannot hold
)

// opTally counts outcomes per operator type.
type opTally struct{ passed, failed, unsupported, skipped int }

// TestConformance runs the ONNX backend test data and checks the pass count
// against the committed floor.
func TestConformance(t *testing.T) {
	if _, err := os.Stat(conformanceRoot); err != nil {
		t.Skipf("ONNX test data not installed (%s missing): apt-get install libonnx-testdata", conformanceRoot)
	}
	var counts [4]int
	perOp := map[string]*opTally{}
	var failures, suiteLines []string
	for _, suite := range conformanceSuites {
		var sc [4]int
		dirs, err := os.ReadDir(filepath.Join(conformanceRoot, suite))
		if err != nil {
			continue
		}
		for _, d := range dirs {
			dir := filepath.Join(conformanceRoot, suite, d.Name())
			if _, err := os.Stat(filepath.Join(dir, "model.onnx")); err != nil {
				continue
			}
			res, ops, msg := runCase(dir)
			counts[res]++
			sc[res]++
			if res == caseFailed {
				failures = append(failures, suite+"/"+d.Name()+": "+msg)
			}
			for _, op := range ops {
				tl := perOp[op]
				if tl == nil {
					tl = &opTally{}
					perOp[op] = tl
				}
				switch res {
				case casePassed:
					tl.passed++
				case caseFailed:
					tl.failed++
				case caseUnsupported:
					tl.unsupported++
				default:
					tl.skipped++
				}
			}
		}
		suiteLines = append(suiteLines, fmt.Sprintf("  %-18s %4d passed, %3d failed, %3d unsupported ops, %3d unsupported types",
			suite, sc[casePassed], sc[caseFailed], sc[caseUnsupported], sc[caseSkipped]))
	}
	passed, failed := counts[casePassed], counts[caseFailed]
	skipped := counts[caseUnsupported] + counts[caseSkipped]
	t.Logf("onnx conformance: %d passed, %d failed, %d skipped (%d unsupported ops, %d unsupported types)",
		passed, failed, skipped, counts[caseUnsupported], counts[caseSkipped])
	fmt.Printf("onnx conformance: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
	t.Logf("per suite:\n%s", strings.Join(suiteLines, "\n"))
	if testing.Verbose() {
		ops := make([]string, 0, len(perOp))
		for op := range perOp {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		var b strings.Builder
		fmt.Fprintf(&b, "%-28s %6s %6s %11s %7s\n", "op", "passed", "failed", "unsupported", "skipped")
		for _, op := range ops {
			tl := perOp[op]
			fmt.Fprintf(&b, "%-28s %6d %6d %11d %7d\n", op, tl.passed, tl.failed, tl.unsupported, tl.skipped)
		}
		t.Logf("per-op results (a case counts for every op type in its model):\n%s", b.String())
		for _, f := range failures {
			t.Logf("FAIL %s", f)
		}
	}
	floorBytes, err := os.ReadFile(filepath.Join("testdata", "conformance_floor.txt"))
	require.NoError(t, err)
	floor, err := strconv.Atoi(strings.TrimSpace(string(floorBytes)))
	require.NoError(t, err)
	require.GreaterOrEqual(t, passed, floor, "conformance pass count fell below the committed floor")
}

// randomOutputs reports whether a model draws random numbers (Bernoulli
// and RandomUniformLike are all the test data has): its expected values
// are, in the test generator's words, informational, since implementations
// draw from different streams even with a seed.
func randomOutputs(ops []string) bool {
	for _, op := range ops {
		switch op {
		case "Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike":
			return true
		}
	}
	return false
}

// compareRandomTensors checks what a random draw must share with the
// expected one: dtype, shape, and values in the expected values' range
// widened to [0, 1] (Bernoulli draws are 0 or 1, uniforms in [0, 1)).
func compareRandomTensors(got, want *tensor.Tensor) string {
	if got == nil {
		return "missing"
	}
	if got.DType() != want.DType() || fmt.Sprint(got.Shape()) != fmt.Sprint(want.Shape()) {
		return fmt.Sprintf("%s %v, want %s %v", got.DType(), got.Shape(), want.DType(), want.Shape())
	}
	lo, hi := 0.0, 1.0
	for _, w := range want.Float64s() {
		lo, hi = min(lo, w), max(hi, w)
	}
	for i, g := range got.Float64s() {
		if !(g >= lo && g <= hi) {
			return fmt.Sprintf("element %d: %v outside [%v, %v]", i, g, lo, hi)
		}
	}
	return ""
}

// runCase runs every test_data_set of one case directory. It returns the
// outcome, the op types of the model and, for failures, a message.
func runCase(dir string) (res caseResult, ops []string, msg string) {
	defer func() {
		if r := recover(); r != nil {
			res, msg = caseFailed, fmt.Sprintf("panic outside Run: %v", r)
		}
	}()
	m, err := Load(filepath.Join(dir, "model.onnx"))
	if err != nil {
		var de *DTypeError
		if errors.As(err, &de) {
			return caseSkipped, nil, err.Error()
		}
		return caseFailed, nil, "load: " + err.Error()
	}
	for op := range m.OpCounts() {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	values := false // a sequence, optional or string tensor among the inputs and outputs
	for _, vi := range append(append([]ValueInfo(nil), m.Inputs...), m.Outputs...) {
		switch {
		case vi.Kind == "tensor" && vi.ElemType == "STRING":
			values = true // string tensors run through RunValues
			continue
		case vi.Kind == "tensor":
		case vi.Kind == "sequence", vi.Kind == "optional":
			values = true
			continue
		default:
			return caseSkipped, ops, vi.Name + " is a " + vi.Kind
		}
		if _, err := vi.DType(); err != nil {
			return caseSkipped, ops, err.Error()
		}
	}
	sess, err := m.NewSession(SessionOptions{})
	if err != nil {
		var ue *UnsupportedError
		if errors.As(err, &ue) {
			return caseUnsupported, ops, err.Error()
		}
		var de *DTypeError
		if errors.As(err, &de) {
			return caseSkipped, ops, err.Error()
		}
		return caseFailed, ops, "session: " + err.Error()
	}
	sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	if len(sets) == 0 {
		return caseSkipped, ops, "no test data sets"
	}
	for _, set := range sets {
		if values {
			if res, msg := runValuesCase(m, sess, set); res != casePassed {
				return res, ops, msg
			}
			continue
		}
		inputs := map[string]*tensor.Tensor{}
		for i, vi := range m.Inputs {
			t, err := readPB(filepath.Join(set, fmt.Sprintf("input_%d.pb", i)))
			if err != nil {
				if os.IsNotExist(err) {
					continue
				}
				return pbFailure(ops, err)
			}
			inputs[vi.Name] = bfloat16Bits(vi, t)
		}
		got, err := sess.Run(context.Background(), inputs)
		if err != nil {
			return caseFailed, ops, "run: " + firstLine(err.Error())
		}
		for i, vi := range m.Outputs {
			want, err := readPB(filepath.Join(set, fmt.Sprintf("output_%d.pb", i)))
			if err != nil {
				return pbFailure(ops, err)
			}
			compare := compareTensors
			if randomOutputs(ops) {
				compare = compareRandomTensors
			}
			if msg := compare(got[vi.Name], bfloat16Bits(vi, want)); msg != "" {
				return caseFailed, ops, fmt.Sprintf("output %q: %s", vi.Name, msg)
			}
		}
	}
	return casePassed, ops, ""
}

// runValuesCase runs one test data set of a model with sequence or
// optional inputs or outputs through RunValues.
func runValuesCase(m *Model, sess *Session, set string) (caseResult, string) {
	inputs := map[string]any{}
	for i, vi := range m.Inputs {
		v, err := readValuePB(filepath.Join(set, fmt.Sprintf("input_%d.pb", i)), vi)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			res, _, msg := pbFailure(nil, err)
			return res, msg
		}
		inputs[vi.Name] = v
	}
	got, err := sess.RunValues(context.Background(), inputs)
	if err != nil {
		return caseFailed, "run: " + firstLine(err.Error())
	}
	for i, vi := range m.Outputs {
		want, err := readValuePB(filepath.Join(set, fmt.Sprintf("output_%d.pb", i)), vi)
		if err != nil {
			res, _, msg := pbFailure(nil, err)
			return res, msg
		}
		if msg := compareValues(got[vi.Name], want); msg != "" {
			return caseFailed, fmt.Sprintf("output %q: %s", vi.Name, msg)
		}
	}
	return casePassed, ""
}

// compareValues compares a RunValues output with the expected value:
// tensors as compareTensors does, sequences element by element, optionals
// by presence and then by content.
func compareValues(got, want any) string {
	switch w := want.(type) {
	case *tensor.Tensor:
		g, ok := got.(*tensor.Tensor)
		if !ok {
			return fmt.Sprintf("got a %T, want a tensor", got)
		}
		return compareTensors(g, w)
	case Sequence:
		g, ok := got.(Sequence)
		if !ok {
			return fmt.Sprintf("got a %T, want a sequence", got)
		}
		if len(g) != len(w) {
			return fmt.Sprintf("sequence of %d elements, want %d", len(g), len(w))
		}
		for i := range w {
			if msg := compareTensors(g[i], w[i]); msg != "" {
				return fmt.Sprintf("element %d: %s", i, msg)
			}
		}
		return ""
	case Strings:
		g, ok := got.(Strings)
		if !ok {
			return fmt.Sprintf("got a %T, want a string tensor", got)
		}
		if fmt.Sprint(g.Shape) != fmt.Sprint(w.Shape) {
			return fmt.Sprintf("shape %v, want %v", g.Shape, w.Shape)
		}
		for i := range w.Data {
			if g.Data[i] != w.Data[i] {
				return fmt.Sprintf("element %d: %q, want %q", i, g.Data[i], w.Data[i])
			}
		}
		return ""
	case Optional:
		g, ok := got.(Optional)
		if !ok {
			return fmt.Sprintf("got a %T, want an optional", got)
		}
		if (g.Value == nil) != (w.Value == nil) {
			return fmt.Sprintf("optional holds %T, want %T", g.Value, w.Value)
		}
		if w.Value == nil {
			return ""
		}
		return compareValues(g.Value, w.Value)
	}
	return fmt.Sprintf("unexpected expected value %T", want)
}

// bfloat16Bits returns t as BFloat16 when the model declares vi BFLOAT16 but
// the test data stores it as UINT16 (the raw bits), as ONNX's older
// bfloat16 test data does.
func bfloat16Bits(vi ValueInfo, t *tensor.Tensor) *tensor.Tensor {
	if dt, err := vi.DType(); err == nil && dt == tensor.BFloat16 && t.DType() == tensor.Uint16 {
		return tensor.FromHalfBits(tensor.BFloat16, t.Uint16s(), t.Shape()...)
	}
	return t
}

// pbFailure classifies an error reading a test tensor: element types Ember
// cannot hold skip the case, anything else fails it.
func pbFailure(ops []string, err error) (caseResult, []string, string) {
	var de *DTypeError
	if errors.As(err, &de) {
		return caseSkipped, ops, err.Error()
	}
	return caseFailed, ops, err.Error()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func readPB(path string) (*tensor.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadTensor(f)
}

// compareTensors checks dtype, shape and values (rtol 1e-3, atol 1e-7;
// NaNs must match) and describes the first difference.
func compareTensors(got, want *tensor.Tensor) string {
	if got == nil {
		return "missing"
	}
	if got.DType() != want.DType() {
		return fmt.Sprintf("dtype %s, want %s", got.DType(), want.DType())
	}
	gs, ws := got.Shape(), want.Shape()
	if fmt.Sprint(gs) != fmt.Sprint(ws) {
		return fmt.Sprintf("shape %v, want %v", gs, ws)
	}
	g, w := got.Float64s(), want.Float64s()
	if want.DType().IsInt() {
		// Exact; Int64s keeps the bits of Uint64 values beyond int64.
		gi, wi := got.Int64s(), want.Int64s()
		for i := range wi {
			if gi[i] != wi[i] {
				if want.DType() == tensor.Uint64 {
					return fmt.Sprintf("element %d: %d, want %d", i, uint64(gi[i]), uint64(wi[i]))
				}
				return fmt.Sprintf("element %d: %d, want %d", i, gi[i], wi[i])
			}
		}
		return ""
	}
	for i := range w {
		if math.IsNaN(w[i]) != math.IsNaN(g[i]) {
			return fmt.Sprintf("element %d: %v, want %v", i, g[i], w[i])
		}
		if math.IsNaN(w[i]) || g[i] == w[i] {
			continue
		}
		if math.Abs(g[i]-w[i]) > 1e-7+1e-3*math.Abs(w[i]) {
			return fmt.Sprintf("element %d: %v, want %v", i, g[i], w[i])
		}
	}
	return ""
}

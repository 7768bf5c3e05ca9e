package golden

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// loadSelftest returns the selftest cases keyed by name.
func loadSelftest(t *testing.T) map[string]Case {
	t.Helper()
	cases := Load(t, "testdata/selftest.json")
	byName := make(map[string]Case, len(cases))
	for _, c := range cases {
		byName[c.Name] = c
	}
	for _, name := range []string{"add/broadcast", "log/special", "sum/int64_keepdim", "eq/int32", "scalar/float32"} {
		if _, ok := byName[name]; !ok {
			t.Fatalf("selftest.json lacks case %q", name)
		}
	}
	return byName
}

func TestSelftestAddBroadcast(t *testing.T) {
	c := loadSelftest(t)["add/broadcast"]
	a, b := c.Inputs[0], c.Inputs[1]
	if a.DType != Float32 || !slices.Equal(a.Shape, []int{2, 3}) || !slices.Equal(b.Shape, []int{3}) {
		t.Fatalf("unexpected inputs %v %v / %v %v", a.DType, a.Shape, b.DType, b.Shape)
	}
	rows, cols := a.Shape[0], a.Shape[1]
	af, bf := a.Float32s(), b.Float32s()
	got := make([]float64, rows*cols)
	for i := range rows {
		for j := range cols {
			got[i*cols+j] = float64(af[i*cols+j] + bf[j]) // float32 arithmetic, like torch
		}
	}
	// float32 add is correctly rounded, so the match is exact.
	AllClose(t, "out", c.Outputs[0], []int{rows, cols}, got, 0, 0)

	gout := c.GradOutputs[0].Data
	AllClose(t, "grad a", *c.Grads[0], a.Shape, gout, 0, 0)
	gb := make([]float64, cols)
	for j := range cols {
		var s float32
		for i := range rows {
			s += float32(gout[i*cols+j])
		}
		gb[j] = float64(s)
	}
	AllClose(t, "grad b", *c.Grads[1], b.Shape, gb, 1e-6, 1e-6)
}

func TestSelftestLogSpecial(t *testing.T) {
	c := loadSelftest(t)["log/special"]
	x := c.Inputs[0]
	if x.DType != Float64 {
		t.Fatalf("dtype %s", x.DType)
	}
	wantIn := []float64{-1, 0, 0.5, 1, math.Inf(1), math.NaN()}
	if !slices.EqualFunc(x.Data, wantIn, func(a, b float64) bool {
		return a == b || math.IsNaN(a) && math.IsNaN(b)
	}) {
		t.Fatalf("decoded input %v, want %v", x.Data, wantIn)
	}
	out := make([]float64, len(x.Data))
	grad := make([]float64, len(x.Data))
	gout := c.GradOutputs[0].Data
	for i, v := range x.Data {
		out[i] = math.Log(v)
		grad[i] = gout[i] / v
	}
	if !math.IsInf(c.Outputs[0].Data[1], -1) || !math.IsNaN(c.Outputs[0].Data[0]) {
		t.Errorf("log(0), log(-1) decoded as %v, %v", c.Outputs[0].Data[1], c.Outputs[0].Data[0])
	}
	AllClose(t, "out", c.Outputs[0], x.Shape, out, 1e-15, 0)
	AllClose(t, "grad", *c.Grads[0], x.Shape, grad, 1e-15, 0)
}

func TestSelftestIntegerAndBool(t *testing.T) {
	cases := loadSelftest(t)

	c := cases["sum/int64_keepdim"]
	if len(c.Grads) != 0 || len(c.GradOutputs) != 0 {
		t.Errorf("no-grad case has grads %v / %v", c.Grads, c.GradOutputs)
	}
	dim, keep := c.Int("dim"), c.Bool("keepdim")
	if dim != 1 || !keep {
		t.Fatalf("attrs dim=%d keepdim=%v", dim, keep)
	}
	in := c.Inputs[0]
	if in.DType != Int64 {
		t.Fatalf("dtype %s", in.DType)
	}
	v := in.Int64s()
	rows, cols := in.Shape[0], in.Shape[1]
	got := make([]float64, rows)
	for i := range rows {
		var s int64
		for j := range cols {
			s += v[i*cols+j]
		}
		got[i] = float64(s)
	}
	AllClose(t, "sum", c.Outputs[0], []int{rows, 1}, got, 0, 0)

	c = cases["eq/int32"]
	p, q := c.Inputs[0].Int32s(), c.Inputs[1].Int32s()
	if c.Outputs[0].DType != Bool {
		t.Fatalf("output dtype %s", c.Outputs[0].DType)
	}
	want := c.Outputs[0].Bools()
	for i := range p {
		if (p[i] == q[i]) != want[i] {
			t.Errorf("eq[%d]: %d==%d is %v in fixture", i, p[i], q[i], want[i])
		}
	}
}

func TestSelftestScalar(t *testing.T) {
	c := loadSelftest(t)["scalar/float32"]
	in := c.Inputs[0]
	if len(in.Shape) != 0 || in.Numel() != 1 {
		t.Fatalf("scalar shape %v numel %d", in.Shape, in.Numel())
	}
	if got := in.Float32s()[0]; got != float32(1.0)/3 {
		t.Errorf("float32 round trip: got %v", got)
	}
	AllClose(t, "scalar", c.Outputs[0], nil, []float64{float64(float32(1.0) / 3)}, 0, 0)
}

func TestAttrs(t *testing.T) {
	c := loadSelftest(t)["eq/int32"]
	if got := c.Ints("sizes"); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("Ints = %v", got)
	}
	if got := c.Float("alpha"); got != 0.5 {
		t.Errorf("Float = %v", got)
	}
	if got := c.Float("low"); !math.IsInf(got, -1) {
		t.Errorf("Float(-inf) = %v", got)
	}
	if got := c.String("mode"); got != "exact" {
		t.Errorf("String = %q", got)
	}
	if c.Bool("flag") {
		t.Error("Bool = true")
	}
	if !c.Has("mode") || c.Has("nope") {
		t.Error("Has is wrong")
	}
	mustPanic(t, "missing attr", func() { c.Int("nope") })
	mustPanic(t, "is float64", func() { c.Int("alpha") })
	mustPanic(t, "want string", func() { c.String("alpha") })
	mustPanic(t, "want bool", func() { c.Bool("mode") })
	mustPanic(t, "want number", func() { c.Float("mode") })
	mustPanic(t, "array of integers", func() { c.Ints("mode") })
}

func mustPanic(t *testing.T, substr string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("no panic, want one containing %q", substr)
			return
		}
		if msg := fmt.Sprint(r); !strings.Contains(msg, substr) {
			t.Errorf("panic %q does not contain %q", msg, substr)
		}
	}()
	f()
}

func TestParseErrors(t *testing.T) {
	tensor := func(body string) string {
		return `{"cases": [{"name": "x", "op": "id", "inputs": [` + body + `], "outputs": []}]}`
	}
	for _, tc := range []struct{ json, want string }{
		{tensor(`{"shape": [2], "dtype": "float32", "data": [1]}`), "needs 2 values"},
		{tensor(`{"shape": [1], "dtype": "float16", "data": [1]}`), "unknown dtype"},
		{tensor(`{"shape": [1], "dtype": "float32", "data": ["NaN"]}`), "unknown float string"},
		{tensor(`{"shape": [1], "dtype": "int64", "data": [1.5]}`), "want integer"},
		{tensor(`{"shape": [1], "dtype": "int64", "data": ["nan"]}`), "want integer"},
		{tensor(`{"shape": [1], "dtype": "int64", "data": [9007199254740993]}`), "not exactly representable"},
		{tensor(`{"shape": [1], "dtype": "int32", "data": [2147483648]}`), "out of range"},
		{tensor(`{"shape": [1], "dtype": "bool", "data": [2]}`), "not 0 or 1"},
		{tensor(`{"dtype": "float32", "data": [1]}`), "missing shape"},
		{tensor(`{"shape": [1], "dtype": "float32"}`), "missing data"},
		{tensor(`{"shape": [1], "dtype": "float32", "data": [1], "extra": 1}`), "unknown field"},
		{`{"cases": [{"name": "x", "op": "id", "inputs": [], "outputs": [], "typo": 1}]}`, "unknown field"},
		{`{"cases": [{"name": "", "op": "id"}]}`, "missing name"},
		{`{"cases": [{"name": "x", "op": "id"}, {"name": "x", "op": "id"}]}`, "duplicate name"},
		{`{"cases": [{"name": "x", "op": "id", "inputs": [{"shape": [], "dtype": "float32", "data": [1]}],
			"grads": [null]}]}`, "together"},
		{`{"cases": [{"name": "x", "op": "id", "inputs": [{"shape": [], "dtype": "float32", "data": [1]}],
			"outputs": [{"shape": [], "dtype": "float32", "data": [1]}],
			"grad_outputs": [{"shape": [], "dtype": "float32", "data": [1]}],
			"grads": [{"shape": [1], "dtype": "float32", "data": [1]}]}]}`, "differs from input shape"},
		{`{"cases": []} {}`, "trailing data"},
	} {
		_, err := Parse(strings.NewReader(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%s): error %v, want one containing %q", tc.json, err, tc.want)
		}
	}
}

// recorder captures Errorf calls; the embedded nil TB panics if any other
// method is used.
type recorder struct {
	testing.TB
	msgs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

func TestAllClose(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	want := Tensor{Shape: []int{2, 3}, DType: Float64, Data: []float64{1, nan, inf, -inf, 100, 0}}
	for _, tc := range []struct {
		name       string
		shape      []int
		got        []float64
		rtol, atol float64
		want       string // "" means must pass
	}{
		{"exact", []int{2, 3}, []float64{1, nan, inf, -inf, 100, 0}, 0, 0, ""},
		{"within rtol", []int{2, 3}, []float64{1, nan, inf, -inf, 100.5, 0}, 1e-2, 0, ""},
		{"within atol", []int{2, 3}, []float64{1, nan, inf, -inf, 100, 1e-7}, 0, 1e-6, ""},
		{"shape", []int{3, 2}, []float64{1, nan, inf, -inf, 100, 0}, 0, 0, "shape [3 2], want [2 3]"},
		{"length", []int{2, 3}, []float64{1}, 0, 0, "1 values, want 6"},
		{"nan vs number", []int{2, 3}, []float64{1, 0, inf, -inf, 100, 0}, 0, 0, "[1][0 1]: got 0, want NaN"},
		{"number vs nan", []int{2, 3}, []float64{nan, nan, inf, -inf, 100, 0}, 1, 1, "[0][0 0]: got NaN, want 1"},
		{"inf sign", []int{2, 3}, []float64{1, nan, -inf, -inf, 100, 0}, 1, 1, "[2][0 2]: got -Inf, want +Inf"},
		{"finite vs inf", []int{2, 3}, []float64{1, nan, 1e308, -inf, 100, 0}, 1, 1, "got 1e+308, want +Inf"},
		{"count", []int{2, 3}, []float64{2, nan, inf, -inf, 101, 1}, 0, 0, "3 of 6 values differ"},
	} {
		r := &recorder{}
		ok := AllClose(r, "out", want, tc.shape, tc.got, tc.rtol, tc.atol)
		switch {
		case tc.want == "" && (!ok || len(r.msgs) != 0):
			t.Errorf("%s: unexpected failure %v", tc.name, r.msgs)
		case tc.want != "" && (ok || len(r.msgs) != 1):
			t.Errorf("%s: got ok=%v msgs=%v, want one failure", tc.name, ok, r.msgs)
		case tc.want != "" && !strings.Contains(r.msgs[0], tc.want):
			t.Errorf("%s: message %q does not contain %q", tc.name, r.msgs[0], tc.want)
		}
	}

	// Only the first few mismatches are listed.
	many := Tensor{Shape: []int{20}, DType: Float32, Data: make([]float64, 20)}
	r := &recorder{}
	AllClose(r, "many", many, []int{20}, slices.Repeat([]float64{1}, 20), 0, 0)
	if len(r.msgs) != 1 || strings.Count(r.msgs[0], "got 1") != maxReported || !strings.Contains(r.msgs[0], "20 of 20") {
		t.Errorf("long report: %v", r.msgs)
	}
}

package nn

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Activation modules wrapping the functional forms in package autograd, with
// PyTorch's parameter names and defaults (the New* constructors document
// them). Modules without settings are ready to use as zero values; String
// prints each module as PyTorch does.

// pyFloat formats f as Python's repr of a float ("1.0", "0.01", "1e-05").
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	if a := math.Abs(f); a != 0 && (a < 1e-4 || a >= 1e16) {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// ReLU6 applies min(max(x, 0), 6), as torch.nn.ReLU6. The zero value is
// ready to use.
type ReLU6 struct{ Base }

// NewReLU6 returns a ReLU6 module.
func NewReLU6() *ReLU6 { return &ReLU6{} }

// Forward applies the activation.
func (*ReLU6) Forward(x *autograd.Var) *autograd.Var { return autograd.ReLU6(x) }

// String returns "ReLU6()".
func (*ReLU6) String() string { return "ReLU6()" }

// LeakyReLU applies x for x > 0 and NegativeSlope*x elsewhere, as
// torch.nn.LeakyReLU.
type LeakyReLU struct {
	Base
	NegativeSlope float64
}

// NewLeakyReLU returns a LeakyReLU module; PyTorch's default slope is 0.01.
func NewLeakyReLU(negativeSlope float64) *LeakyReLU {
	return &LeakyReLU{NegativeSlope: negativeSlope}
}

// Forward applies the activation.
func (m *LeakyReLU) Forward(x *autograd.Var) *autograd.Var {
	return autograd.LeakyReLU(x, m.NegativeSlope)
}

// String describes the module as PyTorch prints it.
func (m *LeakyReLU) String() string {
	return "LeakyReLU(negative_slope=" + pyFloat(m.NegativeSlope) + ")"
}

// PReLU applies x for x > 0 and a*x elsewhere with a learnable slope a, as
// torch.nn.PReLU: the parameter "weight" of shape [NumParameters] holds one
// slope shared by every element (NumParameters 1) or one per channel (axis 1
// of the input).
type PReLU struct {
	Base
	NumParameters int
	Weight        *autograd.Var
}

// NewPReLU returns a PReLU module with numParameters slopes (1, or the
// number of input channels), each initialized to init; PyTorch's defaults
// are 1 and 0.25. The weight is Float32 unless a dtype is given.
func NewPReLU(numParameters int, init float64, dt ...tensor.DType) *PReLU {
	if numParameters < 1 {
		panic(fmt.Sprintf("nn.NewPReLU: num_parameters must be at least 1, got %d", numParameters))
	}
	m := &PReLU{NumParameters: numParameters}
	m.Weight = m.RegisterParameter("weight", autograd.Param(tensor.Full([]int{numParameters}, init, pickDType(dt))))
	return m
}

// Forward applies the activation.
func (m *PReLU) Forward(x *autograd.Var) *autograd.Var { return autograd.PReLU(x, m.Weight) }

// String describes the module as PyTorch prints it.
func (m *PReLU) String() string { return fmt.Sprintf("PReLU(num_parameters=%d)", m.NumParameters) }

// ELU applies x for x > 0 and Alpha*(exp(x) - 1) elsewhere, as torch.nn.ELU.
type ELU struct {
	Base
	Alpha float64
}

// NewELU returns an ELU module; PyTorch's default alpha is 1.
func NewELU(alpha float64) *ELU { return &ELU{Alpha: alpha} }

// Forward applies the activation.
func (m *ELU) Forward(x *autograd.Var) *autograd.Var { return autograd.ELU(x, m.Alpha) }

// String describes the module as PyTorch prints it.
func (m *ELU) String() string { return "ELU(alpha=" + pyFloat(m.Alpha) + ")" }

// SELU applies the scaled ELU with PyTorch's fixed constants, as
// torch.nn.SELU. The zero value is ready to use.
type SELU struct{ Base }

// NewSELU returns a SELU module.
func NewSELU() *SELU { return &SELU{} }

// Forward applies the activation.
func (*SELU) Forward(x *autograd.Var) *autograd.Var { return autograd.SELU(x) }

// String returns "SELU()".
func (*SELU) String() string { return "SELU()" }

// CELU applies x for x > 0 and Alpha*(exp(x/Alpha) - 1) elsewhere, as
// torch.nn.CELU. Alpha must not be zero.
type CELU struct {
	Base
	Alpha float64
}

// NewCELU returns a CELU module; PyTorch's default alpha is 1.
func NewCELU(alpha float64) *CELU { return &CELU{Alpha: alpha} }

// Forward applies the activation.
func (m *CELU) Forward(x *autograd.Var) *autograd.Var { return autograd.CELU(x, m.Alpha) }

// String describes the module as PyTorch prints it.
func (m *CELU) String() string { return "CELU(alpha=" + pyFloat(m.Alpha) + ")" }

// GELU applies the Gaussian error linear unit, as torch.nn.GELU:
// Approximate is "none" (exact, with erf; the zero value "" means the same)
// or "tanh".
type GELU struct {
	Base
	Approximate string
}

// NewGELU returns a GELU module; approximate is "none" (PyTorch's default)
// or "tanh", and anything else panics.
func NewGELU(approximate string) *GELU {
	if approximate != "none" && approximate != "tanh" {
		panic(fmt.Sprintf("nn.NewGELU: approximate must be \"none\" or \"tanh\", got %q", approximate))
	}
	return &GELU{Approximate: approximate}
}

func (m *GELU) approximate() string {
	if m.Approximate == "" {
		return "none"
	}
	return m.Approximate
}

// Forward applies the activation.
func (m *GELU) Forward(x *autograd.Var) *autograd.Var { return autograd.GELU(x, m.approximate()) }

// String describes the module as PyTorch prints it.
func (m *GELU) String() string { return "GELU(approximate='" + m.approximate() + "')" }

// SiLU applies x*sigmoid(x), as torch.nn.SiLU. The zero value is ready to
// use.
type SiLU struct{ Base }

// NewSiLU returns a SiLU module.
func NewSiLU() *SiLU { return &SiLU{} }

// Forward applies the activation.
func (*SiLU) Forward(x *autograd.Var) *autograd.Var { return autograd.SiLU(x) }

// String returns "SiLU()".
func (*SiLU) String() string { return "SiLU()" }

// Mish applies x*tanh(softplus(x)), as torch.nn.Mish. The zero value is
// ready to use.
type Mish struct{ Base }

// NewMish returns a Mish module.
func NewMish() *Mish { return &Mish{} }

// Forward applies the activation.
func (*Mish) Forward(x *autograd.Var) *autograd.Var { return autograd.Mish(x) }

// String returns "Mish()".
func (*Mish) String() string { return "Mish()" }

// HardSigmoid applies min(max(x+3, 0), 6)/6, as torch.nn.Hardsigmoid. The
// zero value is ready to use.
type HardSigmoid struct{ Base }

// NewHardSigmoid returns a HardSigmoid module.
func NewHardSigmoid() *HardSigmoid { return &HardSigmoid{} }

// Forward applies the activation.
func (*HardSigmoid) Forward(x *autograd.Var) *autograd.Var { return autograd.HardSigmoid(x) }

// String returns "Hardsigmoid()", PyTorch's spelling.
func (*HardSigmoid) String() string { return "Hardsigmoid()" }

// HardSwish applies x*min(max(x+3, 0), 6)/6, as torch.nn.Hardswish. The
// zero value is ready to use.
type HardSwish struct{ Base }

// NewHardSwish returns a HardSwish module.
func NewHardSwish() *HardSwish { return &HardSwish{} }

// Forward applies the activation.
func (*HardSwish) Forward(x *autograd.Var) *autograd.Var { return autograd.HardSwish(x) }

// String returns "Hardswish()", PyTorch's spelling.
func (*HardSwish) String() string { return "Hardswish()" }

// HardTanh clamps its input to [MinVal, MaxVal], as torch.nn.Hardtanh.
type HardTanh struct {
	Base
	MinVal, MaxVal float64
}

// NewHardTanh returns a HardTanh module; PyTorch's defaults are -1 and 1.
// minVal must not exceed maxVal.
func NewHardTanh(minVal, maxVal float64) *HardTanh {
	if minVal > maxVal {
		panic(fmt.Sprintf("nn.NewHardTanh: min_val %g must not exceed max_val %g", minVal, maxVal))
	}
	return &HardTanh{MinVal: minVal, MaxVal: maxVal}
}

// Forward applies the activation.
func (m *HardTanh) Forward(x *autograd.Var) *autograd.Var {
	return autograd.HardTanh(x, m.MinVal, m.MaxVal)
}

// String describes the module as PyTorch prints it.
func (m *HardTanh) String() string {
	return "Hardtanh(min_val=" + pyFloat(m.MinVal) + ", max_val=" + pyFloat(m.MaxVal) + ")"
}

// Softplus applies log(1 + exp(Beta*x))/Beta, and x itself where
// Beta*x > Threshold, as torch.nn.Softplus.
type Softplus struct {
	Base
	Beta, Threshold float64
}

// NewSoftplus returns a Softplus module; PyTorch's defaults are beta 1 and
// threshold 20. beta must not be zero.
func NewSoftplus(beta, threshold float64) *Softplus {
	if beta == 0 {
		panic("nn.NewSoftplus: beta must not be zero")
	}
	return &Softplus{Beta: beta, Threshold: threshold}
}

// Forward applies the activation.
func (m *Softplus) Forward(x *autograd.Var) *autograd.Var {
	return autograd.Softplus(x, m.Beta, m.Threshold)
}

// String describes the module as PyTorch prints it with its default
// (integer) arguments: "Softplus(beta=1, threshold=20)".
func (m *Softplus) String() string {
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	return "Softplus(beta=" + g(m.Beta) + ", threshold=" + g(m.Threshold) + ")"
}

// Softsign applies x/(1 + |x|), as torch.nn.Softsign. The zero value is
// ready to use.
type Softsign struct{ Base }

// NewSoftsign returns a Softsign module.
func NewSoftsign() *Softsign { return &Softsign{} }

// Forward applies the activation.
func (*Softsign) Forward(x *autograd.Var) *autograd.Var { return autograd.Softsign(x) }

// String returns "Softsign()".
func (*Softsign) String() string { return "Softsign()" }

// Softmin normalizes exp(-x) along Axis, as torch.nn.Softmin(dim).
type Softmin struct {
	Base
	Axis int
}

// NewSoftmin returns a softmin module over axis.
func NewSoftmin(axis int) *Softmin { return &Softmin{Axis: axis} }

// Forward applies the softmin.
func (m *Softmin) Forward(x *autograd.Var) *autograd.Var { return autograd.Softmin(x, m.Axis) }

// String describes the module as PyTorch prints it.
func (m *Softmin) String() string { return fmt.Sprintf("Softmin(dim=%d)", m.Axis) }

// Threshold keeps x where x > Threshold and replaces it with Value
// elsewhere, as torch.nn.Threshold.
type Threshold struct {
	Base
	Threshold, Value float64
}

// NewThreshold returns a Threshold module (PyTorch has no defaults).
func NewThreshold(threshold, value float64) *Threshold {
	return &Threshold{Threshold: threshold, Value: value}
}

// Forward applies the activation.
func (m *Threshold) Forward(x *autograd.Var) *autograd.Var {
	return autograd.Threshold(x, m.Threshold, m.Value)
}

// String describes the module as PyTorch prints it.
func (m *Threshold) String() string {
	return "Threshold(threshold=" + pyFloat(m.Threshold) + ", value=" + pyFloat(m.Value) + ")"
}

// LogSigmoid applies log(sigmoid(x)) stably, as torch.nn.LogSigmoid. The
// zero value is ready to use.
type LogSigmoid struct{ Base }

// NewLogSigmoid returns a LogSigmoid module.
func NewLogSigmoid() *LogSigmoid { return &LogSigmoid{} }

// Forward applies the activation.
func (*LogSigmoid) Forward(x *autograd.Var) *autograd.Var { return autograd.LogSigmoid(x) }

// String returns "LogSigmoid()".
func (*LogSigmoid) String() string { return "LogSigmoid()" }

// GLU splits its input in halves a, b along Axis and returns a*sigmoid(b),
// as torch.nn.GLU(dim).
type GLU struct {
	Base
	Axis int
}

// NewGLU returns a GLU module over axis; PyTorch's default is -1.
func NewGLU(axis int) *GLU { return &GLU{Axis: axis} }

// Forward applies the gated linear unit.
func (m *GLU) Forward(x *autograd.Var) *autograd.Var { return autograd.GLU(x, m.Axis) }

// String describes the module as PyTorch prints it.
func (m *GLU) String() string { return fmt.Sprintf("GLU(dim=%d)", m.Axis) }

// Tanhshrink applies x - tanh(x), as torch.nn.Tanhshrink. The zero value is
// ready to use.
type Tanhshrink struct{ Base }

// NewTanhshrink returns a Tanhshrink module.
func NewTanhshrink() *Tanhshrink { return &Tanhshrink{} }

// Forward applies the activation.
func (*Tanhshrink) Forward(x *autograd.Var) *autograd.Var { return autograd.Tanhshrink(x) }

// String returns "Tanhshrink()".
func (*Tanhshrink) String() string { return "Tanhshrink()" }

// Softshrink shrinks x towards zero by Lambda (zero inside [-Lambda,
// Lambda]), as torch.nn.Softshrink.
type Softshrink struct {
	Base
	Lambda float64
}

// NewSoftshrink returns a Softshrink module; PyTorch's default lambda is
// 0.5. lambda must not be negative.
func NewSoftshrink(lambda float64) *Softshrink {
	if lambda < 0 {
		panic(fmt.Sprintf("nn.NewSoftshrink: lambda must be non-negative, got %g", lambda))
	}
	return &Softshrink{Lambda: lambda}
}

// Forward applies the activation.
func (m *Softshrink) Forward(x *autograd.Var) *autograd.Var {
	return autograd.Softshrink(x, m.Lambda)
}

// String describes the module as PyTorch prints it.
func (m *Softshrink) String() string { return "Softshrink(" + pyFloat(m.Lambda) + ")" }

// Hardshrink zeroes x inside [-Lambda, Lambda] and keeps it elsewhere, as
// torch.nn.Hardshrink.
type Hardshrink struct {
	Base
	Lambda float64
}

// NewHardshrink returns a Hardshrink module; PyTorch's default lambda is
// 0.5.
func NewHardshrink(lambda float64) *Hardshrink { return &Hardshrink{Lambda: lambda} }

// Forward applies the activation.
func (m *Hardshrink) Forward(x *autograd.Var) *autograd.Var {
	return autograd.Hardshrink(x, m.Lambda)
}

// String describes the module as PyTorch prints it.
func (m *Hardshrink) String() string { return "Hardshrink(" + pyFloat(m.Lambda) + ")" }

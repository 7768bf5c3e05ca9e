package nn

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// Weight initializers, after torch.nn.init. Each fills t in place (through
// its view) and returns it. Random ones draw from the given generator, so a
// seed fixes the result; the values differ from PyTorch's, whose random
// stream is its own, but the distributions are the same.

// FanMode selects which fan KaimingUniform and KaimingNormal preserve.
type FanMode int

const (
	// FanIn preserves the variance of activations in the forward pass
	// (PyTorch's default).
	FanIn FanMode = iota
	// FanOut preserves the variance of gradients in the backward pass.
	FanOut
)

// FanInOut returns the fan-in and fan-out of a weight of the given shape:
// shape[1] and shape[0] times the receptive field (the product of the
// remaining dimensions), as torch.nn.init computes them. It panics for
// shapes with fewer than two dimensions.
func FanInOut(shape []int) (fanIn, fanOut int) {
	if len(shape) < 2 {
		panic(fmt.Sprintf("nn.FanInOut: fan in and fan out need at least 2 dimensions, got shape %v", shape))
	}
	rf := 1
	for _, d := range shape[2:] {
		rf *= d
	}
	return shape[1] * rf, shape[0] * rf
}

// CalculateGain returns the recommended gain for a nonlinearity, as
// torch.nn.init.calculate_gain: 1 for "linear", "conv1d", "conv2d",
// "conv3d", "conv_transpose1d"..."conv_transpose3d" and "sigmoid"; 5/3 for
// "tanh"; sqrt(2) for "relu"; sqrt(2/(1+slope²)) for "leaky_relu" (slope
// param, default 0.01); 3/4 for "selu". Unknown names panic.
func CalculateGain(nonlinearity string, param ...float64) float64 {
	switch nonlinearity {
	case "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "sigmoid":
		return 1
	case "tanh":
		return 5.0 / 3
	case "relu":
		return math.Sqrt2
	case "leaky_relu":
		slope := 0.01
		if len(param) > 0 {
			slope = param[0]
		}
		return math.Sqrt(2 / (1 + slope*slope))
	case "selu":
		return 3.0 / 4
	}
	panic(fmt.Sprintf("nn.CalculateGain: unsupported nonlinearity %q", nonlinearity))
}

// Uniform fills t with values drawn uniformly from [lo, hi).
func Uniform(g *tensor.Generator, t *tensor.Tensor, lo, hi float64) *tensor.Tensor {
	checkGen("Uniform", g)
	return t.CopyFrom(g.Uniform(t.Shape(), lo, hi, tensor.Float64))
}

// Normal fills t with values drawn from N(mean, std²).
func Normal(g *tensor.Generator, t *tensor.Tensor, mean, std float64) *tensor.Tensor {
	checkGen("Normal", g)
	return t.CopyFrom(g.Normal(t.Shape(), mean, std, tensor.Float64))
}

// Constant fills t with v.
func Constant(t *tensor.Tensor, v float64) *tensor.Tensor { return t.Fill(v) }

// Zeros fills t with zeros.
func Zeros(t *tensor.Tensor) *tensor.Tensor { return t.Fill(0) }

// Ones fills t with ones.
func Ones(t *tensor.Tensor) *tensor.Tensor { return t.Fill(1) }

// XavierUniform fills t with U(-a, a), a = gain·sqrt(6/(fan_in+fan_out))
// (Glorot initialization).
func XavierUniform(g *tensor.Generator, t *tensor.Tensor, gain float64) *tensor.Tensor {
	fanIn, fanOut := FanInOut(t.Shape())
	a := gain * math.Sqrt(6/float64(fanIn+fanOut))
	return Uniform(g, t, -a, a)
}

// XavierNormal fills t with N(0, std²), std = gain·sqrt(2/(fan_in+fan_out)).
func XavierNormal(g *tensor.Generator, t *tensor.Tensor, gain float64) *tensor.Tensor {
	fanIn, fanOut := FanInOut(t.Shape())
	return Normal(g, t, 0, gain*math.Sqrt(2/float64(fanIn+fanOut)))
}

// kaimingStd returns gain/sqrt(fan) for the Kaiming initializers, or -1
// when the fan is zero (PyTorch then leaves the tensor untouched).
func kaimingStd(t *tensor.Tensor, a float64, mode FanMode, nonlinearity string) float64 {
	fanIn, fanOut := FanInOut(t.Shape())
	fan := fanIn
	if mode == FanOut {
		fan = fanOut
	}
	if fan == 0 {
		return -1
	}
	return CalculateGain(nonlinearity, a) / math.Sqrt(float64(fan))
}

// KaimingUniform fills t with U(-b, b), b = gain·sqrt(3/fan) (He
// initialization), where gain = CalculateGain(nonlinearity, a) and fan is
// picked by mode. With a = sqrt(5), FanIn and "leaky_relu" this is the
// default weight initialization of PyTorch's Linear and Conv layers:
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)). A zero-element t is left unchanged.
func KaimingUniform(g *tensor.Generator, t *tensor.Tensor, a float64, mode FanMode, nonlinearity string) *tensor.Tensor {
	std := kaimingStd(t, a, mode, nonlinearity)
	if std < 0 {
		return t
	}
	b := math.Sqrt(3) * std
	return Uniform(g, t, -b, b)
}

// KaimingNormal fills t with N(0, std²), std = gain/sqrt(fan).
func KaimingNormal(g *tensor.Generator, t *tensor.Tensor, a float64, mode FanMode, nonlinearity string) *tensor.Tensor {
	std := kaimingStd(t, a, mode, nonlinearity)
	if std < 0 {
		return t
	}
	return Normal(g, t, 0, std)
}

// checkGen panics with a clear message when no generator was given.
func checkGen(op string, g *tensor.Generator) {
	if g == nil {
		panic("nn." + op + ": nil *tensor.Generator; pass a seeded one (tensor.NewGenerator(seed))")
	}
}

// defaultParam allocates a parameter tensor of the given shape and dtype
// and fills it with U(-1/sqrt(fanIn), 1/sqrt(fanIn)) (zero bound when
// fanIn is 0), PyTorch's default for Linear and Conv weights and biases.
func defaultParam(g *tensor.Generator, op string, shape []int, fanIn int, dt tensor.DType) *tensor.Tensor {
	checkGen(op, g)
	if !dt.IsFloat() {
		panic(fmt.Sprintf("nn.%s: parameters need a floating-point dtype, got %s", op, dt))
	}
	t := tensor.Zeros(shape, dt)
	bound := 0.0
	if fanIn > 0 {
		bound = 1 / math.Sqrt(float64(fanIn))
	}
	return Uniform(g, t, -bound, bound)
}

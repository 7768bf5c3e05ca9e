package nn

import (
	"fmt"
	"math"
	"strings"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Normalization layers: BatchNorm1d/2d/3d, InstanceNorm1d/2d, LayerNorm,
// GroupNorm, RMSNorm and LocalResponseNorm, with PyTorch's parameter and
// buffer names ("weight", "bias", "running_mean", "running_var",
// "num_batches_tracked") and initial values (weight 1, bias 0, running mean
// 0, running variance 1).

// defaultEps is PyTorch's default epsilon of the normalization layers.
const defaultEps = 1e-5

// defaultMomentum is PyTorch's default running-statistics momentum.
const defaultMomentum = 0.1

func orDefault(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// BatchNormOptions configures NewBatchNorm1d/2d/3d. The zero value is
// PyTorch's default: eps 1e-5, momentum 0.1, learnable affine weight and
// bias, running statistics tracked.
type BatchNormOptions struct {
	// Eps is added to the variance; 0 means 1e-5.
	Eps float64
	// Momentum weighs the new batch statistics in the running ones; 0
	// means 0.1.
	Momentum float64
	// CumulativeAverage replaces the momentum by 1/num_batches_tracked,
	// a plain average over all batches seen (PyTorch's momentum=None).
	CumulativeAverage bool
	// NoAffine leaves out the learnable weight and bias (affine=False).
	NoAffine bool
	// NoTrackRunningStats keeps no running statistics; the module then
	// normalizes with batch statistics in evaluation mode too
	// (track_running_stats=False).
	NoTrackRunningStats bool
}

// BatchNorm normalizes each channel of its input with the batch mean and
// biased variance in training mode, updating running statistics, and with
// the running statistics in evaluation mode, as torch.nn.BatchNorm1d/2d/3d.
// Weight and Bias ([C]) are nil without affine; the running buffers are nil
// without tracking.
type BatchNorm struct {
	Base
	NumFeatures                                int
	Eps, Momentum                              float64
	CumulativeAverage                          bool
	Weight, Bias                               *autograd.Var
	RunningMean, RunningVar, NumBatchesTracked *tensor.Tensor
	spatialDims                                []int // accepted numbers of axes after C
	name                                       string
}

// newNormAffine registers "weight" (ones) and "bias" (zeros) of shape.
func newNormAffine(b *Base, shape []int, dt tensor.DType) (w, bias *autograd.Var) {
	if !dt.IsFloat() {
		panic(fmt.Sprintf("nn: normalization parameters need a floating-point dtype, got %s", dt))
	}
	w = b.RegisterParameter("weight", autograd.Param(tensor.Ones(shape, dt)))
	bias = b.RegisterParameter("bias", autograd.Param(tensor.Zeros(shape, dt)))
	return w, bias
}

func newBatchNorm(name string, spatial []int, c int, opt BatchNormOptions, dt []tensor.DType) *BatchNorm {
	if c <= 0 {
		panic(fmt.Sprintf("nn.New%s: num_features must be positive, got %d", name, c))
	}
	d := pickDType(dt)
	m := &BatchNorm{NumFeatures: c, Eps: orDefault(opt.Eps, defaultEps), Momentum: orDefault(opt.Momentum, defaultMomentum),
		CumulativeAverage: opt.CumulativeAverage, spatialDims: spatial, name: name}
	if !opt.NoAffine {
		m.Weight, m.Bias = newNormAffine(&m.Base, []int{c}, d)
	}
	if !opt.NoTrackRunningStats {
		m.RunningMean = m.RegisterBuffer("running_mean", tensor.Zeros([]int{c}, d))
		m.RunningVar = m.RegisterBuffer("running_var", tensor.Ones([]int{c}, d))
		m.NumBatchesTracked = m.RegisterBuffer("num_batches_tracked", tensor.Zeros([]int{}, tensor.Int64))
	}
	return m
}

// NewBatchNorm1d returns batch normalization over [N, C] or [N, C, L]
// inputs, as torch.nn.BatchNorm1d. Parameters and buffers are Float32
// unless a dtype is given.
func NewBatchNorm1d(numFeatures int, opt BatchNormOptions, dt ...tensor.DType) *BatchNorm {
	return newBatchNorm("BatchNorm1d", []int{0, 1}, numFeatures, opt, dt)
}

// NewBatchNorm2d returns batch normalization over [N, C, H, W] inputs, as
// torch.nn.BatchNorm2d.
func NewBatchNorm2d(numFeatures int, opt BatchNormOptions, dt ...tensor.DType) *BatchNorm {
	return newBatchNorm("BatchNorm2d", []int{2}, numFeatures, opt, dt)
}

// NewBatchNorm3d returns batch normalization over [N, C, D, H, W] inputs,
// as torch.nn.BatchNorm3d.
func NewBatchNorm3d(numFeatures int, opt BatchNormOptions, dt ...tensor.DType) *BatchNorm {
	return newBatchNorm("BatchNorm3d", []int{3}, numFeatures, opt, dt)
}

// Forward normalizes x. In training mode with running statistics it first
// counts the batch in NumBatchesTracked.
func (m *BatchNorm) Forward(x *autograd.Var) *autograd.Var {
	s := x.Shape()
	ok := len(s) >= 2 && s[1] == m.NumFeatures
	if ok {
		ok = false
		for _, d := range m.spatialDims {
			ok = ok || len(s) == d+2
		}
	}
	if !ok {
		ranks := make([]string, len(m.spatialDims))
		for i, d := range m.spatialDims {
			ranks[i] = fmt.Sprint(d + 2)
		}
		panic(fmt.Sprintf("nn.%s.Forward: input shape %v must have %s axes with %d channels on axis 1", m.name, s, strings.Join(ranks, " or "), m.NumFeatures))
	}
	momentum := m.Momentum
	training := m.IsTraining()
	if training && m.NumBatchesTracked != nil {
		// Counted on the counter's device; only the cumulative average
		// needs the count on the host.
		m.NumBatchesTracked.AddScalarInPlace(1)
		if m.CumulativeAverage {
			momentum = 1 / m.NumBatchesTracked.Item()
		}
	}
	return autograd.BatchNorm(x, m.Weight, m.Bias, m.RunningMean, m.RunningVar, training || m.RunningMean == nil, momentum, m.Eps)
}

// String describes the layer as PyTorch prints it.
func (m *BatchNorm) String() string {
	mom := pyFloat(m.Momentum)
	if m.CumulativeAverage {
		mom = "None"
	}
	return fmt.Sprintf("%s(%d, eps=%s, momentum=%s, affine=%s, track_running_stats=%s)", m.name, m.NumFeatures,
		pyFloat(m.Eps), mom, pyBool(m.Weight != nil), pyBool(m.RunningMean != nil))
}

// pyBool formats b as Python does.
func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// pyShape formats a shape as a Python tuple: "(8,)" or "(2, 3)".
func pyShape(s []int) string {
	if len(s) == 1 {
		return fmt.Sprintf("(%d,)", s[0])
	}
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// InstanceNormOptions configures NewInstanceNorm1d/2d. The zero value is
// PyTorch's default: eps 1e-5, momentum 0.1, no affine parameters, no
// running statistics.
type InstanceNormOptions struct {
	// Eps is added to the variance; 0 means 1e-5.
	Eps float64
	// Momentum weighs the new statistics in the running ones; 0 means 0.1.
	Momentum float64
	// Affine adds a learnable per-channel weight and bias.
	Affine bool
	// TrackRunningStats keeps running statistics, used in evaluation mode.
	TrackRunningStats bool
}

// InstanceNorm normalizes each (sample, channel) plane over its spatial
// axes, as torch.nn.InstanceNorm1d/2d. With TrackRunningStats it keeps
// running statistics (averaged over the batch) and uses them in evaluation
// mode.
type InstanceNorm struct {
	Base
	NumFeatures                                int
	Eps, Momentum                              float64
	Weight, Bias                               *autograd.Var
	RunningMean, RunningVar, NumBatchesTracked *tensor.Tensor
	spatialDims                                int
	name                                       string
}

func newInstanceNorm(name string, spatial, c int, opt InstanceNormOptions, dt []tensor.DType) *InstanceNorm {
	if c <= 0 {
		panic(fmt.Sprintf("nn.New%s: num_features must be positive, got %d", name, c))
	}
	d := pickDType(dt)
	m := &InstanceNorm{NumFeatures: c, Eps: orDefault(opt.Eps, defaultEps), Momentum: orDefault(opt.Momentum, defaultMomentum),
		spatialDims: spatial, name: name}
	if opt.Affine {
		m.Weight, m.Bias = newNormAffine(&m.Base, []int{c}, d)
	}
	if opt.TrackRunningStats {
		m.RunningMean = m.RegisterBuffer("running_mean", tensor.Zeros([]int{c}, d))
		m.RunningVar = m.RegisterBuffer("running_var", tensor.Ones([]int{c}, d))
		m.NumBatchesTracked = m.RegisterBuffer("num_batches_tracked", tensor.Zeros([]int{}, tensor.Int64))
	}
	return m
}

// NewInstanceNorm1d returns instance normalization over [N, C, L] (or
// unbatched [C, L]) inputs, as torch.nn.InstanceNorm1d.
func NewInstanceNorm1d(numFeatures int, opt InstanceNormOptions, dt ...tensor.DType) *InstanceNorm {
	return newInstanceNorm("InstanceNorm1d", 1, numFeatures, opt, dt)
}

// NewInstanceNorm2d returns instance normalization over [N, C, H, W] (or
// unbatched [C, H, W]) inputs, as torch.nn.InstanceNorm2d.
func NewInstanceNorm2d(numFeatures int, opt InstanceNormOptions, dt ...tensor.DType) *InstanceNorm {
	return newInstanceNorm("InstanceNorm2d", 2, numFeatures, opt, dt)
}

// Forward normalizes x. Like PyTorch, it does not count batches in
// NumBatchesTracked.
func (m *InstanceNorm) Forward(x *autograd.Var) *autograd.Var {
	s := x.Shape()
	if len(s) == m.spatialDims+1 {
		return m.Forward(x.Unsqueeze(0)).Squeeze(0)
	}
	if len(s) != m.spatialDims+2 || s[1] != m.NumFeatures {
		panic(fmt.Sprintf("nn.%s.Forward: input shape %v must have %d axes (or %d unbatched) with %d channels",
			m.name, s, m.spatialDims+2, m.spatialDims+1, m.NumFeatures))
	}
	useInput := m.IsTraining() || m.RunningMean == nil
	return autograd.InstanceNorm(x, m.Weight, m.Bias, m.RunningMean, m.RunningVar, useInput, m.Momentum, m.Eps)
}

// String describes the layer as PyTorch prints it.
func (m *InstanceNorm) String() string {
	return fmt.Sprintf("%s(%d, eps=%s, momentum=%s, affine=%s, track_running_stats=%s)", m.name, m.NumFeatures,
		pyFloat(m.Eps), pyFloat(m.Momentum), pyBool(m.Weight != nil), pyBool(m.RunningMean != nil))
}

// LayerNorm normalizes over the trailing NormalizedShape axes, then applies
// the element-wise Weight and Bias (nil without elementwise affine), as
// torch.nn.LayerNorm.
type LayerNorm struct {
	Base
	NormalizedShape []int
	Eps             float64
	Weight, Bias    *autograd.Var
}

// NewLayerNorm returns layer normalization over the trailing axes shape;
// eps 0 means 1e-5. With elementwiseAffine it has a weight (ones) and a bias
// (zeros) of that shape, Float32 unless a dtype is given.
func NewLayerNorm(shape []int, eps float64, elementwiseAffine bool, dt ...tensor.DType) *LayerNorm {
	checkNormShape("NewLayerNorm", shape)
	m := &LayerNorm{NormalizedShape: append([]int(nil), shape...), Eps: orDefault(eps, defaultEps)}
	if elementwiseAffine {
		m.Weight, m.Bias = newNormAffine(&m.Base, shape, pickDType(dt))
	}
	return m
}

func checkNormShape(op string, shape []int) {
	ok := len(shape) > 0
	for _, d := range shape {
		ok = ok && d > 0
	}
	if !ok {
		panic(fmt.Sprintf("nn.%s: normalized shape %v must be non-empty with positive sizes", op, shape))
	}
}

// Forward normalizes x, whose shape must end in NormalizedShape.
func (m *LayerNorm) Forward(x *autograd.Var) *autograd.Var {
	checkTrailing("LayerNorm", x.Shape(), m.NormalizedShape)
	return autograd.LayerNorm(x, m.NormalizedShape, m.Weight, m.Bias, m.Eps)
}

func checkTrailing(op string, s, tail []int) {
	ok := len(s) >= len(tail)
	for i := 0; ok && i < len(tail); i++ {
		ok = s[len(s)-len(tail)+i] == tail[i]
	}
	if !ok {
		panic(fmt.Sprintf("nn.%s.Forward: input shape %v must end in the normalized shape %v", op, s, tail))
	}
}

// String describes the layer as PyTorch prints it.
func (m *LayerNorm) String() string {
	return fmt.Sprintf("LayerNorm(%s, eps=%s, elementwise_affine=%s)", pyShape(m.NormalizedShape), pyFloat(m.Eps), pyBool(m.Weight != nil))
}

// GroupNorm normalizes groups of consecutive channels of [N, C, ...]
// inputs, then applies the per-channel Weight and Bias (nil without
// affine), as torch.nn.GroupNorm.
type GroupNorm struct {
	Base
	NumGroups, NumChannels int
	Eps                    float64
	Weight, Bias           *autograd.Var
}

// NewGroupNorm returns group normalization of channels channels in groups
// groups; eps 0 means 1e-5. With affine it has a weight (ones) and a bias
// (zeros) of shape [channels].
func NewGroupNorm(groups, channels int, eps float64, affine bool, dt ...tensor.DType) *GroupNorm {
	if groups <= 0 || channels <= 0 || channels%groups != 0 {
		panic(fmt.Sprintf("nn.NewGroupNorm: groups=%d must be positive and divide channels=%d", groups, channels))
	}
	m := &GroupNorm{NumGroups: groups, NumChannels: channels, Eps: orDefault(eps, defaultEps)}
	if affine {
		m.Weight, m.Bias = newNormAffine(&m.Base, []int{channels}, pickDType(dt))
	}
	return m
}

// Forward normalizes x of shape [N, C, ...].
func (m *GroupNorm) Forward(x *autograd.Var) *autograd.Var {
	if s := x.Shape(); len(s) < 2 || s[1] != m.NumChannels {
		panic(fmt.Sprintf("nn.GroupNorm.Forward: input shape %v must be [N, %d, ...]", s, m.NumChannels))
	}
	return autograd.GroupNorm(x, m.NumGroups, m.Weight, m.Bias, m.Eps)
}

// String describes the layer as PyTorch prints it.
func (m *GroupNorm) String() string {
	return fmt.Sprintf("GroupNorm(%d, %d, eps=%s, affine=%s)", m.NumGroups, m.NumChannels, pyFloat(m.Eps), pyBool(m.Weight != nil))
}

// RMSNorm divides its input by the root mean square over the trailing
// NormalizedShape axes and multiplies by Weight (nil without elementwise
// affine): y = x / sqrt(mean(x²) + eps) · weight, as torch.nn.RMSNorm
// (PyTorch 2.4 and later).
type RMSNorm struct {
	Base
	NormalizedShape []int
	// Eps is added to the mean square; 0 means the machine epsilon of the
	// input's dtype, as PyTorch's eps=None.
	Eps    float64
	Weight *autograd.Var
}

// NewRMSNorm returns RMS normalization over the trailing axes shape. With
// elementwiseAffine it has a weight of ones of that shape.
func NewRMSNorm(shape []int, eps float64, elementwiseAffine bool, dt ...tensor.DType) *RMSNorm {
	checkNormShape("NewRMSNorm", shape)
	m := &RMSNorm{NormalizedShape: append([]int(nil), shape...), Eps: eps}
	if elementwiseAffine {
		d := pickDType(dt)
		if !d.IsFloat() {
			panic(fmt.Sprintf("nn.NewRMSNorm: parameters need a floating-point dtype, got %s", d))
		}
		m.Weight = m.RegisterParameter("weight", autograd.Param(tensor.Ones(shape, d)))
	}
	return m
}

// Forward normalizes x, whose shape must end in NormalizedShape.
func (m *RMSNorm) Forward(x *autograd.Var) *autograd.Var {
	checkTrailing("RMSNorm", x.Shape(), m.NormalizedShape)
	eps := m.Eps
	if eps == 0 {
		eps = math.Nextafter(1, 2) - 1
		if x.DType() == tensor.Float32 {
			eps = float64(math.Nextafter32(1, 2) - 1)
		}
	}
	return autograd.RMSNorm(x, len(m.NormalizedShape), m.Weight, eps)
}

// String describes the layer as PyTorch prints it.
func (m *RMSNorm) String() string {
	eps := "None"
	if m.Eps != 0 {
		eps = pyFloat(m.Eps)
	}
	return fmt.Sprintf("RMSNorm(%s, eps=%s, elementwise_affine=%s)", pyShape(m.NormalizedShape), eps, pyBool(m.Weight != nil))
}

// LocalResponseNorm normalizes each element by the activity of Size
// neighbouring channels, as torch.nn.LocalResponseNorm; see
// autograd.LocalResponseNorm.
type LocalResponseNorm struct {
	Base
	Size           int
	Alpha, Beta, K float64
}

// NewLocalResponseNorm returns local response normalization over size
// channels. PyTorch's defaults are alpha 1e-4, beta 0.75, k 1.
func NewLocalResponseNorm(size int, alpha, beta, k float64) *LocalResponseNorm {
	if size < 1 {
		panic(fmt.Sprintf("nn.NewLocalResponseNorm: size %d must be positive", size))
	}
	return &LocalResponseNorm{Size: size, Alpha: alpha, Beta: beta, K: k}
}

// Forward normalizes x of shape [N, C, ...] (at least 3 axes).
func (m *LocalResponseNorm) Forward(x *autograd.Var) *autograd.Var {
	return autograd.LocalResponseNorm(x, m.Size, m.Alpha, m.Beta, m.K)
}

// String describes the layer as PyTorch prints it.
func (m *LocalResponseNorm) String() string {
	return fmt.Sprintf("LocalResponseNorm(%d, alpha=%s, beta=%s, k=%s)", m.Size, pyFloat(m.Alpha), pyFloat(m.Beta), pyFloat(m.K))
}

package nn

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// Eye fills the 2-D tensor t with the identity matrix (ones on the main
// diagonal, zeros elsewhere), as torch.nn.init.eye_. It panics unless t is
// 2-D.
func Eye(t *tensor.Tensor) *tensor.Tensor {
	if t.Dim() != 2 {
		panic(fmt.Sprintf("nn.Eye: only 2-D tensors are supported, got shape %v", t.Shape()))
	}
	s := t.Shape()
	return t.CopyFrom(tensor.Eye(s[0], s[1]))
}

// Dirac fills the 3-, 4- or 5-D tensor t (a convolution weight) with the
// Dirac delta, as torch.nn.init.dirac_: a convolution with it preserves its
// input channels. With groups > 1 the output channels are split into groups
// and each group preserves the same input channels. It panics unless t has
// 3 to 5 dimensions and shape[0] is divisible by groups.
func Dirac(t *tensor.Tensor, groups int) *tensor.Tensor {
	s := t.Shape()
	if len(s) < 3 || len(s) > 5 {
		panic(fmt.Sprintf("nn.Dirac: only 3-, 4- and 5-D tensors are supported, got shape %v", s))
	}
	if groups < 1 || s[0]%groups != 0 {
		panic(fmt.Sprintf("nn.Dirac: dim 0 of shape %v must be divisible by groups=%d", s, groups))
	}
	outPerGroup := s[0] / groups
	minDim := min(outPerGroup, s[1])
	strides := make([]int, len(s))
	n := 1
	for i := len(s) - 1; i >= 0; i-- {
		strides[i] = n
		n *= s[i]
	}
	center := 0
	for d := 2; d < len(s); d++ {
		center += (s[d] / 2) * strides[d]
	}
	v := make([]float64, n)
	for g := range groups {
		for d := range minDim {
			v[(g*outPerGroup+d)*strides[0]+d*strides[1]+center] = 1
		}
	}
	return t.CopyFrom(tensor.FromSlice(v, s...))
}

// TruncatedNormal fills t with values drawn from N(mean, std²) truncated to
// [a, b], as torch.nn.init.trunc_normal_: uniform values are mapped through
// the inverse normal CDF restricted to the interval (exact sampling, no
// rejection), then clamped to [a, b] against rounding. It panics unless
// std > 0 and a < b.
func TruncatedNormal(g *tensor.Generator, t *tensor.Tensor, mean, std, a, b float64) *tensor.Tensor {
	checkGen("TruncatedNormal", g)
	if !(std > 0) || !(a < b) {
		panic(fmt.Sprintf("nn.TruncatedNormal: need std > 0 and a < b, got std=%v, [a, b]=[%v, %v]", std, a, b))
	}
	cdf := func(x float64) float64 { return (1 + math.Erf(x/math.Sqrt2)) / 2 }
	l, u := cdf((a-mean)/std), cdf((b-mean)/std)
	v := g.Uniform(t.Shape(), 2*l-1, 2*u-1, tensor.Float64).Float64s()
	for i, x := range v {
		v[i] = min(max(mean+std*math.Sqrt2*math.Erfinv(x), a), b)
	}
	return t.CopyFrom(tensor.FromSlice(v, t.Shape()...))
}

// Orthogonal fills t (at least 2-D) with a (semi-)orthogonal matrix scaled
// by gain, as torch.nn.init.orthogonal_ (Saxe et al. 2013): t is viewed as
// shape[0] rows by the product of the other dimensions; a Gaussian matrix of
// that shape (transposed if it has fewer rows than columns) is QR-factorized
// and Q, with its columns' signs fixed so R has a positive diagonal, is the
// result. Rows (or columns, whichever are fewer) are then orthonormal times
// gain. It panics for tensors with fewer than 2 dimensions.
func Orthogonal(g *tensor.Generator, t *tensor.Tensor, gain float64) *tensor.Tensor {
	checkGen("Orthogonal", g)
	if t.Dim() < 2 {
		panic(fmt.Sprintf("nn.Orthogonal: only tensors with 2 or more dimensions are supported, got shape %v", t.Shape()))
	}
	if t.Numel() == 0 {
		return t
	}
	rows := t.Shape()[0]
	cols := t.Numel() / rows
	m, n := rows, cols // the factorized matrix is m×n with m >= n
	if rows < cols {
		m, n = cols, rows
	}
	a := g.Normal([]int{m, n}, 0, 1, tensor.Float64).Float64s()
	q := householderQ(a, m, n)
	out := make([]float64, rows*cols)
	for i := range m {
		for j := range n {
			if rows < cols {
				out[j*cols+i] = gain * q[i*n+j]
			} else {
				out[i*cols+j] = gain * q[i*n+j]
			}
		}
	}
	return t.CopyFrom(tensor.FromSlice(out, t.Shape()...))
}

// householderQ returns the m×n (m >= n) thin Q of the QR factorization of
// the row-major matrix a (overwritten), with the signs of Q's columns chosen
// so that R's diagonal is non-negative.
func householderQ(a []float64, m, n int) []float64 {
	vs := make([][]float64, n)
	rdiag := make([]float64, n)
	for k := range n {
		norm := 0.0
		for i := k; i < m; i++ {
			norm += a[i*n+k] * a[i*n+k]
		}
		norm = math.Sqrt(norm)
		alpha := -norm
		if a[k*n+k] < 0 {
			alpha = norm
		}
		v := make([]float64, m)
		for i := k; i < m; i++ {
			v[i] = a[i*n+k]
		}
		v[k] -= alpha
		vn := 0.0
		for i := k; i < m; i++ {
			vn += v[i] * v[i]
		}
		if vn > 0 {
			for j := k; j < n; j++ {
				dot := 0.0
				for i := k; i < m; i++ {
					dot += v[i] * a[i*n+j]
				}
				f := 2 * dot / vn
				for i := k; i < m; i++ {
					a[i*n+j] -= f * v[i]
				}
			}
		}
		vs[k] = v
		rdiag[k] = a[k*n+k]
	}
	// Q = H_0 H_1 ... H_{n-1} applied to the first n columns of I.
	q := make([]float64, m*n)
	for j := range n {
		q[j*n+j] = 1
	}
	for k := n - 1; k >= 0; k-- {
		v := vs[k]
		vn := 0.0
		for i := k; i < m; i++ {
			vn += v[i] * v[i]
		}
		if vn == 0 {
			continue
		}
		for j := range n {
			dot := 0.0
			for i := k; i < m; i++ {
				dot += v[i] * q[i*n+j]
			}
			f := 2 * dot / vn
			for i := k; i < m; i++ {
				q[i*n+j] -= f * v[i]
			}
		}
	}
	for j := range n {
		if rdiag[j] < 0 {
			for i := range m {
				q[i*n+j] = -q[i*n+j]
			}
		}
	}
	return q
}

// Sparse fills the 2-D tensor t with values from N(0, std²) and then, in
// every column, sets ceil(sparsity·rows) randomly chosen entries to zero, as
// torch.nn.init.sparse_ (Martens 2010). It panics unless t is 2-D and
// sparsity is in [0, 1].
func Sparse(g *tensor.Generator, t *tensor.Tensor, sparsity, std float64) *tensor.Tensor {
	checkGen("Sparse", g)
	if t.Dim() != 2 {
		panic(fmt.Sprintf("nn.Sparse: only 2-D tensors are supported, got shape %v", t.Shape()))
	}
	if !(sparsity >= 0 && sparsity <= 1) {
		panic(fmt.Sprintf("nn.Sparse: sparsity %v must be in [0, 1]", sparsity))
	}
	rows, cols := t.Shape()[0], t.Shape()[1]
	zeros := int(math.Ceil(sparsity * float64(rows)))
	v := g.Normal([]int{rows, cols}, 0, std, tensor.Float64).Float64s()
	for c := range cols {
		for _, r := range g.Perm(rows)[:zeros] {
			v[int(r)*cols+c] = 0
		}
	}
	return t.CopyFrom(tensor.FromSlice(v, rows, cols))
}

// LeCunUniform fills t with U(-b, b), b = sqrt(3/fan_in) (LeCun et al.
// 1998): unit variance for unit-variance inputs of a linear layer. A t with
// zero fan-in is left unchanged. It panics for tensors with fewer than 2
// dimensions.
func LeCunUniform(g *tensor.Generator, t *tensor.Tensor) *tensor.Tensor {
	fanIn, _ := FanInOut(t.Shape())
	if fanIn == 0 {
		return t
	}
	b := math.Sqrt(3 / float64(fanIn))
	return Uniform(g, t, -b, b)
}

// LeCunNormal fills t with N(0, 1/fan_in) (LeCun et al. 1998; the
// initialization SELU networks expect). A t with zero fan-in is left
// unchanged. It panics for tensors with fewer than 2 dimensions.
func LeCunNormal(g *tensor.Generator, t *tensor.Tensor) *tensor.Tensor {
	fanIn, _ := FanInOut(t.Shape())
	if fanIn == 0 {
		return t
	}
	return Normal(g, t, 0, 1/math.Sqrt(float64(fanIn)))
}

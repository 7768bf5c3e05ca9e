//go:build amd64 && !purego

package vec

import "github.com/emberml/ember/tensor/internal/isa"

//go:generate python3 asmgen.py

// The assembly kernels of vec_amd64.s. Callers guarantee equal lengths;
// the exp and tanh kernels need len(a) to be a multiple of 8 (AVX2) or 16
// (AVX-512).

//go:noescape
func addAVX2(dst, a, b []float32)

//go:noescape
func subAVX2(dst, a, b []float32)

//go:noescape
func mulAVX2(dst, a, b []float32)

//go:noescape
func divAVX2(dst, a, b []float32)

//go:noescape
func addConstAVX2(dst, a []float32, c float32)

//go:noescape
func subConstAVX2(dst, a []float32, c float32)

//go:noescape
func mulConstAVX2(dst, a []float32, c float32)

//go:noescape
func divConstAVX2(dst, a []float32, c float32)

//go:noescape
func constSubAVX2(dst, a []float32, c float32)

//go:noescape
func constDivAVX2(dst, a []float32, c float32)

//go:noescape
func reluAVX2(dst, a []float32)

//go:noescape
func reluGradAVX2(dst, g, out []float32)

//go:noescape
func expAVX2(dst, a []float32)

//go:noescape
func tanhAVX2(dst, a []float32)

//go:noescape
func negAVX2(dst, a []float32)

//go:noescape
func absAVX2(dst, a []float32)

//go:noescape
func sqrtAVX2(dst, a []float32)

//go:noescape
func sumAVX2(a []float32) float64

//go:noescape
func addAVX512(dst, a, b []float32)

//go:noescape
func subAVX512(dst, a, b []float32)

//go:noescape
func mulAVX512(dst, a, b []float32)

//go:noescape
func divAVX512(dst, a, b []float32)

//go:noescape
func addConstAVX512(dst, a []float32, c float32)

//go:noescape
func subConstAVX512(dst, a []float32, c float32)

//go:noescape
func mulConstAVX512(dst, a []float32, c float32)

//go:noescape
func divConstAVX512(dst, a []float32, c float32)

//go:noescape
func constSubAVX512(dst, a []float32, c float32)

//go:noescape
func constDivAVX512(dst, a []float32, c float32)

//go:noescape
func reluAVX512(dst, a []float32)

//go:noescape
func reluGradAVX512(dst, g, out []float32)

//go:noescape
func expAVX512(dst, a []float32)

//go:noescape
func tanhAVX512(dst, a []float32)

//go:noescape
func negAVX512(dst, a []float32)

//go:noescape
func absAVX512(dst, a []float32)

//go:noescape
func sqrtAVX512(dst, a []float32)

//go:noescape
func sumAVX512(a []float32) float64

//go:noescape
func sgdMomentumAVX2(w, g, buf []float32, mom, damp, lr float32)

//go:noescape
func adamAVX2(w, g, m, v []float32, c *AdamConsts)

//go:noescape
func sgdMomentumAVX512(w, g, buf []float32, mom, damp, lr float32)

//go:noescape
func adamAVX512(w, g, m, v []float32, c *AdamConsts)

var (
	avx2Impl = &impl{
		name: "avx2",
		add:  addAVX2, sub: subAVX2, mul: mulAVX2, div: divAVX2,
		addConst: addConstAVX2, subConst: subConstAVX2, mulConst: mulConstAVX2, divConst: divConstAVX2,
		constSub: constSubAVX2, constDiv: constDivAVX2,
		relu: reluAVX2, reluGrad: reluGradAVX2, neg: negAVX2, abs: absAVX2, sqrt: sqrtAVX2, exp: expAVX2, tanh: tanhAVX2, expLanes: 8, tail: func(tanh bool, dst, a []float32) { tailAsm(false, tanh, dst, a) }, sum: sumAVX2, max: maxGo, dot: dotGo,
		sgdMomentum: sgdMomentumAVX2, adam: func(w, g, m, v []float32, c AdamConsts) { adamAVX2(w, g, m, v, &c) },
	}
	avx512Impl = &impl{
		name: "avx512",
		add:  addAVX512, sub: subAVX512, mul: mulAVX512, div: divAVX512,
		addConst: addConstAVX512, subConst: subConstAVX512, mulConst: mulConstAVX512, divConst: divConstAVX512,
		constSub: constSubAVX512, constDiv: constDivAVX512,
		relu: reluAVX512, reluGrad: reluGradAVX512, neg: negAVX512, abs: absAVX512, sqrt: sqrtAVX512, exp: expAVX512, tanh: tanhAVX512, expLanes: 16, tail: func(tanh bool, dst, a []float32) { tailAsm(true, tanh, dst, a) }, sum: sumAVX512, max: maxGo, dot: dotGo,
		sgdMomentum: sgdMomentumAVX512, adam: func(w, g, m, v []float32, c AdamConsts) { adamAVX512(w, g, m, v, &c) },
	}
)

// tailAsm runs the AVX-512 (or AVX2) exp or tanh kernel on fewer than 16
// (or 8) elements: the tail of avx512Impl and avx2Impl.
func tailAsm(avx512, tanh bool, dst, a []float32) {
	var buf [16]float32
	lanes := 8
	if avx512 {
		lanes = 16
	}
	n := copy(buf[:lanes], a)
	switch {
	case avx512 && tanh:
		tanhAVX512(buf[:], buf[:])
	case avx512:
		expAVX512(buf[:], buf[:])
	case tanh:
		tanhAVX2(buf[:8], buf[:8])
	default:
		expAVX2(buf[:8], buf[:8])
	}
	copy(dst, buf[:n])
}

// impls lists the kernel sets this CPU runs, fastest first; the pure-Go set
// is always last.
func impls() []*impl {
	s := make([]*impl, 0, 3)
	if isa.Has(isa.AVX512) {
		s = append(s, avx512Impl)
	}
	if isa.Has(isa.AVX2) {
		s = append(s, avx2Impl)
	}
	return append(s, goImpl)
}

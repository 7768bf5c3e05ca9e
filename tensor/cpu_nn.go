package tensor

import (
	"fmt"

	"github.com/emberml/ember/tensor/internal/cpu"
)

// The CPU implementation of NNKernels: type switches onto the generic slice
// kernels of tensor/internal/cpu.

// floatData returns the []float32 or []float64 behind b starting at off,
// panicking with the kernel's name for other dtypes.
func floatData(kernel string, b Buffer, off int) any {
	switch d := b.(*cpuBuffer).data.(type) {
	case []float32:
		return d[off:]
	case []float64:
		return d[off:]
	}
	panic(fmt.Sprintf("tensor: %s kernel on %s data; want float32 or float64", kernel, b.DType()))
}

func int64Data(b Buffer) []int64 { return b.(*cpuBuffer).data.([]int64) }

// optional returns nil for a nil buffer, else its float slice of type T.
func optional[T float32 | float64](b Buffer) []T {
	if b == nil {
		return nil
	}
	return b.(*cpuBuffer).data.([]T)
}

func (cpuBackend) Im2Col(dst, src Buffer, srcOff int, g ConvGeom) {
	switch s := floatData("Im2Col", src, srcOff).(type) {
	case []float32:
		cpu.Im2Col(dst.(*cpuBuffer).data.([]float32), s, cpu.ConvGeom(g))
	case []float64:
		cpu.Im2Col(dst.(*cpuBuffer).data.([]float64), s, cpu.ConvGeom(g))
	}
}

func (cpuBackend) Col2Im(dst, src Buffer, g ConvGeom) {
	switch s := floatData("Col2Im", src, 0).(type) {
	case []float32:
		cpu.Col2Im(dst.(*cpuBuffer).data.([]float32), s, cpu.ConvGeom(g))
	case []float64:
		cpu.Col2Im(dst.(*cpuBuffer).data.([]float64), s, cpu.ConvGeom(g))
	}
}

func (cpuBackend) MaxPool2d(dst, indices, src Buffer, srcOff int, g PoolGeom) {
	idx := int64Data(indices)
	switch s := floatData("MaxPool2d", src, srcOff).(type) {
	case []float32:
		cpu.MaxPool2d(dst.(*cpuBuffer).data.([]float32), idx, s, cpu.PoolGeom(g))
	case []float64:
		cpu.MaxPool2d(dst.(*cpuBuffer).data.([]float64), idx, s, cpu.PoolGeom(g))
	}
}

func (cpuBackend) PlaneGather(dst, src Buffer, srcOff int, indices Buffer, planes, n, m int) {
	idx := int64Data(indices)
	switch s := floatData("PlaneGather", src, srcOff).(type) {
	case []float32:
		cpu.PlaneGather(dst.(*cpuBuffer).data.([]float32), s, idx, planes, n, m)
	case []float64:
		cpu.PlaneGather(dst.(*cpuBuffer).data.([]float64), s, idx, planes, n, m)
	}
}

func (cpuBackend) PlaneScatterAdd(dst, src Buffer, srcOff int, indices Buffer, planes, n, m int) {
	idx := int64Data(indices)
	switch s := floatData("PlaneScatterAdd", src, srcOff).(type) {
	case []float32:
		cpu.PlaneScatterAdd(dst.(*cpuBuffer).data.([]float32), s, idx, planes, n, m)
	case []float64:
		cpu.PlaneScatterAdd(dst.(*cpuBuffer).data.([]float64), s, idx, planes, n, m)
	}
}

func (cpuBackend) AvgPool2d(dst, src Buffer, srcOff int, g PoolGeom) {
	switch s := floatData("AvgPool2d", src, srcOff).(type) {
	case []float32:
		cpu.AvgPool2d(dst.(*cpuBuffer).data.([]float32), s, cpu.PoolGeom(g))
	case []float64:
		cpu.AvgPool2d(dst.(*cpuBuffer).data.([]float64), s, cpu.PoolGeom(g))
	}
}

func (cpuBackend) AvgPool2dBackward(dst, grad Buffer, gradOff int, g PoolGeom) {
	switch s := floatData("AvgPool2dBackward", grad, gradOff).(type) {
	case []float32:
		cpu.AvgPool2dBackward(dst.(*cpuBuffer).data.([]float32), s, cpu.PoolGeom(g))
	case []float64:
		cpu.AvgPool2dBackward(dst.(*cpuBuffer).data.([]float64), s, cpu.PoolGeom(g))
	}
}

func (cpuBackend) AdaptiveAvgPool2d(dst, src Buffer, srcOff int, planes, h, w, oh, ow int) {
	switch s := floatData("AdaptiveAvgPool2d", src, srcOff).(type) {
	case []float32:
		cpu.AdaptiveAvgPool2d(dst.(*cpuBuffer).data.([]float32), s, planes, h, w, oh, ow)
	case []float64:
		cpu.AdaptiveAvgPool2d(dst.(*cpuBuffer).data.([]float64), s, planes, h, w, oh, ow)
	}
}

func (cpuBackend) AdaptiveAvgPool2dBackward(dst, grad Buffer, gradOff int, planes, h, w, oh, ow int) {
	switch s := floatData("AdaptiveAvgPool2dBackward", grad, gradOff).(type) {
	case []float32:
		cpu.AdaptiveAvgPool2dBackward(dst.(*cpuBuffer).data.([]float32), s, planes, h, w, oh, ow)
	case []float64:
		cpu.AdaptiveAvgPool2dBackward(dst.(*cpuBuffer).data.([]float64), s, planes, h, w, oh, ow)
	}
}

func (cpuBackend) Softmax(log bool, dst, src Buffer, srcOff int, outer, n, inner int) {
	switch s := floatData("Softmax", src, srcOff).(type) {
	case []float32:
		if inner == 1 && n > 0 {
			softmaxF32Rows(log, dst.(*cpuBuffer).data.([]float32), s, outer, n)
			return
		}
		cpu.Softmax(log, dst.(*cpuBuffer).data.([]float32), s, outer, n, inner)
	case []float64:
		cpu.Softmax(log, dst.(*cpuBuffer).data.([]float64), s, outer, n, inner)
	}
}

func (cpuBackend) Moments(mean, variance, src Buffer, srcOff int, outer, n, inner int) {
	switch s := floatData("Moments", src, srcOff).(type) {
	case []float32:
		cpu.Moments(mean.(*cpuBuffer).data.([]float32), variance.(*cpuBuffer).data.([]float32), s, outer, n, inner)
	case []float64:
		cpu.Moments(mean.(*cpuBuffer).data.([]float64), variance.(*cpuBuffer).data.([]float64), s, outer, n, inner)
	}
}

func (cpuBackend) ScaleShift(dst, src Buffer, srcOff int, scale, shift Buffer, outer, n, inner int) {
	switch s := floatData("ScaleShift", src, srcOff).(type) {
	case []float32:
		cpu.ScaleShift(dst.(*cpuBuffer).data.([]float32), s, optional[float32](scale), optional[float32](shift), outer, n, inner)
	case []float64:
		cpu.ScaleShift(dst.(*cpuBuffer).data.([]float64), s, optional[float64](scale), optional[float64](shift), outer, n, inner)
	}
}

func (cpuBackend) NormBackward(dx, sumG, sumGX, grad Buffer, gradOff int, x Buffer, xOff int, mean, rstd, scale Buffer, outer, n, inner int) {
	switch g := floatData("NormBackward", grad, gradOff).(type) {
	case []float32:
		cpu.NormBackward(optional[float32](dx), optional[float32](sumG), optional[float32](sumGX), g, floatData("NormBackward", x, xOff).([]float32),
			optional[float32](mean), optional[float32](rstd), optional[float32](scale), outer, n, inner)
	case []float64:
		cpu.NormBackward(optional[float64](dx), optional[float64](sumG), optional[float64](sumGX), g, floatData("NormBackward", x, xOff).([]float64),
			optional[float64](mean), optional[float64](rstd), optional[float64](scale), outer, n, inner)
	}
}

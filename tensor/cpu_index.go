package tensor

import (
	"fmt"
	"slices"

	"github.com/emberml/ember/tensor/internal/cpu"
	"github.com/emberml/ember/tensor/internal/strided"
)

// The CPU implementation of IndexKernels (index_kernels.go).

// readIndex reads the index view il of idx into a fresh slice of ints,
// checking each against [0, bound). Axes along which il broadcasts (stride
// 0) are read once: the returned strides address the compact slice and are
// 0 on those axes, so a broadcast index costs its distinct values only.
func readIndex(idx Buffer, il Layout, bound int) ([]int, []int, error) {
	nd := len(il.Shape)
	if numel(il.Shape) == 0 {
		return nil, make([]int, nd), nil
	}
	cshape := slices.Clone(il.Shape)
	for d := range nd {
		if il.Strides[d] == 0 {
			cshape[d] = 1
		}
	}
	st := strided.Contiguous(cshape)
	for d := range nd {
		if cshape[d] == 1 {
			st[d] = 0
		}
	}
	vals := make([]int, numel(cshape))
	switch data := idx.(*cpuBuffer).data.(type) {
	case []int64:
		cpu.Map(vals, data, cshape, il.Strides, il.Offset, func(v int64) int { return int(v) })
	case []int32:
		cpu.Map(vals, data, cshape, il.Strides, il.Offset, func(v int32) int { return int(v) })
	default:
		panic(fmt.Sprintf("tensor: index buffer of dtype %s; want int64 or int32", idx.DType()))
	}
	for _, v := range vals {
		if v < 0 || v >= bound {
			return nil, nil, &IndexError{Index: int64(v), Size: bound}
		}
	}
	return vals, st, nil
}

// axisSplit returns strides with the axis entry zeroed, and that entry.
func axisSplit(strides []int, axis int) ([]int, int) {
	s := slices.Clone(strides)
	as := s[axis]
	s[axis] = 0
	return s, as
}

func (cpuBackend) Gather(dst, src Buffer, sl Layout, axis int, idx Buffer, il Layout) error {
	vals, is, err := readIndex(idx, il, sl.Shape[axis])
	if err != nil {
		return err
	}
	ss, as := axisSplit(sl.Strides, axis)
	sh, so := il.Shape, sl.Offset
	s := src.(*cpuBuffer).data
	switch d := dst.(*cpuBuffer).data.(type) {
	case []float32:
		cpu.Gather(d, sh, s.([]float32), ss, so, as, vals, is)
	case []float64:
		cpu.Gather(d, sh, s.([]float64), ss, so, as, vals, is)
	case []int64:
		cpu.Gather(d, sh, s.([]int64), ss, so, as, vals, is)
	case []int32:
		cpu.Gather(d, sh, s.([]int32), ss, so, as, vals, is)
	case []int16:
		cpu.Gather(d, sh, s.([]int16), ss, so, as, vals, is)
	case []u16:
		cpu.Gather(d, sh, s.([]u16), ss, so, as, vals, is)
	case []uint32:
		cpu.Gather(d, sh, s.([]uint32), ss, so, as, vals, is)
	case []uint64:
		cpu.Gather(d, sh, s.([]uint64), ss, so, as, vals, is)
	case []int8:
		cpu.Gather(d, sh, s.([]int8), ss, so, as, vals, is)
	case []uint8:
		cpu.Gather(d, sh, s.([]uint8), ss, so, as, vals, is)
	case []bool:
		cpu.Gather(d, sh, s.([]bool), ss, so, as, vals, is)
	case []uint16:
		cpu.Gather(d, sh, s.([]uint16), ss, so, as, vals, is)
	}
	return nil
}

func (cpuBackend) Scatter(dst Buffer, dl Layout, axis int, idx Buffer, il Layout, src Buffer, sl Layout, accumulate bool) error {
	vals, is, err := readIndex(idx, il, dl.Shape[axis])
	if err != nil {
		return err
	}
	ds, as := axisSplit(dl.Strides, axis)
	sh, do, ss, so := il.Shape, dl.Offset, sl.Strides, sl.Offset
	s := src.(*cpuBuffer).data
	switch d := dst.(*cpuBuffer).data.(type) {
	case []float32:
		if accumulate {
			cpu.ScatterAdd(d, ds, do, as, sh, vals, is, s.([]float32), ss, so)
		} else {
			cpu.Scatter(d, ds, do, as, sh, vals, is, s.([]float32), ss, so)
		}
	case []float64:
		if accumulate {
			cpu.ScatterAdd(d, ds, do, as, sh, vals, is, s.([]float64), ss, so)
		} else {
			cpu.Scatter(d, ds, do, as, sh, vals, is, s.([]float64), ss, so)
		}
	case []int64:
		if accumulate {
			cpu.ScatterAdd(d, ds, do, as, sh, vals, is, s.([]int64), ss, so)
		} else {
			cpu.Scatter(d, ds, do, as, sh, vals, is, s.([]int64), ss, so)
		}
	case []int32:
		if accumulate {
			cpu.ScatterAdd(d, ds, do, as, sh, vals, is, s.([]int32), ss, so)
		} else {
			cpu.Scatter(d, ds, do, as, sh, vals, is, s.([]int32), ss, so)
		}
	case []int16:
		scatterInt(d, ds, do, as, sh, vals, is, s.([]int16), ss, so, accumulate)
	case []u16:
		scatterInt(d, ds, do, as, sh, vals, is, s.([]u16), ss, so, accumulate)
	case []uint32:
		scatterInt(d, ds, do, as, sh, vals, is, s.([]uint32), ss, so, accumulate)
	case []uint64:
		scatterInt(d, ds, do, as, sh, vals, is, s.([]uint64), ss, so, accumulate)
	case []int8:
		scatterInt(d, ds, do, as, sh, vals, is, s.([]int8), ss, so, accumulate)
	case []uint8:
		scatterInt(d, ds, do, as, sh, vals, is, s.([]uint8), ss, so, accumulate)
	case []bool:
		if accumulate {
			cpu.ScatterOr(d, ds, do, as, sh, vals, is, s.([]bool), ss, so)
		} else {
			cpu.Scatter(d, ds, do, as, sh, vals, is, s.([]bool), ss, so)
		}
	case []uint16:
		if accumulate {
			panic(fmt.Sprintf("tensor: accumulating scatter on %s storage; convert to Float32 first", dst.DType()))
		}
		cpu.Scatter(d, ds, do, as, sh, vals, is, s.([]uint16), ss, so)
	}
	return nil
}

// scatterInt is Scatter's case for the narrow integers, which accumulate
// with wrapping adds.
func scatterInt[T int16 | int8 | uint8 | u16 | uint32 | uint64](d []T, ds []int, do, as int, sh, vals, is []int, s []T, ss []int, so int, accumulate bool) {
	if accumulate {
		cpu.ScatterAdd(d, ds, do, as, sh, vals, is, s, ss, so)
	} else {
		cpu.Scatter(d, ds, do, as, sh, vals, is, s, ss, so)
	}
}

func (cpuBackend) MaskedSelect(dst, src Buffer, sl Layout, mask Buffer, ml Layout) {
	m := mask.(*cpuBuffer).data.([]bool)
	sh, ss, so, ms, mo := sl.Shape, sl.Strides, sl.Offset, ml.Strides, ml.Offset
	s := src.(*cpuBuffer).data
	switch d := dst.(*cpuBuffer).data.(type) {
	case []float32:
		cpu.MaskedSelect(d, sh, s.([]float32), ss, so, m, ms, mo)
	case []float64:
		cpu.MaskedSelect(d, sh, s.([]float64), ss, so, m, ms, mo)
	case []int64:
		cpu.MaskedSelect(d, sh, s.([]int64), ss, so, m, ms, mo)
	case []int32:
		cpu.MaskedSelect(d, sh, s.([]int32), ss, so, m, ms, mo)
	case []int16:
		cpu.MaskedSelect(d, sh, s.([]int16), ss, so, m, ms, mo)
	case []u16:
		cpu.MaskedSelect(d, sh, s.([]u16), ss, so, m, ms, mo)
	case []uint32:
		cpu.MaskedSelect(d, sh, s.([]uint32), ss, so, m, ms, mo)
	case []uint64:
		cpu.MaskedSelect(d, sh, s.([]uint64), ss, so, m, ms, mo)
	case []int8:
		cpu.MaskedSelect(d, sh, s.([]int8), ss, so, m, ms, mo)
	case []uint8:
		cpu.MaskedSelect(d, sh, s.([]uint8), ss, so, m, ms, mo)
	case []bool:
		cpu.MaskedSelect(d, sh, s.([]bool), ss, so, m, ms, mo)
	case []uint16:
		cpu.MaskedSelect(d, sh, s.([]uint16), ss, so, m, ms, mo)
	}
}

func (c cpuBackend) MaskedScatter(dst Buffer, dl Layout, mask Buffer, ml Layout, src Buffer, sl Layout) {
	m := mask.(*cpuBuffer).data.([]bool)
	sh, ds, do, ms, mo := dl.Shape, dl.Strides, dl.Offset, ml.Strides, ml.Offset
	s := src.(*cpuBuffer).data
	if !strided.IsContiguous(sl.Shape, sl.Strides) || sl.Offset != 0 {
		s = c.ToHost(src, sl)
	}
	switch d := dst.(*cpuBuffer).data.(type) {
	case []float32:
		cpu.MaskedScatter(d, sh, ds, do, m, ms, mo, s.([]float32))
	case []float64:
		cpu.MaskedScatter(d, sh, ds, do, m, ms, mo, s.([]float64))
	case []int64:
		cpu.MaskedScatter(d, sh, ds, do, m, ms, mo, s.([]int64))
	case []int32:
		cpu.MaskedScatter(d, sh, ds, do, m, ms, mo, s.([]int32))
	case []int16:
		cpu.MaskedScatter(d, sh, ds, do, m, ms, mo, s.([]int16))
	case []u16:
		cpu.MaskedScatter(d, sh, ds, do, m, ms, mo, s.([]u16))
	case []uint32:
		cpu.MaskedScatter(d, sh, ds, do, m, ms, mo, s.([]uint32))
	case []uint64:
		cpu.MaskedScatter(d, sh, ds, do, m, ms, mo, s.([]uint64))
	case []int8:
		cpu.MaskedScatter(d, sh, ds, do, m, ms, mo, s.([]int8))
	case []uint8:
		cpu.MaskedScatter(d, sh, ds, do, m, ms, mo, s.([]uint8))
	case []bool:
		cpu.MaskedScatter(d, sh, ds, do, m, ms, mo, s.([]bool))
	case []uint16:
		cpu.MaskedScatter(d, sh, ds, do, m, ms, mo, s.([]uint16))
	}
}

package tensor

import "github.com/emberml/ember/tensor/internal/strided"

func (cpuBackend) Assign(dst Buffer, dl Layout, src Buffer, sl Layout) {
	d, s := dst.(*cpuBuffer), src.(*cpuBuffer)
	switch dd := d.data.(type) {
	case []float32:
		assignStrided(dd, dl, s.data.([]float32), sl)
	case []float64:
		assignStrided(dd, dl, s.data.([]float64), sl)
	case []int64:
		assignStrided(dd, dl, s.data.([]int64), sl)
	case []int32:
		assignStrided(dd, dl, s.data.([]int32), sl)
	case []int16:
		assignStrided(dd, dl, s.data.([]int16), sl)
	case []u16:
		assignStrided(dd, dl, s.data.([]u16), sl)
	case []uint32:
		assignStrided(dd, dl, s.data.([]uint32), sl)
	case []uint64:
		assignStrided(dd, dl, s.data.([]uint64), sl)
	case []int8:
		assignStrided(dd, dl, s.data.([]int8), sl)
	case []uint8:
		assignStrided(dd, dl, s.data.([]uint8), sl)
	case []bool:
		assignStrided(dd, dl, s.data.([]bool), sl)
	case []uint16:
		assignStrided(dd, dl, s.data.([]uint16), sl)
	}
}

// assignStrided copies the strided view sl of src into the strided view dl
// of dst.
func assignStrided[T any](dst []T, dl Layout, src []T, sl Layout) {
	strided.Walk(dl.Shape, [][]int{dl.Strides, sl.Strides}, []int{dl.Offset, sl.Offset}, func(offs []int, n int, inc []int) {
		od, os, id, is := offs[0], offs[1], inc[0], inc[1]
		for j := range n {
			dst[od+j*id] = src[os+j*is]
		}
	})
}

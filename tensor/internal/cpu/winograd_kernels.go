package cpu

// The Winograd transforms work on groups of 16 tiles (lanes), consecutive
// columns of a block, which may span tile rows and images: each lane
// reads its input patch and writes its output tile through its own
// offset, and masks (one bit per lane) say which of its reads and writes
// fall inside the image. The assembly kernels gather and scatter
// through the offsets; the Go twins below compute the same values in
// the same order, so both give identical results.

// winoLanes is the number of tiles a transform kernel handles at once.
const winoLanes = 16

// winoGroup locates the 16 tiles of one group.
type winoGroup struct {
	// in[l] is the offset of lane l's input patch (its top-left cell,
	// which may lie in the padding) from channel 0 of image 0;
	// inMask[4i+j] has bit l set when cell (i, j) of the patch is in the
	// image.
	in     [winoLanes]int32
	inMask [winoPositions]uint16
	// out[l] is the offset of lane l's top-left output from channel 0 of
	// image 0; outMask[2i+j] has bit l set when output (i, j) of the tile
	// is in the image.
	out     [winoLanes]int32
	outMask [4]uint16
}

// groups fills gs with the groups of the tiles [t0, t1) of p, the last
// one padded with lanes that read and write nothing.
func (p *winoPlan) groups(gs []winoGroup, t0, t1 int) []winoGroup {
	g := p.g
	gs = gs[:0]
	for t := t0; t < t1; t += winoLanes {
		var gr winoGroup
		for l := range min(winoLanes, t1-t) {
			n, r := (t+l)/p.perImage, (t+l)%p.perImage
			ih, iw := 2*(r/p.tilesW)-g.PadH, 2*(r%p.tilesW)-g.PadW
			gr.in[l] = int32(n*g.C*g.H*g.W + ih*g.W + iw)
			for i := range 4 {
				for j := range 4 {
					if ih+i >= 0 && ih+i < g.H && iw+j >= 0 && iw+j < g.W {
						gr.inMask[4*i+j] |= 1 << l
					}
				}
			}
			oh, ow := 2*(r/p.tilesW), 2*(r%p.tilesW)
			gr.out[l] = int32((n*p.ww.k*g.OH+oh)*g.OW + ow)
			for i := range 2 {
				for j := range 2 {
					if oh+i < g.OH && ow+j < g.OW {
						gr.outMask[2*i+j] |= 1 << l
					}
				}
			}
		}
		gs = append(gs, gr)
	}
	return gs
}

// winoInputGo is the Go twin of the input transform kernel: for nc
// channels (channel c's plane at x[c·planeStride:], rows w apart) it
// writes lane l of Bᵀ d B at position ξ of channel c to
// out[c·rowStride + ξ·vs + l], zero for cells outside the image.
func winoInputGo(x []float32, planeStride, w int, gr *winoGroup, out []float32, rowStride, vs, nc int) {
	for c := range nc {
		plane := x[c*planeStride:]
		o := out[c*rowStride:]
		for l := range winoLanes {
			var d [4][4]float32
			for i := range 4 {
				for j := range 4 {
					if gr.inMask[4*i+j]&(1<<l) != 0 {
						d[i][j] = plane[int(gr.in[l])+i*w+j]
					}
				}
			}
			var t [4][4]float32
			for i, r := range d {
				t[i] = [4]float32{r[0] - r[2], r[1] + r[2], r[2] - r[1], r[1] - r[3]}
			}
			for j := range 4 {
				o[j*vs+l] = t[0][j] - t[2][j]
				o[(4+j)*vs+l] = t[1][j] + t[2][j]
				o[(8+j)*vs+l] = t[2][j] - t[1][j]
				o[(12+j)*vs+l] = t[1][j] - t[3][j]
			}
		}
	}
}

// winoOutputGo is the Go twin of the output transform kernel: for nk
// output channels (channel k's products M_ξ at m[ξ·ms + k·mk + l] for
// lane l, its plane at dst[k·planeStride:], rows ow apart) it writes
// Aᵀ M A plus bias[k], plus res at the same place when res is not nil,
// clamped at zero when relu is set, to the outputs of each lane that are
// in the image.
func winoOutputGo(m []float32, ms, mk int, dst []float32, planeStride, ow int, gr *winoGroup, bias, res []float32, relu bool, nk int) {
	for k := range nk {
		for l := range winoLanes {
			var v [winoPositions]float32
			for xi := range v {
				v[xi] = m[xi*ms+k*mk+l]
			}
			var s [2][4]float32
			for j := range 4 {
				s[0][j] = v[j] + v[4+j] + v[8+j]
				s[1][j] = v[4+j] - v[8+j] - v[12+j]
			}
			for i := range 2 {
				y := [2]float32{s[i][0] + s[i][1] + s[i][2], s[i][1] - s[i][2] - s[i][3]}
				for j := range 2 {
					if gr.outMask[2*i+j]&(1<<l) == 0 {
						continue
					}
					at := k*planeStride + int(gr.out[l]) + i*ow + j
					val := y[j] + bias[k]
					if res != nil {
						val += res[at]
					}
					if relu && val < 0 {
						val = 0
					}
					dst[at] = val
				}
			}
		}
	}
}

package cpu

import (
	"fmt"
	"sync/atomic"

	"github.com/emberml/ember/tensor/internal/gemm"
	"github.com/emberml/ember/tensor/internal/parallel"
)

// Winograd F(2×2, 3×3) convolution: each 2×2 block of outputs (a tile) of
// one output channel k is Aᵀ [Σ_c U_kc ⊙ V_c] A, where U_kc = G g_kc Gᵀ is
// the 4×4 transform of the 3×3 filter and V_c = Bᵀ d_c B that of the 4×4
// input patch d_c under the tile. For each of the 16 positions ξ of the
// 4×4 transforms the sum over c is the matrix product M_ξ = U_ξ · V_ξ
// (K×C times C×tiles), run by the packed GEMM: 16 multiplies per tile
// and channel pair instead of the 36 of the direct convolution. The
// filter transform is packed once per ξ as the GEMM's left operand; the
// input transform is written straight into the packed right-operand panels
// (gemm.BLayout), a block of tiles at a time so that V and M stay in the
// L2 cache; the output transform adds bias and residual, applies the ReLU
// and writes the NCHW output.
//
// Error: the transforms add and halve only, and the filter transform is
// rounded once from float64, so the result differs from the direct
// convolution by a few ulps of the magnitudes summed: over the test
// geometries the largest error measured against a float64 direct
// convolution was 5.3e-7 relative to the sum of the magnitudes of the
// terms (products, bias, residual) of an output; the direct path: 2.3e-7.

// winoPositions is the number of transform positions ξ: a 4×4 tile.
const winoPositions = 16

// winogradWeights is the filter transform U_ξ (K×C) for every position ξ,
// packed as the GEMM's left operand. It is read-only once built.
type winogradWeights struct {
	k, c  int
	parts [winoPositions]gemm.PackedA
	// tiles caches the lane groups of the tiles of the last geometry
	// the weight ran on: a network runs each layer at one geometry, and
	// making them on every call took ResNet-18 0.4 ms a run, serial
	// between the parallel regions.
	tiles atomic.Pointer[winoTileGroups]
}

// winoTileGroups is the lane groups of every tile of one geometry, the
// tiles taken in order from tile 0, winoLanes to a group.
type winoTileGroups struct {
	g  ConvGeom
	gs []winoGroup
}

// winogradGeom reports whether a convolution has the shape Winograd
// F(2×2, 3×3) computes: a 3×3 kernel, unit stride and dilation, one group.
func winogradGeom(g ConvGeom, groups int) bool {
	return groups == 1 && g.KH == 3 && g.KW == 3 && g.StrideH == 1 && g.StrideW == 1 &&
		g.DilationH == 1 && g.DilationW == 1
}

// winogradWorth reports whether Winograd beats the direct convolution for
// c input and k output channels: the transforms cost per channel what the
// GEMM saves per channel pair, so both counts must be large enough:
// BenchmarkWinogradPerCall measured 16 channels in and out 1.4× faster
// than direct at 32×32, and 8 even.
func winogradWorth(c, k int) bool { return c >= 16 && k >= 16 }

// winoMinTiles is the fewest tiles (2×2 outputs over the batch) for
// which Winograd runs: with fewer, its transformed filter (16/9 the size of
// the direct one) is read for too little work. ResNet's 7×7 layers at
// batch 1 (16 tiles, 512 channels) take it: BenchmarkWinograd measured
// 4.0 ms of CPU time against the direct 4.7 at one thread, and 3.5
// against 5.7 at two, where the direct product of 49 columns is split by
// rows and every goroutine lowers the whole column matrix.
const winoMinTiles = 16

// winogradTiles returns the number of 2×2 output tiles of g over its batch.
func winogradTiles(g ConvGeom) int { return g.N * ((g.OH + 1) / 2) * ((g.OW + 1) / 2) }

// winoPerCallMinTiles is winoMinTiles for a filter transformed on every
// call: the transform (about 25 ns per filter) must be paid back by the
// products saved on each tile (about 0.4 ns per filter), so batch-1
// ResNet-18 through Conv2d ran 20% slower in CPU time with the 14×14 and
// 7×7 layers taking Winograd.
const winoPerCallMinTiles = 128

// winogradPerCall reports whether Winograd beats the direct convolution
// when the filter is transformed on every call (ConvForwardF32).
func winogradPerCall(g ConvGeom, k int) bool {
	return winogradWorth(g.C, k) && winogradFits(g, k) && winogradTiles(g) >= winoPerCallMinTiles
}

// winogradWeightsSize returns the buffer size packWinogradWeights needs.
func winogradWeightsSize(k, c int) int { return winoPositions * gemm.PackedSize(k, c) }

// packWinogradWeights transforms the [K, C, 3, 3] filter w and packs it
// into buf (winogradWeightsSize(k, c) elements), which the result owns.
// The transform passes through a scratch buffer of 16·K·C elements, from
// convScratch when pooled is set (calls that repeat), else from the heap
// (a one-time pack, whose scratch the pool would otherwise keep).
func packWinogradWeights(buf, w []float32, k, c int, pooled bool) *winogradWeights {
	kc := k * c
	u, done := transformScratch(winoPositions*kc, pooled)
	defer done()
	transformFilters(u, w, kc)
	size := gemm.PackedSize(k, c)
	ww := &winogradWeights{k: k, c: c}
	for xi := range winoPositions {
		ww.parts[xi] = gemm.PackAInto(buf[xi*size:][:size], false, k, c, 1, u[xi*kc:][:kc], max(c, 1))
	}
	return ww
}

// transformScratch returns n floats for a filter transform and the
// function that releases them.
func transformScratch(n int, pooled bool) ([]float32, func()) {
	if !pooled {
		return make([]float32, n), func() {}
	}
	b := convScratch.Get(n)
	return *b, func() { convScratch.Put(b) }
}

// transformFilters writes G f Gᵀ of each of the kc 3×3 filters f of w
// into u[ξ·kc + i], i being the filter's index (k·C + c).
func transformFilters(u, w []float32, kc int) {
	for i := range kc {
		transformFilter(u, i, kc, w[i*9:][:9])
	}
}

// transformFilter writes G f Gᵀ of the 3×3 filter f into u[ξ·stride+i]
// for ξ = 4·row + column, computed in float64 and rounded once.
func transformFilter(u []float32, i, stride int, f []float32) {
	var t [4][3]float64
	for j := range 3 {
		g0, g1, g2 := float64(f[j]), float64(f[3+j]), float64(f[6+j])
		t[0][j], t[1][j], t[2][j], t[3][j] = g0, (g0+g1+g2)/2, (g0-g1+g2)/2, g2
	}
	for r, row := range t {
		a, b, c := row[0], row[1], row[2]
		u[(4*r)*stride+i] = float32(a)
		u[(4*r+1)*stride+i] = float32((a + b + c) / 2)
		u[(4*r+2)*stride+i] = float32((a - b + c) / 2)
		u[(4*r+3)*stride+i] = float32(c)
	}
}

// winoPlan is one Winograd convolution call: its operands, its tiling
// and the largest number of tiles per block.
type winoPlan struct {
	g               ConvGeom
	ww              *winogradWeights
	dst, x          []float32
	bias, res       []float32
	relu            bool
	tilesH, tilesW  int
	perImage, tiles int
	block, unit     int
	all             []winoGroup // every tile's lane groups, read-only
}

// winoBlockFloats bounds a block's transformed input and products (16·C
// and 16·K floats per tile) to about 1.5 MB, inside the L2 cache.
const winoBlockFloats = 24576

func newWinoPlan(dst, x []float32, ww *winogradWeights, bias, res []float32, g ConvGeom, relu bool) *winoPlan {
	p := &winoPlan{g: g, ww: ww, dst: dst, x: x, bias: bias, res: res, relu: relu,
		tilesH: (g.OH + 1) / 2, tilesW: (g.OW + 1) / 2}
	if bias == nil {
		p.bias = make([]float32, ww.k)
	}
	p.perImage = p.tilesH * p.tilesW
	p.tiles = g.N * p.perImage
	// Blocks are whole panels and whole groups of lanes: nr is 4, 16 or
	// 32.
	p.unit = max(ww.parts[0].BLayout(1).PanelCols(), winoLanes)
	p.block = max(p.unit, winoBlockFloats/(ww.c+ww.k)/p.unit*p.unit)
	p.block = min(p.block, roundUpTo(p.tiles, p.unit))
	if c := ww.tiles.Load(); c != nil && c.g == g {
		p.all = c.gs
	} else {
		p.all = p.groups(nil, 0, p.tiles)
		ww.tiles.Store(&winoTileGroups{g: g, gs: p.all})
	}
	return p
}

// blockGroups returns the lane groups of the tiles [t0, t1), a block:
// blocks are runs of whole units (multiples of winoLanes tiles) but for
// the last, which ends at the last tile, so their groups are p.all's.
func (p *winoPlan) blockGroups(t0, t1 int) []winoGroup {
	if t0%winoLanes != 0 || (t1%winoLanes != 0 && t1 != p.tiles) {
		panic(fmt.Sprintf("cpu: Winograd block [%d, %d) of %d tiles is not made of lane groups", t0, t1, p.tiles))
	}
	return p.all[t0/winoLanes : (t1+winoLanes-1)/winoLanes]
}

// roundUpTo rounds n up to a multiple of unit.
func roundUpTo(n, unit int) int { return (n + unit - 1) / unit * unit }

// winoScratch is one goroutine's buffers for a block: the packed V_ξ and
// the products M_ξ.
type winoScratch struct {
	v, m *[]float32
}

func (p *winoPlan) getScratch() *winoScratch {
	return &winoScratch{
		v: convScratch.Get(winoPositions * p.ww.parts[0].BLayout(p.block).Size()),
		m: convScratch.Get(winoPositions * p.ww.k * p.block),
	}
}

func (s *winoScratch) put() {
	convScratch.Put(s.v)
	convScratch.Put(s.m)
}

// inputTransform writes V_ξ for the channels [c0, c1) of the tiles of the
// lane groups gs (the block's tiles, nb of them) into the block's packed
// operands v (one per ξ, each laid out as BLayout(nb)).
func (p *winoPlan) inputTransform(v []float32, gs []winoGroup, nb, c0, c1 int) {
	g := p.g
	hw := g.H * g.W
	layout := p.ww.parts[0].BLayout(nb)
	vs, nr := layout.Size(), layout.PanelCols()
	var tmp [winoPositions * winoLanes]float32
	for gi := range gs {
		gr := &gs[gi]
		col := gi * winoLanes
		if nr%winoLanes != 0 {
			// The lanes are not consecutive in the panels: transform
			// into tmp and copy.
			lanes := min(winoLanes, nb-col)
			for c := c0; c < c1; c++ {
				winoInput(p.x[c*hw:], hw, g.W, gr, tmp[:], 0, winoLanes, 1)
				for xi := range winoPositions {
					layout.WriteRow(v[xi*vs:][:vs], c, col, tmp[xi*winoLanes:][:lanes])
				}
			}
			continue
		}
		for c := c0; c < c1; {
			end := min(c1, layout.RowBlockEnd(c))
			winoInput(p.x[c*hw:], hw, g.W, gr, v[layout.Index(c, col):], nr, vs, end-c)
			c = end
		}
	}
}

// multiply computes rows [k0, k1) (k0 a multiple of the packed filter's
// RowAlign) of M_ξ = U_ξ·V_ξ for every ξ over a block of nb tiles: v
// holds the packed V_ξ, m gets the K×nb products.
func (p *winoPlan) multiply(v, m []float32, nb, k0, k1 int) {
	vs := p.ww.parts[0].BLayout(nb).Size()
	ms := p.ww.k * nb
	for xi := range winoPositions {
		gemm.SgemmPrepackedRows(&p.ww.parts[xi], k0, k1, v[xi*vs:][:vs], nb, m[xi*ms+k0*nb:][:(k1-k0)*nb], nb)
	}
}

// outputTransform writes Aᵀ M A (plus bias and residual, then the ReLU)
// of the tiles of the lane groups gs (nb tiles) for the output channels
// [k0, k1) from the block's products m.
func (p *winoPlan) outputTransform(m []float32, gs []winoGroup, nb, k0, k1 int) {
	g := p.g
	l := g.OH * g.OW
	var res []float32
	for gi := range gs {
		if p.res != nil {
			res = p.res[k0*l:]
		}
		winoOutput(m[k0*nb+gi*winoLanes:], p.ww.k*nb, nb, p.dst[k0*l:], l, g.OW, &gs[gi], p.bias[k0:], res, p.relu, k1-k0)
	}
}

// runTiles computes the tiles [t0, t1) on the calling goroutine, in
// blocks of at most p.block tiles and of near-equal sizes (a run of
// 1.1 blocks is two halves, not a block and a sliver of mostly padding).
func (p *winoPlan) runTiles(t0, t1 int, s *winoScratch) {
	if t0 >= t1 {
		return
	}
	blocks := (t1 - t0 + p.block - 1) / p.block
	per := roundUpTo((t1-t0+blocks-1)/blocks, p.unit)
	for b0 := t0; b0 < t1; b0 += per {
		b1 := min(b0+per, t1)
		gs := p.blockGroups(b0, b1)
		p.inputTransform(*s.v, gs, b1-b0, 0, p.g.C)
		p.multiply(*s.v, *s.m, b1-b0, 0, p.ww.k)
		p.outputTransform(*s.m, gs, b1-b0, 0, p.ww.k)
	}
}

// winogradForward computes dst ([N, K, OH, OW]) = the 3×3, unit-stride
// convolution of x ([N, C, H, W]) with the transformed filter ww, plus
// bias ([K] or nil) and residual ([N, K, OH, OW] or nil), then the ReLU
// when relu is set, using up to threads goroutines. The result does not
// depend on the split: see run.
func winogradForward(dst, x []float32, ww *winogradWeights, bias, residual []float32, g ConvGeom, threads int, relu bool) {
	newWinoPlan(dst, x, ww, bias, residual, g, relu).run(threads)
}

// run computes the convolution of p with up to threads goroutines, in one
// of two ways, whichever leaves the busiest goroutine the fewest panel
// products (winoSplit): each goroutine takes a contiguous run of the
// tiles, whole, with no synchronization (many tiles); or the goroutines
// share each block of tiles (few tiles, as in the 7×7 and 14×14 layers
// of a batch-1 ResNet), transforming the input split by channel and then,
// after one barrier, multiplying and transforming back split by output
// channel. Every product column and every transform is computed as on one
// goroutine, so the result is the same bits at any thread count.
func (p *winoPlan) run(threads int) {
	if p.tiles == 0 {
		return
	}
	if winoPositions*p.ww.c*p.ww.k*p.tiles < parallelMinWork {
		threads = 1
	}
	threads = max(threads, 1)
	if threads == 1 {
		s := p.getScratch()
		p.runTiles(0, p.tiles, s)
		s.put()
		return
	}
	byTiles, bounds := p.split(threads)
	if byTiles {
		parallel.Run(len(bounds)-1, func(i int) {
			s := p.getScratch()
			p.runTiles(bounds[i], bounds[i+1], s)
			s.put()
		})
		return
	}
	p.runShared(threads, bounds)
}

// runShared computes the tiles a block at a time, all goroutines working
// on each block: the input transform split by channel over threads
// goroutines, then the products and the output transform split by the
// output-channel bounds (multiples of the filter's RowAlign).
func (p *winoPlan) runShared(threads int, kBounds []int) {
	s := p.getScratch()
	defer s.put()
	blocks := (p.tiles + p.block - 1) / p.block
	per := roundUpTo((p.tiles+blocks-1)/blocks, p.unit)
	for t0 := 0; t0 < p.tiles; t0 += per {
		t1 := min(t0+per, p.tiles)
		gs := p.blockGroups(t0, t1)
		splitRange(p.ww.c, threads, func(c0, c1 int) { p.inputTransform(*s.v, gs, t1-t0, c0, c1) })
		parallel.Run(len(kBounds)-1, func(i int) {
			p.multiply(*s.v, *s.m, t1-t0, kBounds[i], kBounds[i+1])
			p.outputTransform(*s.m, gs, t1-t0, kBounds[i], kBounds[i+1])
		})
	}
}

// winoResidentWeights is the most transformed-filter floats (1 MiB) a
// goroutine keeps in its core's L2 cache from one block to the next,
// half the 2 MiB the blocking assumes.
const winoResidentWeights = 1 << 18

// split chooses how threads goroutines share p (see run) and returns the
// bounds of their parts: tiles (byTiles) or output channels, parts+1
// increasing values from 0. It compares the busiest goroutine's work in
// panel products (NR columns by MR rows over all C), counting beside the
// products what a block reads from outside the core's cache, each panel
// costed as one product, as the GEMM's splitRows does: the filter panels
// of its rows, again for every block unless they stay in L2
// (winoResidentWeights), and, when the goroutines share each block, the
// transformed-input panels the others wrote. Ties go to the tiles, which
// need no synchronization.
func (p *winoPlan) split(threads int) (byTiles bool, bounds []int) {
	nr, mr := p.ww.parts[0].BLayout(1).PanelCols(), p.ww.parts[0].RowAlign()
	// filterReads is the filter panels a goroutine with rows row panels
	// reads over blocks blocks.
	filterReads := func(blocks, rows int) int {
		if winoPositions*rows*mr*p.ww.c <= winoResidentWeights {
			blocks = 1
		}
		return blocks * rows
	}
	rowPanels := (p.ww.k + mr - 1) / mr
	tiles := balancedBounds(p.tiles, threads, p.unit)
	tileCost := 0
	for i := range len(tiles) - 1 {
		cols, blocks := p.paddedTiles(tiles[i], tiles[i+1], nr)
		tileCost = max(tileCost, cols/nr*rowPanels+filterReads(blocks, rowPanels))
	}
	ks := balancedBounds(p.ww.k, threads, mr)
	rows := 0
	for i := range len(ks) - 1 {
		rows = max(rows, (ks[i+1]-ks[i]+mr-1)/mr)
	}
	cols, blocks := p.paddedTiles(0, p.tiles, nr)
	shareCost := cols/nr*rows + filterReads(blocks, rows) + cols/nr*(len(ks)-2)/(len(ks)-1)
	if tileCost <= shareCost {
		return true, tiles
	}
	return false, ks
}

// paddedTiles returns the number of product columns runTiles computes for
// the tiles [t0, t1), each block's tiles rounded up to whole panels of
// nr, and the number of blocks.
func (p *winoPlan) paddedTiles(t0, t1, nr int) (cols, blocks int) {
	if t0 >= t1 {
		return 0, 0
	}
	blocks = (t1 - t0 + p.block - 1) / p.block
	per := roundUpTo((t1-t0+blocks-1)/blocks, p.unit)
	for b0 := t0; b0 < t1; b0 += per {
		cols += roundUpTo(min(per, t1-b0), nr)
	}
	return cols, blocks
}

// balancedBounds splits [0, n) into up to parts runs whose bounds are
// multiples of unit (but the last, n), as near equal as that allows, and
// returns the bounds: 0, ..., n, without empty runs.
func balancedBounds(n, parts, unit int) []int {
	units := (n + unit - 1) / unit
	parts = max(min(parts, units), 1)
	bounds := make([]int, 0, parts+1)
	bounds = append(bounds, 0)
	for i := 1; i < parts; i++ {
		bounds = append(bounds, i*units/parts*unit)
	}
	return append(bounds, n)
}

// winogradFits reports whether the gather and scatter offsets of the
// transform kernels (int32) reach every element of the input and the
// output.
func winogradFits(g ConvGeom, k int) bool {
	const limit = 1 << 31
	return int64(g.N)*int64(g.C)*int64(g.H)*int64(g.W) < limit &&
		int64(g.N)*int64(k)*int64(g.OH)*int64(g.OW) < limit
}

// splitRange calls f on up to parts contiguous, near-equal ranges of
// [0, n), on up to parts goroutines, and waits for them.
func splitRange(n, parts int, f func(lo, hi int)) {
	parts = max(min(parts, n), 1)
	parallel.Run(parts, func(i int) { f(i*n/parts, (i+1)*n/parts) })
}

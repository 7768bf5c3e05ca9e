package gemm

import "github.com/emberml/ember/tensor/internal/isa"

// fitCaches returns a copy of kern whose cache blocks fit the caches cs
// describes, the BLIS rules: a packed MC×KC block of A takes at most half
// the L2 (MC shrinks, in whole MR panels) and a packed KC×NC block of B,
// which every goroutine of a parallel product reads, at most half the
// last-level cache (NC shrinks, in whole NR panels), and parallel products
// share at most that half at once (sharedElems). The kernel's own
// blocks were measured on one machine and stay where the caches hold them
// (as they do on the Xeons and EPYCs measured); a cache the CPU does not
// report bounds nothing. KC is left as tuned: it fixes the packed layout
// that PackA and the kernels sharing B panels agree on, and on the Zen 4
// test machine (32 KiB L1d, where a 384-deep 32-wide B panel overflows
// L1) KC 256 and 384 timed within noise of each other.
func fitCaches(kern kernel, cs isa.Caches) *kernel {
	const f32 = 4
	if cs.L2 > 0 {
		if fit := cs.L2 / 2 / (f32 * kern.kc) / kern.mr * kern.mr; fit < kern.mc {
			kern.mc = max(kern.mr, fit)
		}
	}
	if cs.L3 > 0 {
		kern.sharedElems = max(kern.kc*kern.nr, cs.L3/2/f32)
		if fit := cs.L3 / 2 / (f32 * kern.kc) / kern.nr * kern.nr; fit < kern.nc {
			kern.nc = max(kern.nr, fit)
		}
	}
	return &kern
}

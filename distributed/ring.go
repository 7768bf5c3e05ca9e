package distributed

import (
	"sync/atomic"
	"time"

	"github.com/emberml/ember/tensor"
)

// The ring collectives: each rank sends only to the next rank and receives
// only from the previous one, every link carrying data in both directions
// at once, so the bytes per link are the minimum and large tensors move at
// link bandwidth. One goroutine sends and one receives for all the steps,
// and each chunk received at one step goes on at the next as soon as it
// has been processed (the sender waits on the receiver's progress counter),
// so the steps are pipelined chunk by chunk.

// ringAllReduce runs the bandwidth-optimal ring: size-1 reduce-scatter
// steps leave each rank with one fully reduced segment, size-1 all-gather
// steps pass those segments round. One goroutine sends to the next rank and
// one receives from the previous rank for all 2(size-1) steps, so the steps
// are pipelined chunk by chunk: the segment sent at step k+1 is the one
// received at step k, and each of its chunks goes out as soon as it has
// been reduced (or, while gathering, stored), while later chunks of step k
// are still arriving. v is reduced in place, without copies beyond the
// socket reads (the all-gather phase's data is read straight into v); every
// rank reduces the same elements in the same order, so the results are
// bit-identical. For Avg each segment is divided by the size once, by the
// rank that completes it, before it goes round: v holds the average.
func (g *TCPGroup) ringAllReduce(seq uint64, v vec, op ReduceOp, deadline time.Time) error {
	n, s := v.len(), g.size
	seg := func(i int) (int, int) {
		i = mod(i, s)
		return i * n / s, (i + 1) * n / s
	}
	steps := 2 * (s - 1)
	// Segment sent and received at each step: reduce-scatter steps first,
	// then all-gather steps.
	sendSeg := func(k int) (int, int) {
		if k < s-1 {
			return seg(g.rank - k)
		}
		return seg(g.rank + 1 - (k - (s - 1)))
	}
	recvSeg := func(k int) (int, int) {
		if k < s-1 {
			return seg(g.rank - k - 1)
		}
		return seg(g.rank - (k - (s - 1)))
	}
	rp := newRingProgress(g, steps, func(k int) int {
		lo, hi := recvSeg(k)
		return hi - lo
	})
	next, prev := g.peers[(g.rank+1)%s], g.peers[(g.rank-1+s)%s]
	if nativeLittle {
		// The all-gather phase's data is final: prev's read loop writes
		// it straight into v instead of a buffer the receiver copies from.
		// Region j is the segment this rank reduces into at
		// reduce-scatter step j-1 (none for j = 0), so it is armed when
		// that step ends.
		sk := &sink{op: opAllReduce, seq: seq, skip: rp.base[s-1] * v.elemSize(), armed: 1}
		for k := s - 1; k < steps; k++ {
			lo, hi := recvSeg(k)
			sk.regions = append(sk.regions, sliceBytes(v.slice(lo, hi)))
		}
		prev.openSink(g.gid, sk)
		defer prev.closeSink(g.gid)
	}
	step := max(g.chunk/v.elemSize(), 1)
	h := frameHeader{op: opAllReduce, seq: seq, dtype: byte(v.dt)}
	sender := func() error {
		for k := range steps {
			lo, hi := sendSeg(k)
			if lo == hi {
				h.end = true
				if err := g.send(next, h, nil, deadline); err != nil {
					return err
				}
				continue
			}
			for at := lo; at < hi; at += step {
				end := min(at+step, hi)
				h.end = end == hi // each step's segment is one message
				if k > 0 {
					// Elements [lo, end) of this segment were received
					// at step k-1; wait until they are processed.
					if err := rp.await(k-1, end-lo); err != nil {
						return err
					}
				}
				if err := g.send(next, h, v.encode(at, end), deadline); err != nil {
					return err
				}
			}
		}
		return nil
	}
	receiver := func() error {
		for k := range steps {
			lo, hi := recvSeg(k)
			use := v.decode
			switch {
			case k == s-2 && op == Avg:
				// The segment is final here: its owner divides it
				// once, before it goes round, so every rank gets the
				// same quotients for a 1/size share of the divisions.
				use = func(lo, hi int, b []byte) {
					v.reduceBytes(lo, hi, b, op)
					vec{v.dt, v.slice(lo, hi)}.divide(s)
				}
			case k < s-1:
				use = func(lo, hi int, b []byte) { v.reduceBytes(lo, hi, b, op) }
			}
			err := g.recvRange(prev, opAllReduce, seq, v.dt, lo, hi, deadline, func(clo, chi int, b []byte) {
				use(clo, chi, b)
				rp.set(k, chi-lo)
			})
			if err != nil {
				return err
			}
			if nativeLittle && k < s-1 {
				prev.armSink(g.gid, k+2)
			}
		}
		return nil
	}
	return g.parallel(sender, receiver)
}

// mod returns i modulo n in [0, n).
func mod(i, n int) int { return ((i % n) + n) % n }

// byRank returns every rank's parts: own for this rank, other(j) for
// each other rank j.
func (g *TCPGroup) byRank(own parts, other func(j int) parts) []parts {
	ps := make([]parts, g.size)
	for j := range ps {
		if j == g.rank {
			ps[j] = own
		} else {
			ps[j] = other(j)
		}
	}
	return ps
}

// ringProgress counts the elements a ring's receiver has received and
// processed over all its steps, for the sender to wait on.
type ringProgress struct {
	g      *TCPGroup
	done   atomic.Int64
	notify chan struct{}
	base   []int // done's value when each step starts
}

// newRingProgress returns the counter for steps receiving recvLen(k)
// elements each.
func newRingProgress(g *TCPGroup, steps int, recvLen func(k int) int) *ringProgress {
	rp := &ringProgress{g: g, notify: make(chan struct{}, 1), base: make([]int, steps+1)}
	for k := range steps {
		rp.base[k+1] = rp.base[k] + recvLen(k)
	}
	return rp
}

// set records that the first n elements of step k are processed.
func (rp *ringProgress) set(k, n int) {
	rp.done.Store(int64(rp.base[k] + n))
	select {
	case rp.notify <- struct{}{}:
	default:
	}
}

// await waits until the first n elements of step k are processed, or
// returns the group's failure.
func (rp *ringProgress) await(k, n int) error {
	for want := int64(rp.base[k] + n); rp.done.Load() < want; {
		select {
		case <-rp.notify:
		case <-rp.g.root.done:
			return rp.g.failure()
		}
	}
	return nil
}

// ringSend sends out(k) to p at each step k of a ring whose receiver
// reports to rp: step 0's at once (this rank's own data), each later
// step's (what the receiver got at the step before) chunk by chunk as
// the receiver processes it.
func (g *TCPGroup) ringSend(p *peer, op byte, seq uint64, dt tensor.DType, rp *ringProgress, out func(k int) parts, deadline time.Time) error {
	for k := range len(rp.base) - 1 {
		var err error
		if k == 0 {
			err = g.sendParts(p, op, seq, dt, out(k), deadline)
		} else {
			err = g.sendForwarded(p, op, seq, dt, out(k), rp, k, deadline)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// sendForwarded sends ps, what the receiver got at step k-1, to p as step
// k's message, each chunk once the receiver has processed it.
func (g *TCPGroup) sendForwarded(p *peer, op byte, seq uint64, dt tensor.DType, ps parts, rp *ringProgress, k int, deadline time.Time) error {
	h := frameHeader{op: op, seq: seq, dtype: byte(dt), end: true}
	n := ps.len()
	if n == 0 {
		return g.send(p, h, nil, deadline)
	}
	step := max(g.chunk/dt.Size(), 1)
	for at := 0; at < n; at += step {
		end := min(at+step, n)
		if err := rp.await(k-1, end); err != nil {
			return err
		}
		pieces := ps.sub(at, end)
		for i, v := range pieces {
			h.end = end == n && i == len(pieces)-1
			if err := g.send(p, h, v.encode(0, v.len()), deadline); err != nil {
				return err
			}
		}
	}
	return nil
}

// ringReduceScatter writes into dst the combination by op of every rank's
// contribution to this rank's share, around the ring: this rank's
// contributions to rank j's share are send(j) (own for itself). At step k
// (0 ≤ k < size-1) a rank sends the partial result for rank r-k-1 and
// receives the one for rank r-k-2 from the previous rank, adding its own
// contribution before passing it on, so rank j's share is combined in the
// order j+1, j+2, …, j-1, j (mod size): the ring all-reduce's order for
// the segment that rank j-1 completes, so ZeroOptimizer's blocks (rank j
// owns block j+1) get the bits of DataParallel's ring. Partial results
// are built in work(j) (a vec of rank j's share length, for every rank
// but this one and the previous), the last straight in dst, divided by
// the size for Avg as it is completed. The memory of the parts, work and
// dst must not change until it returns; dst must not share memory with
// own.
func (g *TCPGroup) ringReduceScatter(op byte, seq uint64, dt tensor.DType, send func(j int) parts, own parts, work func(j int) vec, dst vec, rop ReduceOp, deadline time.Time) error {
	s, r := g.size, g.rank
	contrib := g.byRank(own, send)
	sendShare := func(k int) int { return mod(r-k-1, s) }
	recvShare := func(k int) int { return mod(r-k-2, s) }
	partial := make([]vec, s)
	for k := range s - 2 {
		partial[recvShare(k)] = work(recvShare(k))
	}
	partial[r] = dst
	steps := s - 1
	rp := newRingProgress(g, steps, func(k int) int { return contrib[recvShare(k)].len() })
	next, prev := g.peers[mod(r+1, s)], g.peers[mod(r-1, s)]
	es := dt.Size()
	sender := func() error {
		return g.ringSend(next, op, seq, dt, rp, func(k int) parts {
			if k == 0 {
				return contrib[sendShare(k)]
			}
			return parts{partial[sendShare(k)]}
		}, deadline)
	}
	receiver := func() error {
		for k := range steps {
			j := recvShare(k)
			into, mine := partial[j], contrib[j]
			div := 1
			if k == steps-1 && rop == Avg {
				div = s // the share is complete: divide in the same pass
			}
			err := g.recvRange(prev, op, seq, dt, 0, mine.len(), deadline, func(lo, hi int, b []byte) {
				mine.overlap(lo, hi, func(v vec, a, e, at int) {
					if a < e {
						into.combine(lo+at/es, lo+at/es+e-a, b[at:at+(e-a)*es], vec{v.dt, v.slice(a, e)}, rop, div)
					}
				})
				rp.set(k, hi)
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	return g.parallel(sender, receiver)
}

// ringAllGather sends this rank's share, shares[rank], to every rank and
// receives every other rank j's into shares[j], around the ring: at step
// k (0 ≤ k < size-1) a rank sends the share of rank r-k and receives that
// of rank r-k-1, which it passes on at the next step. The previous rank's
// read loop writes the shares straight into their memory where the frames
// fit. The memory of the parts must not change until it returns.
func (g *TCPGroup) ringAllGather(op byte, seq uint64, dt tensor.DType, shares []parts, deadline time.Time) error {
	s, r := g.size, g.rank
	sendShare := func(k int) int { return mod(r-k, s) }
	recvShare := func(k int) int { return mod(r-k-1, s) }
	steps := s - 1
	rp := newRingProgress(g, steps, func(k int) int { return shares[recvShare(k)].len() })
	next, prev := g.peers[mod(r+1, s)], g.peers[mod(r-1, s)]
	if nativeLittle {
		var regions [][]byte
		for k := range steps {
			regions = append(regions, shares[recvShare(k)].regions()...)
		}
		if len(regions) > 0 {
			prev.openSink(g.gid, &sink{op: op, seq: seq, regions: regions, armed: len(regions)})
			defer prev.closeSink(g.gid)
		}
	}
	sender := func() error {
		return g.ringSend(next, op, seq, dt, rp, func(k int) parts { return shares[sendShare(k)] }, deadline)
	}
	receiver := func() error {
		for k := range steps {
			ps := shares[recvShare(k)]
			err := g.recvRange(prev, op, seq, dt, 0, ps.len(), deadline, func(lo, hi int, b []byte) {
				ps.decode(lo, hi, b)
				rp.set(k, hi)
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	return g.parallel(sender, receiver)
}

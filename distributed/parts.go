package distributed

import (
	"time"

	"github.com/emberml/ember/tensor"
)

// parts is one logical vector kept in pieces of other memory (the
// elements of several tensors, one after the other), all of one dtype.
// ZeroOptimizer sends gradients and parameters straight from, and
// receives parameters straight into, the tensors that hold them.
type parts []vec

// len returns the number of elements.
func (ps parts) len() int {
	n := 0
	for _, p := range ps {
		n += p.len()
	}
	return n
}

// overlap calls fn for each part that holds some of elements [lo, hi) of
// the logical vector, with the range [a, e) of that part's elements and
// the byte offset at which they start counting from lo.
func (ps parts) overlap(lo, hi int, fn func(p vec, a, e, at int)) {
	off := 0
	for _, p := range ps {
		n := p.len()
		if lo < off+n && hi > off {
			a, e := max(lo, off), min(hi, off+n)
			fn(p, a-off, e-off, (a-lo)*p.elemSize())
		}
		off += n
	}
}

// sub returns the pieces of elements [lo, hi) of the logical vector,
// clipped to its length (none when the range is empty).
func (ps parts) sub(lo, hi int) parts {
	var out parts
	ps.overlap(lo, hi, func(p vec, a, e, _ int) {
		if a < e {
			out = append(out, vec{p.dt, p.slice(a, e)})
		}
	})
	return out
}

// decode overwrites elements [lo, hi) of the logical vector with the
// little-endian bytes b.
func (ps parts) decode(lo, hi int, b []byte) {
	ps.overlap(lo, hi, func(p vec, a, e, at int) {
		p.decode(a, e, b[at:at+(e-a)*p.elemSize()])
	})
}

// copyOut copies elements [lo, hi) of the logical vector into b, in
// native byte order (for shared memory, where every reader is on this
// machine).
func (ps parts) copyOut(lo, hi int, b []byte) {
	ps.overlap(lo, hi, func(p vec, a, e, at int) {
		es := p.elemSize()
		copy(b[at:at+(e-a)*es], sliceBytes(p.data)[a*es:e*es])
	})
}

// regions returns the parts' memory for a sink.
func (ps parts) regions() [][]byte {
	r := make([][]byte, 0, len(ps))
	for _, p := range ps {
		if p.len() > 0 {
			r = append(r, sliceBytes(p.data))
		}
	}
	return r
}

// sendParts sends the parts to p as one message, each in frames of at
// most g.chunk bytes (one empty frame when there are no elements), the
// last marked as its end.
func (g *TCPGroup) sendParts(p *peer, op byte, seq uint64, dt tensor.DType, ps parts, deadline time.Time) error {
	h := frameHeader{op: op, seq: seq, dtype: byte(dt), end: true}
	n := ps.len()
	if n == 0 {
		return g.send(p, h, nil, deadline)
	}
	step := max(g.chunk/dt.Size(), 1)
	sent := 0
	for _, v := range ps {
		for at := 0; at < v.len(); at += step {
			hi := min(at+step, v.len())
			sent += hi - at
			h.end = sent == n
			if err := g.send(p, h, v.encode(at, hi), deadline); err != nil {
				return err
			}
		}
	}
	return nil
}

// recvParts receives what p sends with sendParts into dst; where the
// sender's frames fall inside one part, p's read loop writes them there
// directly.
func (g *TCPGroup) recvParts(p *peer, op byte, seq uint64, dt tensor.DType, dst parts, deadline time.Time) error {
	if nativeLittle {
		if r := dst.regions(); len(r) > 0 {
			p.openSink(g.gid, &sink{op: op, seq: seq, regions: r, armed: len(r)})
			defer p.closeSink(g.gid)
		}
	}
	return g.recvRange(p, op, seq, dt, 0, dst.len(), deadline, dst.decode)
}

// reduceScatterPartsAsync writes into dst the combination by op of every
// rank's contribution to this rank's share: this rank's contributions to
// rank j's share are the pieces send(j) (own for itself); every rank's
// share has dst's length. spare holds size-2 buffers of dst's length for
// received or partial contributions. Ranks of one machine go through
// shared memory, ranks spread over machines in two levels
// (hierReduceScatter), others over TCP (reduceScatterTCP). The memory of
// the parts and buffers must not change until the Work completes.
func (g *TCPGroup) reduceScatterPartsAsync(dt tensor.DType, send func(j int) parts, own parts, spare []vec, dst vec, op ReduceOp) Work {
	return g.submit(func(deadline time.Time) error {
		switch {
		case g.shm != nil:
			return g.shmReduceScatterParts(opShardReduceScatter, dt, send, own, dst, op, deadline)
		case g.hier != nil:
			return g.hierReduceScatter(opShardReduceScatter, dt, send, own, spare, dst, op, deadline)
		}
		return g.reduceScatterTCP(opShardReduceScatter, g.nextSeq(), dt, send, own, spare, dst, op, deadline)
	})
}

// reduceScatterTCP is reduceScatterPartsAsync over TCP, operation seq:
// shares of more than g.direct bytes in all go round the ring
// (ringReduceScatter, in its order); smaller ones are exchanged directly,
// the lowest-ranked peer's contribution received straight into dst and
// the rest combined into it in rank order. opc names the collective it
// serves.
func (g *TCPGroup) reduceScatterTCP(opc byte, seq uint64, dt tensor.DType, send func(j int) parts, own parts, spare []vec, dst vec, op ReduceOp, deadline time.Time) error {
	buf := func(int) vec {
		v := spare[0]
		spare = spare[1:]
		return v
	}
	if g.ringRoute(dst.len() * g.size * dt.Size()) {
		return g.ringReduceScatter(opc, seq, dt, send, own, buf, dst, op, deadline)
	}
	first := 0
	if g.rank == 0 {
		first = 1
	}
	recv := make([]vec, g.size)
	for j := range recv {
		if j != g.rank && j != first {
			recv[j] = buf(j)
		}
	}
	into := func(j int) parts {
		if j == first {
			return parts{dst}
		}
		return parts{recv[j]}
	}
	if err := g.exchangeParts(opc, seq, dt, send, into, deadline); err != nil {
		return err
	}
	for j := range g.size {
		off := 0
		switch {
		case g.size == 1:
			for _, v := range own {
				dst.decode(off, off+v.len(), v.encode(0, v.len()))
				off += v.len()
			}
		case j == first:
		case j == g.rank:
			for _, v := range own {
				dst.reduceVec(off, off+v.len(), v, op)
				off += v.len()
			}
		default:
			dst.reduceVec(0, dst.len(), recv[j], op)
		}
	}
	if op == Avg {
		dst.divide(g.size)
	}
	return nil
}

// ringRoute reports whether a reduce-scatter or all-gather of total bytes
// over TCP goes round the ring rather than exchanging directly: past
// g.direct bytes, where the direct exchange's N-1 transfers at once per
// rank share one link and the ring's pipelined steps use both directions
// of every link.
func (g *TCPGroup) ringRoute(total int) bool { return g.size > 1 && total > g.direct }

// allGatherPartsAsync sends own to every peer and receives every peer j's
// share into into(j): through shared memory between ranks of one machine,
// in two levels for ranks spread over machines (hierAllGather), else over
// TCP, round the ring when the shares total more than g.direct bytes. The
// memory of the parts must not change until the Work completes.
func (g *TCPGroup) allGatherPartsAsync(dt tensor.DType, own parts, into func(j int) parts) Work {
	return g.submit(func(deadline time.Time) error {
		// The shares may differ in length; their total, on which the
		// route hangs, is the same on every rank.
		shares := g.byRank(own, into)
		switch {
		case g.shm != nil:
			return g.shmAllGatherParts(opShardAllGather, dt, own, shares, partsLens(shares), deadline)
		case g.hier != nil:
			return g.hierAllGather(opShardAllGather, dt, shares, deadline)
		}
		return g.allGatherTCP(opShardAllGather, g.nextSeq(), dt, shares, deadline)
	})
}

// allGatherTCP is allGatherPartsAsync over TCP, operation seq, with every
// rank's share in shares (this rank's the one it sends); opc names the
// collective it serves.
func (g *TCPGroup) allGatherTCP(opc byte, seq uint64, dt tensor.DType, shares []parts, deadline time.Time) error {
	total := 0
	for _, n := range partsLens(shares) {
		total += n
	}
	if g.ringRoute(total * dt.Size()) {
		return g.ringAllGather(opc, seq, dt, shares, deadline)
	}
	own := shares[g.rank]
	return g.exchangeParts(opc, seq, dt, func(int) parts { return own }, func(j int) parts { return shares[j] }, deadline)
}

// partsLens returns the number of elements of each of ps.
func partsLens(ps []parts) []int {
	lens := make([]int, len(ps))
	for j, p := range ps {
		lens[j] = p.len()
	}
	return lens
}

// exchangeParts sends send(j) to every peer j and receives from it into
// into(j), all at once.
func (g *TCPGroup) exchangeParts(op byte, seq uint64, dt tensor.DType, send, into func(j int) parts, deadline time.Time) error {
	var fns []func() error
	for _, p := range g.peers {
		if p == nil {
			continue
		}
		out, dst := send(p.rank), into(p.rank)
		fns = append(fns,
			func() error { return g.sendParts(p, op, seq, dt, out, deadline) },
			func() error { return g.recvParts(p, op, seq, dt, dst, deadline) })
	}
	return g.parallel(fns...)
}

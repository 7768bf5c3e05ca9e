package distributed

import (
	"fmt"
	"sync"
	"time"

	"github.com/emberml/ember/tensor"
)

// directLimit is the largest AllReduce payload (bytes) that ranks without
// shared memory send over a tree (or for 2 ranks exchange directly, see
// treeMinRanks); larger ones use the ring. Broadcast likewise sends up to
// this much down a tree and more along a chain, and ReduceScatter and
// AllGather exchange up to this much in all directly and more round the
// ring.
const directLimit = 256 << 10

// treeMinRanks is the smallest group whose all-reduces up to directLimit
// go over a binomial tree (at most ⌈log2 N⌉ messages per rank each way, in
// 2⌈log2 N⌉ steps) rather than the direct exchange (N-1 messages per rank
// in one step). From 3 ranks the messages saved outweigh the steps added
// wherever ranks share CPUs: 4 goroutine ranks on 2 cores all-reduce 1
// KiB in 109 µs against 353, 16 ranks in 374 µs against 4,795, and 256
// KiB in 3.8 ms against 45 (BenchmarkSmallAllReduceOverTCP). 2 ranks
// exchange in one step.
const treeMinRanks = 3

// cmaMinBytes is the smallest all-reduce of ordinary tensors that reads and
// writes the peers' tensors with cross-memory attach (cma.go): below it the
// system calls, two per peer and window, cost about as much as staging
// the tensor through the slots or more (BenchmarkSmallAllReduceProcesses,
// 2 processes: 64 bytes in 20–65 µs in place against 16–32 staged, 64 KiB
// in 23–57 against 37–43, 256 KiB in 68–96 against 109–172; 4 processes on
// 2 cores favour staging up to 1 MiB).
const cmaMinBytes = 128 << 10

// parallel runs fns concurrently and returns the first error. The first
// failure aborts the group so the others stop waiting at once.
func (g *TCPGroup) parallel(fns ...func() error) error {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for _, fn := range fns {
		wg.Go(func() {
			if err := fn(); err != nil {
				once.Do(func() { first = err })
				g.abort(err)
			}
		})
	}
	wg.Wait()
	return first
}

// sendRange sends elements [lo, hi) of v to p as one message, in frames
// of at most g.chunk bytes (one empty frame when the range is empty), the
// last marked as its end.
func (g *TCPGroup) sendRange(p *peer, op byte, seq uint64, v vec, lo, hi int, deadline time.Time) error {
	h := frameHeader{op: op, seq: seq, dtype: byte(v.dt), end: lo == hi}
	if lo == hi {
		return g.send(p, h, nil, deadline)
	}
	step := max(g.chunk/v.elemSize(), 1)
	for at := lo; at < hi; at += step {
		h.end = at+step >= hi
		if err := g.send(p, h, v.encode(at, min(at+step, hi)), deadline); err != nil {
			return err
		}
	}
	return nil
}

// recvRange receives the elements [lo, hi) that p sends as one message
// (sendRange) and hands each piece to use(lo, hi, bytes) as it arrives.
// The sender's chunk size need not match ours; a message that ends before
// hi or goes on past it (a tensor of another shape) is an error at once.
func (g *TCPGroup) recvRange(p *peer, op byte, seq uint64, dt tensor.DType, lo, hi int, deadline time.Time, use func(lo, hi int, b []byte)) error {
	es := dt.Size()
	if lo == hi {
		_, _, end, err := g.recv(p, op, seq, byte(dt), 0, es, deadline)
		if err == nil && !end {
			err = messageLength(p, op, seq, 0, 0, false)
		}
		return err
	}
	for at := lo; at < hi; {
		b, inPlace, end, err := g.recv(p, op, seq, byte(dt), (hi-at)*es, es, deadline)
		if err != nil {
			return err
		}
		k := len(b) / es
		use(at, at+k, b)
		if !inPlace {
			g.releaseBuf(b)
		}
		at += k
		if end != (at == hi) {
			return messageLength(p, op, seq, at-lo, hi-lo, end)
		}
	}
	return nil
}

// messageLength is the error of a message from p that ended after got
// elements where this rank expects want (ended), or did not end with them.
func messageLength(p *peer, op byte, seq uint64, got, want int, ended bool) error {
	err := fmt.Errorf("its message goes on past the %d elements this rank expects (tensors must have the same shape on every rank)", want)
	if ended {
		err = fmt.Errorf("its message ended after %d elements where this rank expects %d (tensors must have the same shape on every rank)", got, want)
	}
	return &PeerError{Op: opName(op), Seq: seq, Rank: p.global, Reporter: -1, Err: err}
}

// recvVec receives a whole vec of n elements of dtype dt from p.
func (g *TCPGroup) recvVec(p *peer, op byte, seq uint64, dt tensor.DType, n int, deadline time.Time) (vec, error) {
	v := newVec(dt, n)
	err := g.recvRange(p, op, seq, dt, 0, n, deadline, v.decode)
	return v, err
}

// exchange sends out[j] to every peer j (out(j) is called once per peer)
// and receives from every peer j a vec of n elements of dtype dt; the
// result holds nil vecs at this rank's index.
func (g *TCPGroup) exchange(op byte, seq uint64, dt tensor.DType, n int, out func(j int) vec, deadline time.Time) ([]vec, error) {
	got := make([]vec, g.size)
	var fns []func() error
	for _, p := range g.peers {
		if p == nil {
			continue
		}
		v := out(p.rank)
		fns = append(fns,
			func() error { return g.sendRange(p, op, seq, v, 0, v.len(), deadline) },
			func() error {
				var err error
				got[p.rank], err = g.recvVec(p, op, seq, dt, n, deadline)
				return err
			})
	}
	return got, g.parallel(fns...)
}

// reduceInRankOrder combines the vecs of ranks 0..size-1 (own stands for
// this rank's) in rank order, so that every rank computes the same bits.
func (g *TCPGroup) reduceInRankOrder(got []vec, own vec, op ReduceOp) vec {
	pick := func(j int) vec {
		if j == g.rank {
			return own
		}
		return got[j]
	}
	acc := pick(0).clone()
	for j := 1; j < g.size; j++ {
		acc.reduceVec(0, acc.len(), pick(j), op)
	}
	return acc
}

// nextSeq numbers a collective.
func (g *TCPGroup) nextSeq() uint64 {
	g.seq++
	return g.seq
}

// checkRoot panics unless r is a rank of the group.
func (g *TCPGroup) checkRank(op, what string, r int) {
	if r < 0 || r >= g.size {
		panic(fmt.Sprintf("distributed.%s: %s rank %d outside [0, %d)", op, what, r, g.size))
	}
}

// checkList panics unless ts holds Size() tensors of ref's shape and dtype.
func (g *TCPGroup) checkList(op string, ts []*tensor.Tensor, ref *tensor.Tensor) {
	checkTensorList(op, g.size, ts, ref)
}

// checkTensorList panics unless ts holds size tensors of ref's shape and
// dtype.
func checkTensorList(op string, size int, ts []*tensor.Tensor, ref *tensor.Tensor) {
	if len(ts) != size {
		panic(fmt.Sprintf("distributed.%s: %d tensors, want one per rank (%d)", op, len(ts), size))
	}
	for j, t := range ts {
		checkDType(op, t)
		if t.DType() != ref.DType() || !sameShape(t.Shape(), ref.Shape()) {
			panic(fmt.Sprintf("distributed.%s: tensor %d is %s%v, want %s%v like the others", op, j, t.DType(), t.Shape(), ref.DType(), ref.Shape()))
		}
	}
}

// sameShape reports whether two shapes are equal.
func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// AllReduce implements ProcessGroup.
func (g *TCPGroup) AllReduce(t *tensor.Tensor, op ReduceOp) error {
	return wait(g.AllReduceAsync(t, op))
}

// AllReduceAsync implements ProcessGroup.
func (g *TCPGroup) AllReduceAsync(t *tensor.Tensor, op ReduceOp) Work {
	checkDType("AllReduce", t)
	checkReduceOp("AllReduce", op, t)
	return g.submit(func(deadline time.Time) error {
		seq := g.nextSeq()
		v := hostVec(t)
		n := v.len()
		divided := false
		if g.size > 1 {
			var err error
			if g.shm != nil {
				// Every size: a round through shared memory takes a few
				// microseconds where a message over loopback TCP takes
				// tens (BenchmarkSmallAllReduceProcesses).
				if reg, off := g.shm.heap.find(sliceBytes(v.data)); reg != nil {
					err = g.shmSharedAllReduce(seq, v, reg, off, op, deadline)
				} else if g.shm.cma && n*v.elemSize() >= g.shm.cmaFrom {
					err = g.cmaAllReduce(seq, v, op, deadline)
				} else {
					err = g.shmAllReduce(seq, v, op, deadline)
				}
				divided = true
			} else if g.hier != nil {
				err = g.hierAllReduce(v, op, deadline)
				divided = true
			} else {
				v, divided, err = g.allReduceTCP(seq, v, op, deadline)
			}
			if err != nil {
				return err
			}
		}
		if op == Avg && !divided {
			v.divide(g.size)
		}
		v.store(t)
		return nil
	})
}

// allReduceTCP all-reduces v over TCP by the route its size picks: the
// ring past g.direct bytes, else the binomial tree (from g.treeMin ranks)
// or the direct exchange. It returns the result (v, or a new vec from the
// direct exchange) and whether it is already divided for Avg.
func (g *TCPGroup) allReduceTCP(seq uint64, v vec, op ReduceOp, deadline time.Time) (vec, bool, error) {
	n := v.len()
	switch {
	case n*v.elemSize() > g.direct && n >= g.size:
		return v, true, g.ringAllReduce(seq, v, op, deadline)
	case g.size >= g.treeMin:
		return v, false, g.treeAllReduce(seq, v, op, deadline)
	}
	got, err := g.exchange(opAllReduce, seq, v.dt, n, func(int) vec { return v }, deadline)
	if err != nil {
		return v, false, err
	}
	return g.reduceInRankOrder(got, v, op), false, nil
}

// Broadcast implements ProcessGroup.
func (g *TCPGroup) Broadcast(t *tensor.Tensor, root int) error {
	return wait(g.BroadcastAsync(t, root))
}

// BroadcastAsync implements ProcessGroup.
func (g *TCPGroup) BroadcastAsync(t *tensor.Tensor, root int) Work {
	checkDType("Broadcast", t)
	g.checkRank("Broadcast", "root", root)
	return g.submit(func(deadline time.Time) error {
		seq := g.nextSeq()
		if g.size == 1 {
			return nil
		}
		// The tensor's own storage where it is contiguous (the others
		// receive straight into it), else a copy stored back afterwards.
		v := hostVec(t)
		var err error
		switch nb := v.len() * v.elemSize(); {
		case g.shm != nil:
			err = g.shmBroadcast(seq, v, root, deadline)
		case nb <= g.direct || nb == 0:
			err = g.treeBroadcast(seq, v, root, deadline)
		default:
			err = g.chainBroadcast(seq, v, root, deadline)
		}
		if err == nil && g.rank != root {
			v.store(t)
		}
		return err
	})
}

// chainBroadcast passes root's v along the ranks numbered from root, each
// chunk forwarded as soon as it arrives, so every link carries the tensor
// once and a large broadcast takes about one tensor's time on a link
// whatever the size of the group (root alone would send it N-1 times).
// Every rank first announces itself to the next with an empty frame: a
// rank that times out on its predecessor waits for that one's own abort,
// which names the silent rank further up the chain.
func (g *TCPGroup) chainBroadcast(seq uint64, v vec, root int, deadline time.Time) error {
	q := (g.rank - root + g.size) % g.size
	var next *peer
	if q+1 < g.size {
		next = g.peers[(g.rank+1)%g.size]
	}
	h := frameHeader{op: opBroadcast, seq: seq, dtype: byte(v.dt)}
	if next != nil {
		if err := g.send(next, h, nil, deadline); err != nil {
			return err
		}
	}
	n, es := v.len(), v.elemSize()
	if q == 0 {
		return g.sendRange(next, opBroadcast, seq, v, 0, n, deadline)
	}
	prev := g.peers[(g.rank-1+g.size)%g.size]
	if err := g.recvAnnouncement(prev, h, deadline); err != nil {
		return err
	}
	for at := 0; at < n; {
		b, inPlace, end, err := g.recv(prev, opBroadcast, seq, byte(v.dt), (n-at)*es, es, deadline)
		if err != nil {
			return err
		}
		k := len(b) / es
		v.decode(at, at+k, b)
		if next != nil {
			h.end = end
			err = g.send(next, h, b, deadline)
		}
		if !inPlace {
			g.releaseBuf(b)
		}
		if err != nil {
			return err
		}
		at += k
		if end != (at == n) {
			return messageLength(prev, opBroadcast, seq, at, n, end)
		}
	}
	return nil
}

// Reduce implements ProcessGroup.
func (g *TCPGroup) Reduce(t *tensor.Tensor, root int, op ReduceOp) error {
	return wait(g.ReduceAsync(t, root, op))
}

// ReduceAsync implements ProcessGroup.
func (g *TCPGroup) ReduceAsync(t *tensor.Tensor, root int, op ReduceOp) Work {
	checkDType("Reduce", t)
	checkReduceOp("Reduce", op, t)
	g.checkRank("Reduce", "root", root)
	return g.submit(func(deadline time.Time) error {
		seq := g.nextSeq()
		v := hostVec(t)
		if g.shm != nil {
			if err := g.shmReduce(seq, v, root, op, deadline); err != nil {
				return err
			}
			if g.rank == root {
				v.store(t)
			}
			return nil
		}
		if err := g.treeReduce(seq, v, root, op, deadline); err != nil {
			return err
		}
		if g.rank == root {
			if op == Avg {
				v.divide(g.size)
			}
			v.store(t)
		}
		return nil
	})
}

// AllGather implements ProcessGroup.
func (g *TCPGroup) AllGather(outs []*tensor.Tensor, in *tensor.Tensor) error {
	return wait(g.AllGatherAsync(outs, in))
}

// AllGatherAsync implements ProcessGroup.
func (g *TCPGroup) AllGatherAsync(outs []*tensor.Tensor, in *tensor.Tensor) Work {
	checkDType("AllGather", in)
	g.checkList("AllGather", outs, in)
	return g.submit(func(deadline time.Time) error {
		seq := g.nextSeq()
		v := hostVec(in)
		if g.shm == nil && g.hier == nil && !g.ringRoute(v.len()*g.size*v.elemSize()) {
			got, err := g.exchange(opAllGather, seq, v.dt, v.len(), func(int) vec { return v }, deadline)
			if err != nil {
				return err
			}
			got[g.rank] = ownCopy(v, in, outs)
			for j, o := range outs {
				got[j].store(o)
			}
			return nil
		}
		ovs := make([]vec, len(outs))
		for j, o := range outs {
			ovs[j] = hostVec(o)
		}
		var err error
		if g.shm != nil {
			err = g.shmAllGather(seq, ownCopy(v, in, outs), ovs, deadline)
		} else {
			// This rank's share goes into place first, so that an
			// input sharing memory with another output is read before
			// that output is written.
			own := ovs[g.rank]
			own.decode(0, own.len(), v.encode(0, v.len()))
			shares := g.byRank(parts{own}, func(j int) parts { return parts{ovs[j]} })
			if g.hier != nil {
				err = g.hierAllGather(opAllGather, v.dt, shares, deadline)
			} else {
				err = g.ringAllGather(opAllGather, seq, v.dt, shares, deadline)
			}
		}
		if err != nil {
			return err
		}
		for j, o := range outs {
			ovs[j].store(o)
		}
		return nil
	})
}

// ownCopy returns v, the live view of in's storage, or a copy of it when
// one of outs shares that storage, so that writing the results cannot
// change this rank's contribution before it is stored.
func ownCopy(v vec, in *tensor.Tensor, outs []*tensor.Tensor) vec {
	for _, o := range outs {
		if o.SharesStorage(in) {
			return v.clone()
		}
	}
	return v
}

// ReduceScatter implements ProcessGroup.
func (g *TCPGroup) ReduceScatter(out *tensor.Tensor, ins []*tensor.Tensor, op ReduceOp) error {
	return wait(g.ReduceScatterAsync(out, ins, op))
}

// ReduceScatterAsync implements ProcessGroup.
func (g *TCPGroup) ReduceScatterAsync(out *tensor.Tensor, ins []*tensor.Tensor, op ReduceOp) Work {
	checkDType("ReduceScatter", out)
	checkReduceOp("ReduceScatter", op, out)
	g.checkList("ReduceScatter", ins, out)
	return g.submit(func(deadline time.Time) error {
		seq := g.nextSeq()
		vs := make([]vec, g.size)
		for j, t := range ins {
			vs[j] = hostVec(t)
		}
		dt, n := out.DType(), out.Numel()
		if g.shm == nil && g.hier == nil && !g.ringRoute(n*g.size*dt.Size()) {
			got, err := g.exchange(opReduceScatter, seq, dt, n, func(j int) vec { return vs[j] }, deadline)
			if err != nil {
				return err
			}
			v := g.reduceInRankOrder(got, vs[g.rank], op)
			if op == Avg {
				v.divide(g.size)
			}
			v.store(out)
			return nil
		}
		dst := hostVec(out)
		for _, t := range ins {
			if t.SharesStorage(out) {
				// Writing the result must not change what is still
				// to be sent.
				dst = newVec(dt, n)
				break
			}
		}
		send := func(j int) parts { return parts{vs[j]} }
		var err error
		switch {
		case g.shm != nil:
			err = g.shmReduceScatter(seq, dst, vs, op, deadline)
		case g.hier != nil:
			spare := make([]vec, max(g.hier.cross.size-2, 0))
			for i := range spare {
				spare[i] = newVec(dt, n)
			}
			err = g.hierReduceScatter(opReduceScatter, dt, send, parts{vs[g.rank]}, spare, dst, op, deadline)
		default:
			work := func(int) vec { return newVec(dt, n) }
			err = g.ringReduceScatter(opReduceScatter, seq, dt, send, parts{vs[g.rank]}, work, dst, op, deadline)
		}
		if err != nil {
			return err
		}
		dst.store(out)
		return nil
	})
}

// Gather implements ProcessGroup.
func (g *TCPGroup) Gather(outs []*tensor.Tensor, in *tensor.Tensor, root int) error {
	return wait(g.GatherAsync(outs, in, root))
}

// GatherAsync implements ProcessGroup.
func (g *TCPGroup) GatherAsync(outs []*tensor.Tensor, in *tensor.Tensor, root int) Work {
	checkDType("Gather", in)
	g.checkRank("Gather", "root", root)
	if g.rank == root {
		g.checkList("Gather", outs, in)
	}
	return g.submit(func(deadline time.Time) error {
		seq := g.nextSeq()
		v := hostVec(in)
		if g.shm != nil {
			var ovs []vec
			if g.rank == root {
				v = ownCopy(v, in, outs)
				ovs = make([]vec, len(outs))
				for j, o := range outs {
					ovs[j] = hostVec(o)
				}
			}
			if err := g.shmGather(seq, v, ovs, root, deadline); err != nil {
				return err
			}
			for j, o := range outs[:len(ovs)] {
				ovs[j].store(o)
			}
			return nil
		}
		if g.rank != root {
			return g.sendRange(g.peers[root], opGather, seq, v, 0, v.len(), deadline)
		}
		got := make([]vec, g.size)
		got[g.rank] = ownCopy(v, in, outs)
		var fns []func() error
		for _, p := range g.peers {
			if p != nil {
				fns = append(fns, func() error {
					var err error
					got[p.rank], err = g.recvVec(p, opGather, seq, v.dt, v.len(), deadline)
					return err
				})
			}
		}
		if err := g.parallel(fns...); err != nil {
			return err
		}
		for j, o := range outs {
			got[j].store(o)
		}
		return nil
	})
}

// Scatter implements ProcessGroup.
func (g *TCPGroup) Scatter(out *tensor.Tensor, ins []*tensor.Tensor, root int) error {
	return wait(g.ScatterAsync(out, ins, root))
}

// ScatterAsync implements ProcessGroup.
func (g *TCPGroup) ScatterAsync(out *tensor.Tensor, ins []*tensor.Tensor, root int) Work {
	checkDType("Scatter", out)
	g.checkRank("Scatter", "root", root)
	if g.rank == root {
		g.checkList("Scatter", ins, out)
	}
	return g.submit(func(deadline time.Time) error {
		seq := g.nextSeq()
		if g.shm != nil {
			var v vec
			var ivs []vec
			if g.rank == root {
				// The root's piece is its own input: out is only
				// written, from ins[root], once the others have theirs.
				ivs = make([]vec, len(ins))
				for j, in := range ins {
					ivs[j] = hostVec(in)
				}
				v = ivs[root]
			} else {
				v = hostVec(out)
			}
			if err := g.shmScatter(seq, v, ivs, root, deadline); err != nil {
				return err
			}
			v.store(out)
			return nil
		}
		if g.rank != root {
			v, err := g.recvVec(g.peers[root], opScatter, seq, out.DType(), out.Numel(), deadline)
			if err != nil {
				return err
			}
			v.store(out)
			return nil
		}
		var fns []func() error
		for _, p := range g.peers {
			if p != nil {
				v := hostVec(ins[p.rank])
				fns = append(fns, func() error { return g.sendRange(p, opScatter, seq, v, 0, v.len(), deadline) })
			}
		}
		if err := g.parallel(fns...); err != nil {
			return err
		}
		hostVec(ins[g.rank]).store(out)
		return nil
	})
}

// Barrier implements ProcessGroup.
func (g *TCPGroup) Barrier() error { return wait(g.BarrierAsync()) }

// BarrierAsync implements ProcessGroup.
func (g *TCPGroup) BarrierAsync() Work {
	return g.submit(func(deadline time.Time) error {
		seq := g.nextSeq()
		if g.shm != nil {
			return g.shmBarrier(seq, deadline)
		}
		empty := newVec(tensor.Float32, 0)
		_, err := g.exchange(opBarrier, seq, tensor.Float32, 0, func(int) vec { return empty }, deadline)
		return err
	})
}

// Send implements ProcessGroup.
func (g *TCPGroup) Send(t *tensor.Tensor, dst int) error { return wait(g.SendAsync(t, dst)) }

// SendAsync implements ProcessGroup.
func (g *TCPGroup) SendAsync(t *tensor.Tensor, dst int) Work {
	checkDType("Send", t)
	g.checkRank("Send", "destination", dst)
	if dst == g.rank {
		panic(fmt.Sprintf("distributed.Send: rank %d cannot send to itself", dst))
	}
	return g.submit(func(deadline time.Time) error {
		p := g.peers[dst]
		p.sendSeq++
		v := hostVec(t)
		return g.sendRange(p, opP2P, p.sendSeq, v, 0, v.len(), deadline)
	})
}

// Recv implements ProcessGroup.
func (g *TCPGroup) Recv(t *tensor.Tensor, src int) error { return wait(g.RecvAsync(t, src)) }

// RecvAsync implements ProcessGroup.
func (g *TCPGroup) RecvAsync(t *tensor.Tensor, src int) Work {
	checkDType("Recv", t)
	g.checkRank("Recv", "source", src)
	if src == g.rank {
		panic(fmt.Sprintf("distributed.Recv: rank %d cannot receive from itself", src))
	}
	return g.submit(func(deadline time.Time) error {
		p := g.peers[src]
		p.recvSeq++
		v, err := g.recvVec(p, opP2P, p.recvSeq, t.DType(), t.Numel(), deadline)
		if err != nil {
			return err
		}
		v.store(t)
		return nil
	})
}

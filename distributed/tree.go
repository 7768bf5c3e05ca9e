package distributed

import "time"

// Binomial trees over TCP, for the small all-reduces (treeAllReduce), the
// small broadcasts (treeBroadcast) and Reduce (treeReduce). The ranks are
// numbered from the root (q = rank - root mod N); rank q's parent is q
// with its lowest set bit cleared, and its children are q+m for the powers
// of two m below that bit. A reduction goes up in ⌈log2 N⌉ steps (at step
// k, q with bit k set sends its partial result, which covers [q, q+2^k), to
// q-2^k), a broadcast comes down the same edges in reverse.
//
// A rank's partial result goes up only once its subtree is done, and a
// result comes down only once everything above is, so at the start every
// rank announces itself with an empty frame to the ranks that will wait on
// it: its children (if a result will come down) and its parent (if it has
// children, and a reduction will go up). A rank that times out on a peer it
// has heard from waits for that peer's own abort (recv), so that the rank
// named is the silent one, not its parent or child.
type treeNode struct {
	g      *TCPGroup
	h      frameHeader // the collective's frames
	root   int
	q, low int // this rank from root; its lowest set bit, or for the root the first power of two not below the size
}

// tree places this rank in the binomial tree of the collective (op, seq)
// rooted at root, for elements of v's dtype.
func (g *TCPGroup) tree(op byte, seq uint64, v vec, root int) treeNode {
	q := (g.rank - root + g.size) % g.size
	low := 1
	for low < g.size && q&low == 0 {
		low <<= 1
	}
	return treeNode{g: g, h: frameHeader{op: op, seq: seq, dtype: byte(v.dt)}, root: root, q: q, low: low}
}

// peer is the connection to the rank numbered q from the root.
func (t treeNode) peer(q int) *peer { return t.g.peers[(q+t.root)%t.g.size] }

// hasChildren reports whether the rank numbered q, whose lowest set bit is
// low, has children.
func (t treeNode) hasChildren(q, low int) bool { return low > 1 && q+1 < t.g.size }

// announce sends the empty frames of a collective that goes up (a
// reduction) and/or down (a broadcast).
func (t treeNode) announce(up, down bool, deadline time.Time) error {
	if up && t.q != 0 && t.hasChildren(t.q, t.low) {
		if err := t.g.send(t.peer(t.q-t.low), t.h, nil, deadline); err != nil {
			return err
		}
	}
	if down {
		for m := t.low >> 1; m > 0; m >>= 1 {
			if t.q+m < t.g.size {
				if err := t.g.send(t.peer(t.q+m), t.h, nil, deadline); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// up folds the children's partial results into v by op, each after this
// rank's own and its earlier children's, and sends v to the parent.
func (t treeNode) up(v vec, op ReduceOp, deadline time.Time) error {
	g := t.g
	for m := 1; m < t.low && t.q+m < g.size; m <<= 1 {
		c := t.peer(t.q + m)
		if t.hasChildren(t.q+m, m) {
			if err := g.recvAnnouncement(c, t.h, deadline); err != nil {
				return err
			}
		}
		err := g.recvRange(c, t.h.op, t.h.seq, v.dt, 0, v.len(), deadline, func(lo, hi int, b []byte) {
			v.reduceBytes(lo, hi, b, op)
		})
		if err != nil {
			return err
		}
	}
	if t.q == 0 {
		return nil
	}
	return g.sendRange(t.peer(t.q-t.low), t.h.op, t.h.seq, v, 0, v.len(), deadline)
}

// down receives v from the parent (the root keeps its own) and sends it to
// the children, largest subtree first.
func (t treeNode) down(v vec, deadline time.Time) error {
	g := t.g
	if t.q != 0 {
		parent := t.peer(t.q - t.low)
		if err := g.recvAnnouncement(parent, t.h, deadline); err != nil {
			return err
		}
		if err := g.recvRange(parent, t.h.op, t.h.seq, v.dt, 0, v.len(), deadline, v.decode); err != nil {
			return err
		}
	}
	for m := t.low >> 1; m > 0; m >>= 1 {
		if t.q+m < g.size {
			if err := g.sendRange(t.peer(t.q+m), t.h.op, t.h.seq, v, 0, v.len(), deadline); err != nil {
				return err
			}
		}
	}
	return nil
}

// recvAnnouncement receives p's empty announcement of the collective of
// header h (tree.go, chainBroadcast): after it, a timeout waiting on p waits
// for p's own abort.
func (g *TCPGroup) recvAnnouncement(p *peer, h frameHeader, deadline time.Time) error {
	_, _, _, err := g.recv(p, h.op, h.seq, h.dtype, 0, 1, deadline)
	return err
}

// treeAllReduce reduces v up the tree rooted at rank 0 and sends the
// result back down: every element is combined in one fixed order, and
// every rank ends with rank 0's bits.
func (g *TCPGroup) treeAllReduce(seq uint64, v vec, op ReduceOp, deadline time.Time) error {
	t := g.tree(opAllReduce, seq, v, 0)
	if err := t.announce(true, true, deadline); err != nil {
		return err
	}
	if err := t.up(v, op, deadline); err != nil {
		return err
	}
	return t.down(v, deadline)
}

// treeBroadcast sends root's v down the tree rooted there: ⌈log2 N⌉ steps,
// where root alone would send N-1 messages.
func (g *TCPGroup) treeBroadcast(seq uint64, v vec, root int, deadline time.Time) error {
	t := g.tree(opBroadcast, seq, v, root)
	if err := t.announce(false, true, deadline); err != nil {
		return err
	}
	return t.down(v, deadline)
}

// treeReduce reduces every rank's v up the tree rooted at root into root's
// v; the other ranks' v stay as they were (those with children fold their
// subtree into a copy). The root's link carries ⌈log2 N⌉ tensors, where
// receiving from every rank would take N-1.
func (g *TCPGroup) treeReduce(seq uint64, v vec, root int, op ReduceOp, deadline time.Time) error {
	t := g.tree(opReduce, seq, v, root)
	if err := t.announce(true, false, deadline); err != nil {
		return err
	}
	if t.q != 0 && t.hasChildren(t.q, t.low) {
		v = v.clone()
	}
	return t.up(v, op, deadline)
}

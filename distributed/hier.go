package distributed

import (
	"slices"
	"time"

	"github.com/emberml/ember/tensor"
)

// Ranks on several machines, several on each, all-reduce in two levels:
// within a machine through shared memory, between machines over TCP. Each
// rank reduces its 1/L of the tensor (L ranks a machine) from its
// machine's ranks through shared memory, all-reduces that piece over TCP
// with the ranks of the same local index on the other machines (L
// all-reduces of 1/L of the tensor each, side by side), and gathers the
// other pieces from its machine's ranks. Each machine's network link then
// carries what one rank of a flat group would send (its share of an
// all-reduce among M machines), where a flat ring over all M·L ranks
// crosses every machine boundary with the whole ring's traffic, and the
// ranks of one machine never talk over loopback TCP. ReduceScatter and
// AllGather, and ZeroOptimizer's exchanges, go in the same two levels. Large tensors
// go through in windows, so that the shared-memory phases of one window
// overlap the network phase of another.

// hierarchy holds the two levels' groups of the world group: this rank's
// machine, and the ranks of this rank's local index on every machine.
type hierarchy struct {
	local    *TCPGroup // through shared memory; its rank is the local index
	cross    *TCPGroup // over TCP; its rank is the machine's index
	machines [][]int   // the world ranks of each machine, by local index
	window   int       // bytes of a rank's piece, or of a share, in one window (hierWindowBytes)
	// sums holds hierReduceScatter's window sums from one call to the
	// next (ZeroOptimizer reduce-scatters every bucket every step).
	// The world group's worker goroutine only.
	sums []int64
}

// scratch returns bytes bytes of h.sums, grown if short, aligned for every
// dtype.
func (h *hierarchy) scratch(bytes int) []byte {
	if words := (bytes + 7) / 8; len(h.sums) < words {
		h.sums = make([]int64, words)
	}
	return sliceBytes(h.sums)[:bytes]
}

// machineID identifies the machine of world rank rank of size ranks:
// hostID, or with cfg.machines set (tests) the pretend machine's number.
func (cfg Config) machineID(rank, size int) int64 {
	if cfg.machines > 0 {
		return int64(rank*cfg.machines/size) + 1
	}
	return hostID()
}

// setupHierarchy sets up g.hier where the world group has no shared
// memory of its own but its ranks sit on two or more machines with the
// same number of ranks (two or more) on each, and every rank allows
// shared memory. Every rank runs it after setupShm and takes the same
// path; only transport failures are errors. The groups it creates take
// subgroup ids like NewSubgroup's, before the caller's.
func (g *TCPGroup) setupHierarchy(cfg Config) error {
	if g.shm != nil || g.size < 4 {
		return nil
	}
	want := shmSupported && nativeLittle && !cfg.DisableSharedMemory
	info := []int64{boolInt(want), cfg.machineID(g.rank, g.size)}
	var got []vec
	err := wait(g.submit(func(deadline time.Time) error {
		var err error
		got, err = g.exchange(opShmSetup, g.nextSeq(), tensor.Int64, len(info), func(int) vec { return vec{tensor.Int64, info} }, deadline)
		return err
	}))
	if err != nil {
		return err
	}
	// The machines' world ranks, machines in the order of their lowest.
	var machines [][]int
	index := map[int64]int{}
	for r := range g.size {
		d := info
		if r != g.rank {
			d = got[r].data.([]int64)
		}
		if d[0] != 1 {
			return nil
		}
		k, ok := index[d[1]]
		if !ok {
			k = len(machines)
			index[d[1]] = k
			machines = append(machines, nil)
		}
		machines[k] = append(machines[k], r)
	}
	per := len(machines[0])
	if len(machines) < 2 || per < 2 {
		return nil
	}
	for _, m := range machines {
		if len(m) != per {
			return nil
		}
	}
	crossing := make([][]int, per) // the ranks of each local index
	for l := range crossing {
		for _, m := range machines {
			crossing[l] = append(crossing[l], m[l])
		}
	}
	// join creates a subgroup for each list of ranks, in order, and
	// returns the one this rank is in.
	join := func(lists [][]int) (*TCPGroup, error) {
		var mine *TCPGroup
		for _, ranks := range lists {
			sub, err := g.newSubgroup(ranks)
			if err != nil {
				return nil, err
			}
			if sub != nil {
				mine = sub
			}
		}
		return mine, nil
	}
	h := &hierarchy{machines: machines, window: hierWindowBytes}
	closeAll := func() {
		for _, sub := range []*TCPGroup{h.local, h.cross} {
			if sub != nil {
				sub.Close()
			}
		}
	}
	h.local, err = join(machines)
	if err == nil {
		h.cross, err = join(crossing)
	}
	if err != nil {
		closeAll()
		return err
	}
	if err := wait(h.local.submit(func(deadline time.Time) error { return h.local.setupShm(cfg, deadline) })); err != nil {
		closeAll()
		return err
	}
	// Every rank takes the hierarchy or none does.
	var all bool
	err = wait(g.submit(func(deadline time.Time) error {
		var err error
		all, err = g.agree(opShmSetup, h.local.shm != nil, deadline)
		return err
	}))
	if err != nil || !all {
		closeAll()
		return err
	}
	g.hier = h
	return nil
}

// hierWindowBytes is the size of a rank's piece of one window of a
// two-level all-reduce: the tensor goes through in windows of L such
// pieces, so that the shared-memory phases of one window overlap the
// network phase of another.
const hierWindowBytes = 4 << 20

// hierAllReduce all-reduces v in the two levels, window by window: in
// each window this rank's piece (the last ones padded with zeros) is
// reduced from its machine's ranks through shared memory in local rank
// order, all-reduced over TCP with the other machines' ranks of its local
// index by the route its size picks, and the pieces are gathered back
// through shared memory, so every rank ends with the same bits. One
// goroutine runs the shared-memory phases (reduce-scatter of window w+1,
// then all-gather of window w), another the network phase of each window
// as soon as its reduce-scatter is done. For Avg the sums are divided
// once, at the end.
func (g *TCPGroup) hierAllReduce(v vec, op ReduceOp, deadline time.Time) error {
	local, cross := g.hier.local, g.hier.cross
	n, per := v.len(), local.size
	c := max(min(g.hier.window/v.elemSize(), (n+per-1)/per), 1) // elements a piece
	span := per * c
	windows := (n + span - 1) / span
	sum := op
	if op == Avg {
		sum = Sum
	}
	piece := func(w, j int) vec {
		lo := w*span + j*c
		return vec{v.dt, v.slice(min(lo, n), min(lo+c, n))}
	}
	// Only the last window's pieces can fall short of c: the zeros that
	// pad them are allocated then (by the shared-memory goroutine alone).
	var zeros vec
	padded := func(w, j int) parts {
		p := piece(w, j)
		if short := c - p.len(); short > 0 {
			if zeros.data == nil {
				zeros = newVec(v.dt, c)
			}
			return parts{p, vec{v.dt, zeros.slice(0, short)}}
		}
		return parts{p}
	}
	mine := make([]vec, windows) // this rank's reduced pieces
	reduced, crossed := make([]chan struct{}, windows), make([]chan struct{}, windows)
	for w := range windows {
		mine[w], reduced[w], crossed[w] = newVec(v.dt, c), make(chan struct{}), make(chan struct{})
	}
	gather := func(w int) error {
		if err := g.await(crossed[w]); err != nil {
			return err
		}
		dsts, lens := make([]parts, per), make([]int, per)
		for j := range dsts {
			dsts[j], lens[j] = parts{piece(w, j)}, piece(w, j).len()
		}
		return local.shmAllGatherParts(opAllReduce, v.dt, dsts[local.rank], dsts, lens, deadline)
	}
	shared := func() error {
		for w := range windows + 1 {
			if w < windows {
				err := local.shmReduceScatterParts(opAllReduce, v.dt, func(j int) parts { return padded(w, j) }, padded(w, local.rank), mine[w], sum, deadline)
				if err != nil {
					return err
				}
				close(reduced[w])
			}
			if w > 0 {
				if err := gather(w - 1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	network := func() error {
		for w := range windows {
			// This rank announces itself to its peers on the other
			// machines before its piece is ready (announceAll).
			h := frameHeader{op: opAllReduce, seq: cross.nextSeq(), dtype: byte(v.dt)}
			if err := cross.announceAll(h, deadline); err != nil {
				return err
			}
			if err := g.await(reduced[w]); err != nil {
				return err
			}
			if err := cross.hearAll(h, deadline); err != nil {
				return err
			}
			got, _, err := cross.allReduceTCP(h.seq, mine[w], sum, deadline)
			if err != nil {
				return err
			}
			own := piece(w, local.rank)
			own.decode(0, own.len(), got.encode(0, own.len()))
			close(crossed[w])
		}
		return nil
	}
	if err := g.parallel(shared, network); err != nil {
		return err
	}
	if op == Avg {
		v.divide(g.size)
	}
	return nil
}

// hierReduceScatter is reduceScatterPartsAsync in two levels, window by
// window as hierAllReduce goes: through shared memory, each rank sums from
// its machine's ranks their contributions to the shares of its local
// index on every machine; over TCP, the ranks of that local index
// reduce-scatter those sums (reduceScatterTCP), each keeping its own
// share. For Avg the sums are divided once, at the end. opc names the
// collective it serves, in descriptors, frames and errors.
func (g *TCPGroup) hierReduceScatter(opc byte, dt tensor.DType, send func(j int) parts, own parts, spare []vec, dst vec, op ReduceOp, deadline time.Time) error {
	h := g.hier
	machines, n := h.cross.size, dst.len()
	contrib := func(r int) parts {
		if r == g.rank {
			return own
		}
		return send(r)
	}
	sum := op
	if op == Avg {
		sum = Sum
	}
	wn := max(h.window/dt.Size(), 1) // elements of a share a window
	windows := (n + wn - 1) / wn
	span := func(w int) (int, int) { return w * wn, min((w+1)*wn, n) }
	// Window w's sums (machines pieces of its elements) lie side by side
	// in memory kept from call to call.
	sums, reduced := make([]vec, windows), make([]chan struct{}, windows)
	all, es := h.scratch(machines*n*dt.Size()), dt.Size()
	for w := range windows {
		a, b := span(w)
		sums[w], reduced[w] = bytesVec(dt, all[machines*a*es:machines*b*es]), make(chan struct{})
	}
	shared := func() error {
		for w := range windows {
			a, b := span(w)
			// Local rank j's share: the contributions to the shares of
			// local index j, machine by machine.
			localShare := func(j int) parts {
				var ps parts
				for _, m := range h.machines {
					ps = append(ps, contrib(m[j]).sub(a, b)...)
				}
				return ps
			}
			if err := h.local.shmReduceScatterParts(opc, dt, localShare, localShare(h.local.rank), sums[w], sum, deadline); err != nil {
				return err
			}
			close(reduced[w])
		}
		return nil
	}
	network := func() error {
		for w := range windows {
			a, b := span(w)
			k := b - a
			hdr := frameHeader{op: opc, seq: h.cross.nextSeq(), dtype: byte(dt)}
			if err := h.cross.announceAll(hdr, deadline); err != nil {
				return err
			}
			if err := g.await(reduced[w]); err != nil {
				return err
			}
			if err := h.cross.hearAll(hdr, deadline); err != nil {
				return err
			}
			piece := func(i int) parts { return parts{vec{dt, sums[w].slice(i*k, (i+1)*k)}} }
			bufs := make([]vec, max(machines-2, 0))
			for i := range bufs {
				bufs[i] = vec{dt, spare[i].slice(0, k)}
			}
			if err := h.cross.reduceScatterTCP(opc, hdr.seq, dt, piece, piece(h.cross.rank), bufs, vec{dt, dst.slice(a, b)}, sum, deadline); err != nil {
				return err
			}
		}
		return nil
	}
	if err := g.parallel(shared, network); err != nil {
		return err
	}
	if op == Avg {
		dst.divide(g.size)
	}
	return nil
}

// hierAllGather is allGatherPartsAsync in two levels, window by window,
// with every rank's share in shares: over TCP, the ranks of this rank's
// local index gather their shares (allGatherTCP); through shared memory,
// each rank then gathers from its machine's ranks the shares of their
// local indices. opc names the collective it serves.
func (g *TCPGroup) hierAllGather(opc byte, dt tensor.DType, shares []parts, deadline time.Time) error {
	h := g.hier
	longest := slices.Max(partsLens(shares))
	wn := max(h.window/dt.Size(), 1)
	windows := (longest + wn - 1) / wn
	crossed := make([]chan struct{}, windows)
	for w := range crossed {
		crossed[w] = make(chan struct{})
	}
	network := func() error {
		for w := range windows {
			byMachine := make([]parts, h.cross.size)
			for k, m := range h.machines {
				byMachine[k] = shares[m[h.local.rank]].sub(w*wn, (w+1)*wn)
			}
			if err := h.cross.allGatherTCP(opc, h.cross.nextSeq(), dt, byMachine, deadline); err != nil {
				return err
			}
			close(crossed[w])
		}
		return nil
	}
	shared := func() error {
		for w := range windows {
			if err := g.await(crossed[w]); err != nil {
				return err
			}
			byIndex := make([]parts, h.local.size)
			for j := range byIndex {
				for _, m := range h.machines {
					byIndex[j] = append(byIndex[j], shares[m[j]].sub(w*wn, (w+1)*wn)...)
				}
			}
			if err := h.local.shmAllGatherParts(opc, dt, byIndex[h.local.rank], byIndex, partsLens(byIndex), deadline); err != nil {
				return err
			}
		}
		return nil
	}
	return g.parallel(network, shared)
}

// await waits until ch is closed, or returns the group's failure.
func (g *TCPGroup) await(ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-g.root.done:
		return g.failure()
	}
}

// announceAll sends every peer an empty frame of operation h: a peer that
// times out waiting for this rank's data then waits for this rank's
// report of what holds it up (the ranks of its machine, before the network
// phase) instead of blaming this rank. hearAll receives the peers'.
func (g *TCPGroup) announceAll(h frameHeader, deadline time.Time) error {
	for _, p := range g.peers {
		if p != nil {
			if err := g.send(p, h, nil, deadline); err != nil {
				return err
			}
		}
	}
	return nil
}

// hearAll receives every peer's announceAll frame of operation h.
func (g *TCPGroup) hearAll(h frameHeader, deadline time.Time) error {
	for _, p := range g.peers {
		if p != nil {
			if err := g.recvAnnouncement(p, h, deadline); err != nil {
				return err
			}
		}
	}
	return nil
}

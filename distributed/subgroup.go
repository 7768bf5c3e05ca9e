package distributed

import (
	"fmt"
	"slices"
	"time"
)

// maxGroups bounds the number of subgroups of one world group (the group
// id is one byte on the wire; 0 is the world).
const maxGroups = 255

// NewSubgroup returns a process group of the given world ranks, as
// PyTorch's new_group: ranks[i] becomes rank i of the subgroup. Every rank
// of the world group must call NewSubgroup for every subgroup, members or
// not, in the same order (that order numbers the subgroups on the wire); a
// rank outside ranks gets nil at once, a member once every member has
// called it. It panics on a rank out of range or listed twice, or when
// called on a subgroup.
//
// A subgroup whose members are all on one machine moves its collectives
// through shared memory, as the world group does (unless the world's
// Config disables it); others go over TCP. A subgroup shares the world
// group's connections and failure state: a failure in any group aborts
// them all, and closing the world group closes its subgroups. Each group
// runs its own operations in order, independent of the others, so ranks
// may interleave collectives of different groups in different orders.
func (g *TCPGroup) NewSubgroup(ranks []int) (*TCPGroup, error) {
	sub, err := g.newSubgroup(ranks)
	if sub == nil || err != nil || sub.size < 2 {
		return sub, err
	}
	if err := wait(sub.submit(func(deadline time.Time) error { return sub.setupShm(g.cfg, deadline) })); err != nil {
		sub.Close()
		return nil, err
	}
	return sub, nil
}

// newSubgroup is NewSubgroup without shared memory: the subgroup goes
// over TCP until the caller sets it up.
func (g *TCPGroup) newSubgroup(ranks []int) (*TCPGroup, error) {
	checkSubgroupRanks(g.root == g, g.size, ranks)
	g.subMu.Lock()
	defer g.subMu.Unlock()
	if g.nextGID >= maxGroups {
		return nil, fmt.Errorf("distributed.NewSubgroup: at most %d subgroups per world group", maxGroups)
	}
	g.nextGID++
	me := slices.Index(ranks, g.rank)
	if me < 0 {
		return nil, nil
	}
	sub := &TCPGroup{
		rank: me, size: len(ranks),
		maxFrame: g.maxFrame, chunk: g.chunk, direct: g.direct, treeMin: g.treeMin,
		peers: make([]*peer, len(ranks)),
		root:  g, gid: byte(g.nextGID), members: slices.Clone(ranks),
		done: g.done, wdone: make(chan struct{}),
	}
	sub.timeout.Store(g.timeout.Load())
	for i, r := range ranks {
		if r != g.rank {
			sub.peers[i] = &peer{rank: i, link: g.links[r]}
		}
	}
	g.subs = append(g.subs, sub)
	go sub.worker()
	return sub, nil
}

// WorldRanks returns the world rank of each of the group's ranks.
func (g *TCPGroup) WorldRanks() []int { return slices.Clone(g.members) }

// checkSubgroupRanks panics, as NewSubgroup documents, unless it is called
// on a world group (world) and ranks lists distinct ranks of [0, size).
// Every backend's NewSubgroup starts with it.
func checkSubgroupRanks(world bool, size int, ranks []int) {
	if !world {
		panic("distributed.NewSubgroup: called on a subgroup; call it on the world group")
	}
	if len(ranks) == 0 {
		panic("distributed.NewSubgroup: no ranks")
	}
	seen := make(map[int]bool, len(ranks))
	for _, r := range ranks {
		checkRankRange("NewSubgroup", "member", r, size)
		if seen[r] {
			panic(fmt.Sprintf("distributed.NewSubgroup: rank %d listed twice in %v", r, ranks))
		}
		seen[r] = true
	}
}

// checkRankRange panics unless r is a rank of a group of size ranks; op
// and what name the operation and the rank's role in the message.
func checkRankRange(op, what string, r, size int) {
	if r < 0 || r >= size {
		panic(fmt.Sprintf("distributed.%s: %s rank %d outside [0, %d)", op, what, r, size))
	}
}

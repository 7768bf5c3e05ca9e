package distributed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// kill closes g's connections without a word, as a crashed process would.
func kill(g *TCPGroup) {
	for _, p := range g.peers {
		if p != nil {
			p.conn.Close()
		}
	}
}

func TestKilledPeerMidAllReduce(t *testing.T) {
	for _, shm := range []bool{true, false} {
		t.Run(fmt.Sprintf("shm=%v", shm), func(t *testing.T) { killedPeerMidAllReduce(t, shm) })
	}
}

// killedPeerMidAllReduce kills a rank while the others run an all-reduce
// of 1 MB, through shared memory or over TCP.
func killedPeerMidAllReduce(t *testing.T, shm bool) {
	gs, err := newLocalGroups(context.Background(), 4, Config{Timeout: 10 * time.Second, ChunkBytes: 4096, DisableSharedMemory: !shm})
	require.NoError(t, err)
	for _, g := range gs {
		t.Cleanup(func() { g.Close() })
		require.Equal(t, shm, g.shm != nil)
	}
	const victim = 2
	x := make([]*tensor.Tensor, 4)
	for r := range x {
		x[r] = tensor.Ones([]int{1 << 18}, tensor.Float32)
	}
	// Warm up: one complete all-reduce, so the connections are known good.
	requireAll(t, gs, func(g *TCPGroup) error { return g.AllReduce(x[g.Rank()], Sum) })
	// The others start the next all-reduce and send their first chunks; the
	// victim dies before answering, so none of them can finish.
	errs := onAll(gs, func(g *TCPGroup) error {
		if g.Rank() == victim {
			time.Sleep(20 * time.Millisecond)
			kill(g)
			return nil
		}
		return g.AllReduce(x[g.Rank()], Sum)
	})
	for r, err := range errs {
		if r == victim {
			continue
		}
		require.Error(t, err, "rank %d", r)
		var pe *PeerError
		require.True(t, errors.As(err, &pe), "rank %d: %v", r, err)
		assert.Equal(t, victim, pe.Rank, "rank %d: %v", r, err)
		assert.Contains(t, err.Error(), "rank 2", "rank %d", r)
		// The group stays failed.
		assert.Error(t, gs[r].Barrier())
	}
}

func TestTimeoutNamesSilentPeer(t *testing.T) {
	gs := localGroups(t, 2)
	gs[0].SetTimeout(200 * time.Millisecond)
	err := gs[0].AllReduce(tensor.Ones([]int{3}), Sum)
	require.Error(t, err)
	var pe *PeerError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 1, pe.Rank)
	assert.Contains(t, err.Error(), "timed out")
	// Rank 1 may still complete the all-reduce (rank 0's message was on
	// the wire), but it learns of the abort instead of waiting out its own
	// 20 s timeout afterwards.
	_ = gs[1].AllReduce(tensor.Ones([]int{3}), Sum)
	err = gs[1].Barrier()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "timed out")
}

func TestMismatchedCollectives(t *testing.T) {
	gs := localGroups(t, 2)
	errs := onAll(gs, func(g *TCPGroup) error {
		x := tensor.Ones([]int{4})
		if g.Rank() == 0 {
			return g.AllReduce(x, Sum)
		}
		return g.Broadcast(x, 0)
	})
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
		assert.Contains(t, err.Error(), "mismatched operation", "rank %d", r)
	}
}

func TestMismatchedShapes(t *testing.T) {
	gs := localGroups(t, 2)
	errs := onAll(gs, func(g *TCPGroup) error {
		return g.AllGather([]*tensor.Tensor{tensor.Zeros([]int{3 + g.Rank()}), tensor.Zeros([]int{3 + g.Rank()})}, tensor.Ones([]int{3 + g.Rank()}))
	})
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
		assert.Contains(t, err.Error(), "same shape", "rank %d", r)
	}
}

// sendRecv returns an operation in which rank 0 sends sent floats to
// rank 1, which receives them into a tensor of received floats.
func sendRecv(sent, received int) func(g *TCPGroup) error {
	return func(g *TCPGroup) error {
		switch g.Rank() {
		case 0:
			return g.Send(tensor.Ones([]int{sent}), 1)
		case 1:
			return g.Recv(tensor.Zeros([]int{received}), 0)
		}
		return nil
	}
}

func TestMismatchedLengthsFailAtOnce(t *testing.T) {
	// Over TCP a receiver whose tensor is longer than the sender's learns
	// from the frame that ends the message, and one whose tensor is
	// shorter (by whole chunks of 64 floats) from a last frame that does
	// not end it: both fail at once naming the sender, not after their
	// timeout. One rank's tensor differs from the others', so that it is
	// the one to find out.
	long, short := "ended after", "goes on past"
	cases := []struct {
		name   string
		op     func(g *TCPGroup) error
		rank   int // the rank that must report
		sender int
		want   string
	}{
		{"broadcast-chain-longer", func(g *TCPGroup) error {
			return g.Broadcast(tensor.Ones([]int{1024 + 64*int(boolInt(g.Rank() == 1))}), 0)
		}, 1, 0, long},
		{"broadcast-chain-shorter", func(g *TCPGroup) error {
			return g.Broadcast(tensor.Ones([]int{1024 - 64*int(boolInt(g.Rank() == 1))}), 0)
		}, 1, 0, short},
		{"broadcast-tree-longer", func(g *TCPGroup) error {
			return g.Broadcast(tensor.Ones([]int{5 + int(boolInt(g.Rank() == 1))}), 0)
		}, 1, 0, long},
		{"scatter-longer", func(g *TCPGroup) error {
			return g.Scatter(tensor.Zeros([]int{100 + 10*int(boolInt(g.Rank() == 2))}), onesList(3, 100), 0)
		}, 2, 0, long},
		{"gather-shorter", func(g *TCPGroup) error {
			n := 64 // rank 1 sends 128
			if g.Rank() == 1 {
				n = 128
			}
			return g.Gather(onesList(3, n), tensor.Ones([]int{n}), 0)
		}, 0, 1, short},
		{"recv-longer", sendRecv(100, 120), 1, 0, long},
		{"recv-shorter", sendRecv(128, 64), 1, 0, short},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gs := tcpGroups(t, 3) // 256-byte chunks; broadcasts past 64 bytes along the chain
			errs := onAll(gs, c.op)
			var pe *PeerError
			require.ErrorAs(t, errs[c.rank], &pe, "rank %d", c.rank)
			assert.Equal(t, c.sender, pe.Rank, "rank %d: %v", c.rank, errs[c.rank])
			assert.Contains(t, errs[c.rank].Error(), c.want)
			for r, err := range errs {
				if err != nil {
					assert.NotContains(t, err.Error(), "timed out", "rank %d", r)
				}
			}
		})
	}
}

func TestWrongTokenIsRejected(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg := func(rank int, token string) Config {
		return Config{Rank: rank, WorldSize: 2, MasterAddr: ln.Addr().String(), ListenAddr: "127.0.0.1", Token: token, Timeout: time.Second}
	}
	var wg sync.WaitGroup
	var err0, err1 error
	wg.Go(func() {
		g, err := newTCPGroup(context.Background(), cfg(0, "right"), ln)
		if g != nil {
			g.Close()
		}
		err0 = err
	})
	wg.Go(func() {
		g, err := NewTCPGroup(context.Background(), cfg(1, "wrong"))
		if g != nil {
			g.Close()
		}
		err1 = err
	})
	wg.Wait()
	require.Error(t, err1)
	assert.ErrorIs(t, err1, errAuth)
	assert.EqualError(t, err1, "distributed: rank 1: rendezvous: authentication failed between rank 1 and rank 0: their tokens (EMBER_DIST_TOKEN) differ")
	require.Error(t, err0, "rank 0 must not accept the impostor")
	assert.ErrorIs(t, err0, errAuth)
	assert.EqualError(t, err0, "distributed: rendezvous: peer rank 1: authentication failed between rank 1 and rank 0: their tokens (EMBER_DIST_TOKEN) differ")
}

func TestStrangerBytesAtRendezvousAreIgnored(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// A stranger connects first and writes garbage, another connects and
	// stays silent; rank 0 drops the first, waits for neither, and the real
	// rank still joins.
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	_, err = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + string(make([]byte, 64))))
	require.NoError(t, err)
	defer c.Close()
	silent, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer silent.Close()
	var wg sync.WaitGroup
	gs := make([]*TCPGroup, 2)
	errs := make([]error, 2)
	for r := range 2 {
		wg.Go(func() {
			cfg := Config{Rank: r, WorldSize: 2, MasterAddr: ln.Addr().String(), ListenAddr: "127.0.0.1", Token: "t", Timeout: 5 * time.Second}
			var store net.Listener
			if r == 0 {
				store = ln
			}
			gs[r], errs[r] = newTCPGroup(context.Background(), cfg, store)
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	requireAll(t, gs, func(g *TCPGroup) error {
		defer g.Close()
		return g.Barrier()
	})
}

func TestParseHeaderRejectsBadFrames(t *testing.T) {
	good := make([]byte, frameHeaderLen)
	putHeader(good, frameHeader{kind: frameData, op: opAllReduce, seq: 3, n: 8})
	h, err := parseHeader(good, 100)
	require.NoError(t, err)
	assert.Equal(t, frameHeader{kind: frameData, op: opAllReduce, seq: 3, n: 8}, h)
	mutate := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	for name, b := range map[string][]byte{
		"short":    good[:10],
		"magic":    mutate(func(b []byte) { b[0] = 'X' }),
		"kind":     mutate(func(b []byte) { b[4] = 9 }),
		"op":       mutate(func(b []byte) { b[5] = 0 }),
		"too long": mutate(func(b []byte) { b[16] = 200 }),
		"abort":    mutate(func(b []byte) { b[4] = frameAbort; b[16] = 2 }),
	} {
		_, err := parseHeader(b, 100)
		assert.ErrorIs(t, err, errBadFrame, name)
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv(EnvMasterAddr, "10.0.0.1")
	t.Setenv(EnvMasterPort, "29500")
	t.Setenv(EnvRank, "3")
	t.Setenv(EnvWorldSize, "4")
	t.Setenv(EnvLocalRank, "1")
	t.Setenv(EnvToken, "s3cret")
	t.Setenv(EnvTimeout, "30s")
	c, err := ConfigFromEnv()
	require.NoError(t, err)
	assert.Equal(t, Config{Rank: 3, WorldSize: 4, LocalRank: 1, MasterAddr: "10.0.0.1:29500", Token: "s3cret", Timeout: 30 * time.Second}, c)
	t.Setenv(EnvShm, "0")
	t.Setenv(EnvCMA, "0")
	c, err = ConfigFromEnv()
	require.NoError(t, err)
	assert.True(t, c.DisableSharedMemory)
	assert.True(t, c.DisableCrossMemory)
	t.Setenv(EnvFailureFile, "/run/job/rank-3.json")
	c, err = ConfigFromEnv()
	require.NoError(t, err)
	assert.Equal(t, "/run/job/rank-3.json", c.FailureFile)
	t.Setenv(EnvRank, "4")
	_, err = ConfigFromEnv()
	assert.ErrorContains(t, err, "rank 4 outside [0, 4)")
	t.Setenv(EnvRank, "x")
	_, err = ConfigFromEnv()
	assert.ErrorContains(t, err, "RANK")
}

func TestWaitContextAbortsGroup(t *testing.T) {
	gs := localGroups(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := gs[0].BarrierAsync().Wait(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Error(t, gs[0].Barrier())
}

func TestTreeAndChainTimeoutsBlameSilentRank(t *testing.T) {
	// Over the binomial tree of 8 ranks rank 0 waits on 4, which waits on
	// 6, which waits on 7, and every rank waits on its parent for the
	// result; a broadcast from rank 3 runs down a tree (small) or along
	// the chain 3, 4, ..., 2 (large), a reduce to rank 3 goes up the
	// tree rooted there, and a reduce-scatter or all-gather goes round the
	// ring, where every rank waits on every other. Whichever rank is
	// silent (a leaf, an inner rank, the root) and whichever timer fires
	// first, every rank that waits on it, directly or not, must fail
	// naming it; the others may finish.
	const root = 3
	treeBelow := func(up, q int) bool { // q is up or in up's subtree
		for q > up {
			q &= q - 1 // the parent: clear the lowest set bit
		}
		return q == up
	}
	rel := func(r int) int { return (r - root + 8) % 8 }
	cases := []struct {
		name    string
		op      func(g *TCPGroup) error
		silent  []int
		depends func(r, silent int) bool // r cannot finish without silent
	}{
		{"all-reduce", func(g *TCPGroup) error { return g.AllReduce(tensor.Ones([]int{100}), Sum) }, []int{7, 6, 4, 3},
			func(int, int) bool { return true }},
		{"broadcast-tree", func(g *TCPGroup) error { return g.Broadcast(tensor.Ones([]int{100}), root) }, []int{3, 4, 7, 5},
			func(r, silent int) bool { return treeBelow(rel(silent), rel(r)) }},
		{"broadcast-chain", func(g *TCPGroup) error { return g.Broadcast(tensor.Ones([]int{1000}), root) }, []int{3, 4, 7, 1},
			func(r, silent int) bool { return rel(r) > rel(silent) }},
		{"reduce", func(g *TCPGroup) error { return g.Reduce(tensor.Ones([]int{100}), root, Sum) }, []int{5, 7, 1, 2},
			func(r, silent int) bool { return treeBelow(rel(r), rel(silent)) }},
		// 8 shares of 100 floats: round the ring.
		{"reduce-scatter-ring", func(g *TCPGroup) error {
			return g.ReduceScatter(tensor.Zeros([]int{100}), onesList(8, 100), Sum)
		}, []int{0, 3, 7}, func(int, int) bool { return true }},
		{"all-gather-ring", func(g *TCPGroup) error {
			return g.AllGather(onesList(8, 100), tensor.Ones([]int{100}))
		}, []int{0, 4, 6}, func(int, int) bool { return true }},
	}
	for _, c := range cases {
		for _, silent := range c.silent {
			t.Run(fmt.Sprintf("%s/silent=%d", c.name, silent), func(t *testing.T) {
				t.Parallel()
				gs := tcpGroups(t, 8)
				for _, g := range gs {
					g.treeMin = 0
					g.direct = 1 << 10 // 100 floats: tree; 1000: chain
				}
				var live []*TCPGroup
				for _, g := range gs {
					if g.Rank() != silent {
						// Timeouts 1 s, up to 30 ms shorter or longer.
						g.SetTimeout(time.Second + time.Duration((g.Rank()*37)%61-30)*time.Millisecond)
						live = append(live, g)
					}
				}
				errs := onAll(live, c.op)
				for i, err := range errs {
					r := live[i].Rank()
					if err == nil {
						assert.False(t, c.depends(r, silent), "rank %d finished without rank %d", r, silent)
						continue
					}
					var pe *PeerError
					require.ErrorAs(t, err, &pe, "rank %d", r)
					assert.Equal(t, silent, pe.Rank, "rank %d: %v", r, err)
				}
			})
		}
	}
}

// onesList returns n tensors of m ones.
func onesList(n, m int) []*tensor.Tensor {
	ts := make([]*tensor.Tensor, n)
	for j := range ts {
		ts[j] = tensor.Ones([]int{m})
	}
	return ts
}

func TestTimeoutBlamesSilentRankOfThree(t *testing.T) {
	// Ranks 0 and 1 all-reduce while rank 2 never joins. Over the ring
	// rank 1 hears from rank 0 only, and rank 0 is stuck on rank 2: the
	// rank whose timer fires first must not make everyone blame rank 0.
	// Rank 1 names rank 0 unless rank 0's first message reaches it within
	// rank 1's timeout, so the timeouts are long enough for a loaded CI
	// machine to schedule rank 0; the subtests mostly wait, so they run in
	// parallel.
	for _, shm := range []bool{false, true} {
		for round := range 4 {
			t.Run(fmt.Sprintf("shm=%v/%d", shm, round), func(t *testing.T) {
				t.Parallel()
				gs, err := newLocalGroups(context.Background(), 3, Config{Timeout: 20 * time.Second, ChunkBytes: 256, DisableSharedMemory: !shm})
				require.NoError(t, err)
				for _, g := range gs {
					g.direct = 64
					t.Cleanup(func() { g.Close() })
				}
				// Rank 1's timer starts first when it enters first: the
				// race the relay must not lose. Rank 0's timeout is 30 ms
				// shorter to 30 ms longer than rank 1's, so either timer
				// may fire first (the relay is promised for equal
				// timeouts, give or take settleDelay).
				gs[1].SetTimeout(time.Second)
				gs[0].SetTimeout(time.Second + time.Duration(round*20-30)*time.Millisecond)
				errs := onAll(gs[:2], func(g *TCPGroup) error {
					return g.AllReduce(tensor.Ones([]int{3000}), Sum)
				})
				for r, err := range errs {
					var pe *PeerError
					require.ErrorAs(t, err, &pe, "rank %d", r)
					assert.Equal(t, 2, pe.Rank, "rank %d: %v", r, err)
				}
			})
		}
	}
}

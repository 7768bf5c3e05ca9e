package distributed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/netlab"
	"github.com/emberml/ember/tensor"
)

// helperEnv selects what TestHelperRank does in a child process.
const helperEnv = "EMBER_DIST_TEST_HELPER"

// startRanks starts n copies of the test binary running TestHelperRank in
// mode, as the ranks of one job over loopback.
func startRanks(t testing.TB, n int, mode string) []*exec.Cmd {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	require.NoError(t, ln.Close())
	return rankCommands(t, n, mode, "127.0.0.1", port, func(int) []string { return nil })
}

// rankCommands prepares n ranks of the test binary in mode; prefix(r) is
// a command line that rank r runs under (such as "ip netns exec NS").
func rankCommands(t testing.TB, n int, mode, masterHost, masterPort string, prefix func(r int) []string) []*exec.Cmd {
	cmds := make([]*exec.Cmd, n)
	for r := range n {
		argv := append(prefix(r), os.Args[0], "-test.run=^TestHelperRank$", "-test.count=1", "-test.v")
		c := exec.Command(argv[0], argv[1:]...)
		c.Env = append(os.Environ(), helperEnv+"="+mode,
			"RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n), "LOCAL_RANK="+strconv.Itoa(r),
			"MASTER_ADDR="+masterHost, "MASTER_PORT="+masterPort, EnvToken+"=process-test", EnvTimeout+"=20s")
		cmds[r] = c
	}
	t.Cleanup(func() {
		for _, c := range cmds {
			if c.Process != nil && c.ProcessState == nil {
				c.Process.Kill()
			}
		}
	})
	return cmds
}

func TestCollectivesAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	// in-place: all-reduces of ordinary tensors read and write the peers'
	// memory with cross-memory attach; staged: EMBER_DIST_CMA=0.
	for _, cma := range []bool{true, false} {
		t.Run(fmt.Sprintf("cma=%v", cma), func(t *testing.T) {
			cmds := startRanks(t, 3, "collectives")
			for _, c := range cmds {
				if !cma {
					c.Env = append(c.Env, EnvCMA+"=0")
				}
			}
			for r, out := range runAll(t, cmds) {
				assert.Contains(t, out, "shared memory: true", "rank %d", r)
				assert.Contains(t, out, fmt.Sprintf("cross memory: %v", cma), "rank %d", r)
				if r != 1 {
					assert.Contains(t, out, "subgroup shared memory: true", "rank %d", r)
				}
				if i := strings.Index(out, "huge pages:"); i >= 0 {
					t.Logf("rank %d: %s", r, strings.SplitN(out[i:], "\n", 2)[0])
				}
			}
		})
	}
}

// runAll runs the commands to completion, requires that all succeed and
// returns their outputs.
func runAll(t *testing.T, cmds []*exec.Cmd) []string {
	t.Helper()
	outs := make([][]byte, len(cmds))
	errs := make([]error, len(cmds))
	var wg sync.WaitGroup
	for r, c := range cmds {
		wg.Go(func() { outs[r], errs[r] = c.CombinedOutput() })
	}
	wg.Wait()
	for r := range cmds {
		require.NoError(t, errs[r], "rank %d:\n%s", r, outs[r])
		assert.Contains(t, string(outs[r]), "helper done", "rank %d", r)
	}
	res := make([]string, len(outs))
	for r, o := range outs {
		res[r] = string(o)
	}
	return res
}

// TestAcrossNetworkNamespaces runs ranks on two hosts of a netlab.Lab (network
// namespaces on a bridge): rank 0 on one, ranks 1 and 2 on the other. It
// needs root and iproute2 and is skipped otherwise.
func TestAcrossNetworkNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	lab := netlab.New(t, 2, "")
	cmds := rankCommands(t, 3, "collectives", lab.Addrs[0], "29513", func(r int) []string {
		return lab.On(min(r, 1))
	})
	// Separate network namespaces count as separate machines: TCP only.
	for r, out := range runAll(t, cmds) {
		assert.Contains(t, out, "shared memory: false", "rank %d", r)
	}
}

func TestTwoLevelsAcrossNetworkNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	// Two namespaces of two processes each: shared memory within each,
	// TCP between them.
	lab := netlab.New(t, 2, "")
	cmds := rankCommands(t, 4, "two-level", lab.Addrs[0], "29514", func(r int) []string { return lab.On(r / 2) })
	for r, out := range runAll(t, cmds) {
		assert.Contains(t, out, "two levels: true", "rank %d", r)
	}
}

func TestProcessKilledMidAllReduce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	// victim all-reduces 256 KiB (TCP's direct exchange), victim-shm
	// 1 MiB staged through shared memory (EMBER_DIST_CMA=0), victim-cma
	// 1 MiB in place with cross-memory attach, the victim dying once
	// every rank has published its tensor, and victim-shared a 1 MiB
	// tensor of SharedZeros.
	for _, mode := range []string{"victim", "victim-shm", "victim-cma", "victim-shared"} {
		t.Run(mode, func(t *testing.T) { processKilledMidAllReduce(t, mode) })
	}
}

// processKilledMidAllReduce kills rank 1 of 3 processes while the others
// wait for it in an all-reduce.
func processKilledMidAllReduce(t *testing.T, mode string) {
	const victim = 1
	cmds := startRanks(t, 3, mode)
	for _, c := range cmds {
		if mode == "victim-shm" {
			c.Env = append(c.Env, EnvCMA+"=0")
		}
	}
	outs := make([]strings.Builder, len(cmds))
	errs := make([]error, len(cmds))
	ready := make(chan struct{})
	var wg sync.WaitGroup
	for r, c := range cmds {
		if r == victim {
			pipe, err := c.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, c.Start())
			wg.Go(func() {
				sc := bufio.NewScanner(pipe)
				for sc.Scan() {
					outs[r].WriteString(sc.Text() + "\n")
					if strings.Contains(sc.Text(), "victim ready") {
						close(ready)
					}
				}
				errs[r] = c.Wait()
			})
			continue
		}
		wg.Go(func() {
			out, err := c.CombinedOutput()
			outs[r].Write(out)
			errs[r] = err
		})
	}
	select {
	case <-ready:
	case <-time.After(15 * time.Second):
		t.Fatal("the victim never got ready")
	}
	// The survivors are inside the all-reduce waiting for the victim.
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, cmds[victim].Process.Kill())
	wg.Wait()
	for r := range cmds {
		if r != victim {
			require.NoError(t, errs[r], "rank %d:\n%s", r, outs[r].String())
			assert.Contains(t, outs[r].String(), "got the expected error", "rank %d", r)
		}
	}
}

// TestHelperRank is one rank of the process tests above; it does nothing
// when run directly.
func TestHelperRank(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper for the process tests")
	}
	g, err := NewGroupFromEnv(context.Background())
	require.NoError(t, err)
	defer g.Close()
	n, r := g.Size(), g.Rank()
	fmt.Println("shared memory:", g.shm != nil)
	fmt.Println("cross memory:", g.shm != nil && g.shm.cma)
	switch mode {
	case "two-level":
		// 2 hosts of 2 ranks: all-reduces, and ZeroOptimizer's
		// exchanges, in two levels (3,000,001 floats: 2 windows).
		require.NotNil(t, g.hier)
		fmt.Println("two levels: true")
		for _, dt := range allDTypes {
			for _, size := range []int{5, 999, 70001, 3_000_001} {
				x := rankTensor(r, 0, size, dt)
				require.NoError(t, g.AllReduce(x, Sum))
				assert.Equal(t, roundTo(serialReduce(n, 0, size, dt, Sum), dt), x.Float64s(), "%v %d", dt, size)
				share := func(j int) parts { return parts{hostVec(rankTensor(r, j, size, dt))} }
				dst := newVec(dt, size)
				var spare []vec
				for range n - 2 {
					spare = append(spare, newVec(dt, size))
				}
				require.NoError(t, wait(g.reduceScatterPartsAsync(dt, share, share(r), spare, dst, Sum)))
				got := tensor.Zeros([]int{size}, dt)
				dst.store(got)
				assert.Equal(t, roundTo(serialReduce(n, r, size, dt, Sum), dt), got.Float64s())
				outs := make([]*tensor.Tensor, n)
				for j := range outs {
					outs[j] = tensor.Zeros([]int{size}, dt)
				}
				require.NoError(t, wait(g.allGatherPartsAsync(dt, parts{hostVec(rankTensor(r, 9, size, dt))}, func(j int) parts { return parts{hostVec(outs[j])} })))
				for j, o := range outs {
					if j != r {
						assert.Equal(t, rankTensor(j, 9, size, dt).Float64s(), o.Float64s())
					}
				}
			}
		}
	case "collectives":
		for _, dt := range allDTypes {
			for _, size := range []int{5, 999, 70001} {
				x := rankTensor(r, 0, size, dt)
				require.NoError(t, g.AllReduce(x, Sum))
				assert.Equal(t, roundTo(serialReduce(n, 0, size, dt, Sum), dt), x.Float64s())
				y := rankTensor(r, 1, size, dt)
				require.NoError(t, g.Broadcast(y, 2))
				assert.Equal(t, rankTensor(2, 1, size, dt).Float64s(), y.Float64s())
				outs := []*tensor.Tensor{tensor.Zeros([]int{size}, dt), tensor.Zeros([]int{size}, dt), tensor.Zeros([]int{size}, dt)}
				require.NoError(t, g.AllGather(outs, rankTensor(r, 2, size, dt)))
				for j, o := range outs {
					assert.Equal(t, rankTensor(j, 2, size, dt).Float64s(), o.Float64s())
				}
				// The rooted collectives, each from another root.
				z := rankTensor(r, 3, size, dt)
				require.NoError(t, g.Reduce(z, 1, Max))
				if r == 1 {
					assert.Equal(t, roundTo(serialReduce(n, 3, size, dt, Max), dt), z.Float64s())
				} else {
					assert.Equal(t, rankTensor(r, 3, size, dt).Float64s(), z.Float64s())
				}
				var gathered []*tensor.Tensor
				if r == 0 {
					gathered = []*tensor.Tensor{tensor.Zeros([]int{size}, dt), tensor.Zeros([]int{size}, dt), tensor.Zeros([]int{size}, dt)}
				}
				require.NoError(t, g.Gather(gathered, rankTensor(r, 4, size, dt), 0))
				for j, o := range gathered {
					assert.Equal(t, rankTensor(j, 4, size, dt).Float64s(), o.Float64s())
				}
				var pieces []*tensor.Tensor
				if r == 2 {
					pieces = []*tensor.Tensor{rankTensor(2, 5, size, dt), rankTensor(2, 6, size, dt), rankTensor(2, 7, size, dt)}
				}
				piece := tensor.Zeros([]int{size}, dt)
				require.NoError(t, g.Scatter(piece, pieces, 2))
				assert.Equal(t, rankTensor(2, 5+r, size, dt).Float64s(), piece.Float64s())
				require.NoError(t, g.Barrier())
			}
		}
		// SharedZeros tensors, one window (1 MiB slots) and several.
		for _, dt := range allDTypes {
			for _, size := range []int{999, 700001} {
				x, err := g.SharedZeros([]int{size}, dt)
				require.NoError(t, err)
				require.Equal(t, g.shm != nil, isShared(g, x))
				for _, op := range []ReduceOp{Sum, Max} {
					x.CopyFrom(rankTensor(r, int(op), size, dt))
					require.NoError(t, g.AllReduce(x, op))
					assert.Equal(t, roundTo(serialReduce(n, int(op), size, dt, op), dt), x.Float64s(), "shared %s %s n=%d", op, dt, size)
				}
			}
		}
		// Ordinary tensors: views at an offset, every op at small sizes
		// (in place even below cmaMinBytes), one op per dtype for a
		// million elements.
		if g.shm != nil {
			g.shm.cmaFrom = 0
		}
		for _, dt := range allDTypes {
			for _, op := range []ReduceOp{Sum, Max, Min, Prod} {
				for _, size := range []int{1, 7, 4099} {
					require.NoError(t, allReduceView(t, g, int(op), size, dt, op))
				}
			}
		}
		if g.shm != nil {
			g.shm.cmaFrom = cmaMinBytes
		}
		for _, c := range largeCases {
			require.NoError(t, allReduceView(t, g, int(c.op), 1_000_003, c.dt, c.op))
		}
		// One tensor all-reduced again and again, as gradients are: from
		// the second time on, it is moved onto huge pages first.
		const bigN = 3*hugePageBytes/4 + 1001
		big := tensor.Zeros([]int{bigN}, tensor.Float32)
		for k := range 3 {
			big.CopyFrom(rankTensor(r, k, bigN, tensor.Float32))
			require.NoError(t, g.AllReduce(big, Sum))
			assert.Equal(t, roundTo(serialReduce(n, k, bigN, tensor.Float32, Sum), tensor.Float32), big.Float64s(), "again %d", k)
		}
		if g.shm != nil && g.shm.cma {
			fmt.Printf("huge pages: %d collapses, kernel refused: %v\n", g.shm.huge.collapsed, g.shm.huge.off)
		}
		// A subgroup of two of the processes sets up shared memory of its
		// own: an ordinary tensor in place, a SharedZeros one, a broadcast.
		sub, err := g.NewSubgroup([]int{2, 0})
		require.NoError(t, err)
		if sub != nil {
			defer sub.Close()
			require.Equal(t, g.shm != nil, sub.shm != nil)
			sum := func(k, size int) []float64 {
				a, b := rankTensor(2, k, size, tensor.Float32).Float64s(), rankTensor(0, k, size, tensor.Float32).Float64s()
				for i := range a {
					a[i] += b[i]
				}
				return a
			}
			x := rankTensor(r, 0, 1_000_003, tensor.Float32)
			require.NoError(t, sub.AllReduce(x, Sum))
			assert.Equal(t, sum(0, 1_000_003), x.Float64s(), "subgroup, ordinary tensor")
			y, err := sub.SharedZeros([]int{70001}, tensor.Float32)
			require.NoError(t, err)
			require.Equal(t, sub.shm != nil, isShared(sub, y))
			y.CopyFrom(rankTensor(r, 1, 70001, tensor.Float32))
			require.NoError(t, sub.AllReduce(y, Sum))
			assert.Equal(t, sum(1, 70001), y.Float64s(), "subgroup, SharedZeros tensor")
			z := rankTensor(r, 2, 999, tensor.Int64)
			require.NoError(t, sub.Broadcast(z, 0))
			assert.Equal(t, rankTensor(2, 2, 999, tensor.Int64).Float64s(), z.Float64s())
			fmt.Println("subgroup shared memory:", sub.shm != nil)
		}
		require.NoError(t, g.Barrier())
	case "bench", "latency", "links", "machines":
		iters, err := strconv.Atoi(os.Getenv("EMBER_DIST_BENCH_ITERS"))
		require.NoError(t, err)
		switch mode {
		case "latency":
			require.NoError(t, latencyRank(g, iters))
		case "links":
			require.NoError(t, linksRank(g, iters, os.Getenv("MASTER_ADDR")))
		case "machines":
			require.NoError(t, machinesRank(g, iters, os.Getenv("MASTER_ADDR")))
		default:
			require.NoError(t, benchRank(g, iters))
		}
	case "victim", "victim-shm", "victim-cma", "victim-shared":
		x := tensor.Ones([]int{1 << 16})
		switch mode {
		case "victim-shm", "victim-cma":
			require.NotNil(t, g.shm)
			require.Equal(t, mode == "victim-cma", g.shm.cma)
			x = tensor.Ones([]int{1 << 18})
		case "victim-shared":
			x, err = g.SharedZeros([]int{1 << 18}, tensor.Float32)
			require.NoError(t, err)
			require.True(t, isShared(g, x))
		}
		require.NoError(t, g.AllReduce(x, Sum))
		if r == 1 {
			ready := func() {
				fmt.Println("victim ready")
				time.Sleep(time.Minute) // killed by the parent
			}
			if mode != "victim-cma" {
				ready()
				return
			}
			// Inside the all-reduce, its tensor published.
			g.shm.pause = ready
			g.AllReduce(x, Sum)
			return
		}
		err := g.AllReduce(x, Sum)
		var pe *PeerError
		require.True(t, errors.As(err, &pe), "error %v", err)
		require.Equal(t, 1, pe.Rank, "error %v", err)
		fmt.Println("got the expected error:", err)
	}
	fmt.Println("helper done")
}

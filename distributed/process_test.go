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

	"github.com/emberml/ember/tensor"
)

// helperEnv selects what TestHelperRank does in a child process.
const helperEnv = "EMBER_DIST_TEST_HELPER"

// startRanks starts n copies of the test binary running TestHelperRank in
// mode, as the ranks of one job over loopback.
func startRanks(t *testing.T, n int, mode string) []*exec.Cmd {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	require.NoError(t, ln.Close())
	cmds := make([]*exec.Cmd, n)
	for r := range n {
		c := exec.Command(os.Args[0], "-test.run=^TestHelperRank$", "-test.count=1", "-test.v")
		c.Env = append(os.Environ(), helperEnv+"="+mode,
			"RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n), "LOCAL_RANK="+strconv.Itoa(r),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+port, EnvToken+"=process-test", EnvTimeout+"=20s")
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
	cmds := startRanks(t, 3, "collectives")
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
}

func TestProcessKilledMidAllReduce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const victim = 1
	cmds := startRanks(t, 3, "victim")
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
	switch mode {
	case "collectives":
		for _, dt := range allDTypes {
			for _, size := range []int{5, 999} {
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
			}
		}
		require.NoError(t, g.Barrier())
	case "victim":
		x := tensor.Ones([]int{1 << 16})
		require.NoError(t, g.AllReduce(x, Sum))
		if r == 1 {
			fmt.Println("victim ready")
			time.Sleep(time.Minute) // killed by the parent
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

package distributed

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rendezvousJob starts ranks of a world of n ranks on a fresh store
// address, rank r with token(r), and keeps each rank's error from
// NewTCPGroup and the time it took (groups that form are closed).
type rendezvousJob struct {
	n           int
	store       net.Listener
	timeout     time.Duration
	token       func(rank int) string
	failureFile func(rank int) string // nil: none
	wg          sync.WaitGroup
	errs        []error
	took        []time.Duration
}

func newRendezvousJob(t *testing.T, n int, timeout time.Duration, token func(int) string) *rendezvousJob {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return &rendezvousJob{n: n, store: ln, timeout: timeout, token: token, errs: make([]error, n), took: make([]time.Duration, n)}
}

// start runs rank r's NewTCPGroup in a goroutine; done is closed when it
// returns.
func (j *rendezvousJob) start(r int) (done chan struct{}) {
	done = make(chan struct{})
	cfg := Config{Rank: r, WorldSize: j.n, MasterAddr: j.store.Addr().String(), ListenAddr: "127.0.0.1",
		Token: j.token(r), Timeout: j.timeout, DisableSharedMemory: true}
	if j.failureFile != nil {
		cfg.FailureFile = j.failureFile(r)
	}
	var ln net.Listener
	if r == 0 {
		ln = j.store
	}
	j.wg.Go(func() {
		defer close(done)
		begin := time.Now()
		g, err := newTCPGroup(context.Background(), cfg, ln)
		j.took[r] = time.Since(begin)
		if g != nil {
			g.Close()
		}
		j.errs[r] = err
	})
	return done
}

func TestWrongTokenFailsEveryRankNamingIt(t *testing.T) {
	// One rank with another token: every rank fails, naming rank 2 and
	// authentication, without waiting for the (long) timeout.
	const n = 4
	job := newRendezvousJob(t, n, 2*time.Minute, func(r int) string {
		if r == 2 {
			return "wrong"
		}
		return "right"
	})
	for r := range n {
		job.start(r)
	}
	job.wg.Wait()
	for r, err := range job.errs {
		require.Error(t, err, "rank %d", r)
		assert.ErrorIs(t, err, errAuth, "rank %d", r)
		assert.Contains(t, err.Error(), "authentication failed between rank 2 and rank 0", "rank %d", r)
		t.Logf("rank %d returned after %v: %v", r, job.took[r], err)
	}
	assert.EqualError(t, job.errs[1], "distributed: rendezvous: rank 2 failed (reported by rank 0): authentication failed between rank 2 and rank 0: their tokens (EMBER_DIST_TOKEN) differ")
	for _, r := range []int{0, 1, 3} {
		var pe *PeerError
		require.ErrorAs(t, job.errs[r], &pe, "rank %d", r)
		assert.Equal(t, 2, pe.Rank, "rank %d blames rank 2", r)
	}
}

func TestLateRankHearsOfAuthenticationFailure(t *testing.T) {
	// Rank 3 starts after rank 1's authentication has failed: rank 0 still
	// tells it, and returns once it has.
	const n = 4
	job := newRendezvousJob(t, n, 2*time.Minute, func(r int) string {
		if r == 1 {
			return "wrong"
		}
		return "right"
	})
	rank0 := job.start(0)
	<-job.start(1)
	<-job.start(2)
	select {
	case <-rank0:
		t.Fatal("rank 0 returned before telling rank 3")
	default:
	}
	job.start(3)
	job.wg.Wait()
	for r, err := range job.errs {
		assert.ErrorIs(t, err, errAuth, "rank %d", r)
		assert.Contains(t, err.Error(), "between rank 1 and rank 0", "rank %d", r)
	}
	assert.Contains(t, job.errs[3].Error(), "rank 1 failed (reported by rank 0)")
}

func TestMissingRankIsNamedToEveryRank(t *testing.T) {
	// Rank 2 never starts: rank 0 gives up (a little before its timeout)
	// and tells rank 1, whose timeout is longer, which rank is missing.
	job := newRendezvousJob(t, 3, time.Second, func(int) string { return "t" })
	job.start(0)
	job.timeout = time.Minute
	job.start(1)
	job.wg.Wait()
	assert.EqualError(t, job.errs[0], "distributed: rendezvous: peer rank 2: 2 of 3 ranks registered with rank 0; missing rank(s) 2: context deadline exceeded")
	assert.EqualError(t, job.errs[1], "distributed: rendezvous: rank 2 failed (reported by rank 0): rank 2 had not registered when rank 0 stopped waiting, at the end of its timeout (is it running, with the same MASTER_ADDR and WORLD_SIZE?)")
}

// pipeRank is a registered rank's connection to the store; its bytes are
// what the store sent it, once the store closes it.
func pipeRank(t *testing.T) (store net.Conn, received <-chan []byte) {
	c, peer := net.Pipe()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(peer)
		got <- b
	}()
	t.Cleanup(func() { c.Close(); peer.Close() })
	return c, got
}

func TestStoreArrivals(t *testing.T) {
	s := newStore(4, "addr0")
	c1, got1 := pipeRank(t)
	assert.False(t, s.arrive(storeArrival{rank: 1, addr: "addr1", conn: c1}))
	// A stranger that claims the registered rank 1 with a wrong proof is
	// ignored, and a second process with rank 1 is turned away.
	assert.False(t, s.arrive(storeArrival{rank: 1, authFailed: true}))
	second, gotSecond := pipeRank(t)
	assert.False(t, s.arrive(storeArrival{rank: 1, addr: "other", conn: second}))
	assert.Empty(t, <-gotSecond)
	assert.Equal(t, -1, s.failed)
	assert.Equal(t, 2, s.unsettled)
	assert.Equal(t, []string{"addr0", "addr1", "", ""}, s.addrs)

	// Rank 3 fails authentication: registered rank 1 hears of it at once,
	// and rank 2, arriving later, hears the same.
	assert.True(t, s.arrive(storeArrival{rank: 3, authFailed: true}))
	notice := []byte{replyFailed, 3, 0, 0, 0, causeAuth}
	assert.Equal(t, notice, <-got1)
	assert.False(t, s.arrive(storeArrival{rank: 2, authFailed: true}), "a second failure changes nothing")
	assert.Equal(t, 0, s.unsettled)
	late, gotLate := pipeRank(t)
	assert.False(t, s.arrive(storeArrival{rank: 2, addr: "addr2", conn: late}))
	assert.Equal(t, notice, <-gotLate)
	assert.EqualError(t, s.failure(), "distributed: rendezvous: peer rank 3: authentication failed between rank 3 and rank 0: their tokens (EMBER_DIST_TOKEN) differ")
	addrs, err := readStoreReply(bytes.NewReader(notice), 4)
	assert.Nil(t, addrs)
	assert.EqualError(t, err, "distributed: rendezvous: rank 3 failed (reported by rank 0): authentication failed between rank 3 and rank 0: their tokens (EMBER_DIST_TOKEN) differ")
}

func TestRankThatNeverDialsIsNamed(t *testing.T) {
	// Rank 2 registers with rank 0 and then never connects to its peers:
	// ranks 0 and 1 time out naming it.
	job := newRendezvousJob(t, 3, 2*time.Second, func(int) string { return "t" })
	job.start(0)
	job.start(1)
	cfg := Config{Rank: 2, WorldSize: 3, MasterAddr: job.store.Addr().String(), Token: "t"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addrs, err := joinRendezvous(ctx, cfg, "127.0.0.1:9")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:9", addrs[2])
	job.wg.Wait()
	for r := range 2 {
		var pe *PeerError
		require.ErrorAs(t, job.errs[r], &pe, "rank %d", r)
		assert.Equal(t, 2, pe.Rank, "rank %d: %v", r, job.errs[r])
		assert.Contains(t, job.errs[r].Error(), fmt.Sprintf("distributed: connect: peer rank 2: it did not connect to rank %d: ", r))
	}
}

package distributed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a TCP process group.
type Config struct {
	// Rank is this process's rank in [0, WorldSize).
	Rank int
	// WorldSize is the number of ranks (at least 1).
	WorldSize int
	// LocalRank is the rank among the processes of this machine
	// (informational, e.g. to pick a device).
	LocalRank int
	// MasterAddr is "host:port" where rank 0 runs the rendezvous server;
	// rank 0 listens there, the others connect to it.
	MasterAddr string
	// ListenAddr is the address this rank listens on for its peers'
	// connections during setup: "host" or "host:port". Empty means the
	// local address of the interface that routes to MasterAddr, with a
	// port chosen by the system. The listener is closed once every peer
	// is connected.
	ListenAddr string
	// Token is the shared secret peers prove they know (HMAC-SHA256
	// challenge) before any data moves. Every rank must use the same
	// token; an empty token still runs the handshake but keeps out only
	// processes that are not Ember peers.
	Token string
	// Timeout bounds the rendezvous and each later operation; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// MaxFrameBytes bounds the payload of one message from a peer; 0
	// means 1 GiB. Larger transfers are split into frames of ChunkBytes.
	MaxFrameBytes int
	// ChunkBytes is the size of the pieces large transfers are cut into,
	// so that reduction overlaps communication; 0 means 1 MiB. It is
	// also the size of the shared-memory pieces of local ranks.
	ChunkBytes int
	// DisableSharedMemory keeps every transfer on TCP even between ranks
	// of one machine (see the package doc). The shared-memory path is used
	// only when every rank allows it.
	DisableSharedMemory bool
	// DisableCrossMemory keeps all-reduces of ordinary tensors between
	// ranks of one machine on the staged shared-memory path instead of
	// reading the peers' tensors in place (see the package doc). The
	// in-place path is used only when every rank allows it.
	DisableCrossMemory bool
	// FailureFile, when set, names a file to which the group writes a
	// FailureReport (JSON) when it fails: the rank at fault, the rank that
	// reported it, when, and the error. ember launch sets it through
	// EMBER_DIST_FAILURE_FILE to name the rank that failed first.
	FailureFile string

	// failCrossMemoryProbe makes this rank's cross-memory probe fail, as
	// a kernel that refuses process_vm_readv would (tests only).
	failCrossMemoryProbe bool
	// machines, when positive, makes the ranks of one process pretend to
	// be on that many machines, ranks numbered machine after machine
	// (tests only).
	machines int
}

// Environment variables read by ConfigFromEnv (torchrun's names, plus
// Ember's token and listen address).
const (
	EnvMasterAddr  = "MASTER_ADDR"
	EnvMasterPort  = "MASTER_PORT"
	EnvRank        = "RANK"
	EnvWorldSize   = "WORLD_SIZE"
	EnvLocalRank   = "LOCAL_RANK"
	EnvToken       = "EMBER_DIST_TOKEN"
	EnvListenAddr  = "EMBER_DIST_LISTEN"
	EnvTimeout     = "EMBER_DIST_TIMEOUT"
	EnvShm         = "EMBER_DIST_SHM"
	EnvCMA         = "EMBER_DIST_CMA"
	EnvFailureFile = "EMBER_DIST_FAILURE_FILE"
)

// ConfigFromEnv reads a Config from the torchrun-compatible environment:
// MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE are required, LOCAL_RANK
// defaults to RANK, EMBER_DIST_TOKEN is the shared secret,
// EMBER_DIST_LISTEN the optional listen address, EMBER_DIST_TIMEOUT an
// optional time.Duration string, EMBER_DIST_SHM=0 sets
// DisableSharedMemory, EMBER_DIST_CMA=0 DisableCrossMemory, and
// EMBER_DIST_FAILURE_FILE is the FailureFile.
func ConfigFromEnv() (Config, error) {
	get := func(k string) (string, error) {
		v, ok := os.LookupEnv(k)
		if !ok || v == "" {
			return "", fmt.Errorf("distributed: environment variable %s is not set", k)
		}
		return v, nil
	}
	atoi := func(k string) (int, error) {
		v, err := get(k)
		if err != nil {
			return 0, err
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("distributed: %s=%q is not an integer", k, v)
		}
		return n, nil
	}
	var c Config
	host, err := get(EnvMasterAddr)
	if err != nil {
		return c, err
	}
	port, err := get(EnvMasterPort)
	if err != nil {
		return c, err
	}
	c.MasterAddr = net.JoinHostPort(host, port)
	if c.Rank, err = atoi(EnvRank); err != nil {
		return c, err
	}
	if c.WorldSize, err = atoi(EnvWorldSize); err != nil {
		return c, err
	}
	c.LocalRank = c.Rank
	if _, ok := os.LookupEnv(EnvLocalRank); ok {
		if c.LocalRank, err = atoi(EnvLocalRank); err != nil {
			return c, err
		}
	}
	c.Token = os.Getenv(EnvToken)
	c.DisableSharedMemory = os.Getenv(EnvShm) == "0"
	c.DisableCrossMemory = os.Getenv(EnvCMA) == "0"
	c.ListenAddr = os.Getenv(EnvListenAddr)
	c.FailureFile = os.Getenv(EnvFailureFile)
	if v := os.Getenv(EnvTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("distributed: %s=%q is not a positive duration", EnvTimeout, v)
		}
		c.Timeout = d
	}
	return c, c.validate()
}

// validate checks the fields that do not depend on the network.
func (c *Config) validate() error {
	if c.WorldSize < 1 {
		return fmt.Errorf("distributed: world size %d, want at least 1", c.WorldSize)
	}
	if c.Rank < 0 || c.Rank >= c.WorldSize {
		return fmt.Errorf("distributed: rank %d outside [0, %d)", c.Rank, c.WorldSize)
	}
	if c.WorldSize > 1 && c.MasterAddr == "" {
		return errors.New("distributed: MasterAddr is empty")
	}
	if c.Timeout < 0 || c.MaxFrameBytes < 0 || c.ChunkBytes < 0 {
		return errors.New("distributed: negative Timeout, MaxFrameBytes or ChunkBytes")
	}
	return nil
}

// NewGroupFromEnv is ConfigFromEnv followed by NewTCPGroup.
func NewGroupFromEnv(ctx context.Context) (*TCPGroup, error) {
	c, err := ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	return NewTCPGroup(ctx, c)
}

// TCPGroup is the pure-Go ProcessGroup: a full mesh of authenticated TCP
// connections between the ranks, and shared memory between the ranks of
// one machine (see the package documentation). Over TCP, AllReduce runs a
// chunked ring (reduce-scatter then all-gather) for large tensors, and for
// small ones a binomial tree (from 3 ranks) or a direct exchange reduced
// in rank order (2 ranks); ReduceScatter and AllGather go round the same
// pipelined ring when large (ring.go) and exchange directly when small;
// Broadcast passes large tensors along a pipelined chain and small ones
// down a binomial tree, and Reduce goes up a binomial tree (tree.go); the
// other collectives exchange directly with the ranks involved. Where the
// ranks sit evenly on several machines, AllReduce, ReduceScatter and
// AllGather go in two levels, shared memory within each (hier.go).
type TCPGroup struct {
	rank, size int
	timeout    atomic.Int64
	maxFrame   uint64
	chunk      int
	direct     int       // AllReduce, Broadcast, ReduceScatter and AllGather payloads up to this many bytes (in all) skip the ring and the chain (TCP only)
	treeMin    int       // ... over a tree in groups of this many ranks or more (treeMinRanks)
	bufs       sync.Pool // *[]byte of cap chunk: received payloads, reused
	peers      []*peer   // by rank in this group; nil at this rank

	// root is the world group, which owns the connections and the
	// failure state; gid tells this group's frames apart on the wire.
	root    *TCPGroup
	gid     byte
	members []int   // world ranks of this group's ranks
	links   []*link // world group only: by world rank
	cfg     Config  // world group only: what subgroups set up shared memory by
	subMu   sync.Mutex
	nextGID int
	subs    []*TCPGroup // world group only: its subgroups, closed with it

	// failure state: done is closed by the first abort or Close.
	failMu sync.Mutex
	err    error
	done   chan struct{}
	// reportOnce writes the FailureReport of the first failure (world
	// group only).
	reportOnce sync.Once

	// the operation queue and its worker.
	queue opQueue[*work]
	wdone chan struct{}

	seq uint64 // collective sequence number; worker goroutine only

	// shm moves the group's large collectives through shared memory when
	// every rank is on this machine; nil otherwise (and in hier's groups
	// between machines). Worker goroutine only, then Close.
	shm       *shmGroup
	unmapOnce sync.Once
	// hier splits the world group's all-reduces between shared memory
	// within each machine and TCP between machines (hier.go); nil where
	// the ranks are not spread evenly over several machines.
	hier *hierarchy
}

// link is the connection to one other rank, shared by every group that
// contains both ranks. Received frames wait in one inbox per group.
type link struct {
	global int // world rank of the peer
	addr   string
	conn   net.Conn
	wmu    sync.Mutex // one frame written at a time

	mu    sync.Mutex
	boxes map[byte]*inbox
	end   *frame // the error that ended the connection, once read
	sinkState
}

// inbox queues the frames of one group from one peer.
type inbox struct {
	frames []frame
	notify chan struct{} // capacity 1: "frames is not empty"
}

// box returns the inbox of group gid; l.mu must be held.
func (l *link) box(gid byte) *inbox {
	b := l.boxes[gid]
	if b == nil {
		b = &inbox{notify: make(chan struct{}, 1)}
		if l.end != nil {
			b.push(*l.end)
		}
		l.boxes[gid] = b
	}
	return b
}

// push appends f and signals a waiting receiver.
func (b *inbox) push(f frame) {
	b.frames = append(b.frames, f)
	select {
	case b.notify <- struct{}{}:
	default:
	}
}

// deliver queues a data frame for its group.
func (l *link) deliver(f frame) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.landed()
	l.box(f.group).push(f)
}

// fail queues the error that ended the connection behind every group's
// frames (and those of groups that have not received anything yet).
func (l *link) fail(f frame) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.landed()
	l.end = &f
	for _, b := range l.boxes {
		b.push(f)
	}
}

// next returns group gid's next frame, or ok false if none is queued,
// with the channel that signals the next arrival.
func (l *link) next(gid byte) (f frame, ok bool, notify <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.box(gid)
	if len(b.frames) == 0 {
		return frame{}, false, b.notify
	}
	f = b.frames[0]
	b.frames[0] = frame{}
	b.frames = b.frames[1:]
	return f, true, nil
}

// ended reports whether the connection has ended (its read loop saw an
// error or an abort).
func (l *link) ended() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end != nil
}

// peer is another rank as seen from one group.
type peer struct {
	rank int // rank in the group
	*link
	sendSeq uint64 // point-to-point sequence numbers; worker only
	recvSeq uint64
	// heardSeq is the last collective p has sent a message of, and
	// heardAt when the first came; only the receiver from p uses them.
	heardSeq uint64
	heardAt  time.Time
}

var _ ProcessGroup = (*TCPGroup)(nil)

// NewTCPGroup joins the group described by cfg: rank 0 serves the
// rendezvous at MasterAddr, every rank registers its listen address there,
// and the ranks connect to each other and authenticate. It returns when
// the mesh is complete, or an error when ctx ends, cfg.Timeout passes or a
// peer fails the handshake.
func NewTCPGroup(ctx context.Context, cfg Config) (*TCPGroup, error) {
	return newTCPGroup(ctx, cfg, nil)
}

// newTCPGroup is NewTCPGroup; rank 0 uses storeLn, when not nil, as the
// already bound rendezvous listener.
func newTCPGroup(ctx context.Context, cfg Config, storeLn net.Listener) (*TCPGroup, error) {
	if err := cfg.validate(); err != nil {
		if storeLn != nil {
			storeLn.Close()
		}
		writeFailureReport(cfg.FailureFile, newFailureReport(cfg.Rank, err, -1))
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxFrameBytes == 0 {
		cfg.MaxFrameBytes = defaultMaxFrameBytes
	}
	if cfg.ChunkBytes == 0 {
		cfg.ChunkBytes = 1 << 20
	}
	g := &TCPGroup{
		rank: cfg.Rank, size: cfg.WorldSize,
		maxFrame: uint64(cfg.MaxFrameBytes), chunk: max(cfg.ChunkBytes, 8), direct: directLimit, treeMin: treeMinRanks,
		peers: make([]*peer, cfg.WorldSize), links: make([]*link, cfg.WorldSize), members: make([]int, cfg.WorldSize),
		done: make(chan struct{}), wdone: make(chan struct{}),
	}
	g.root, g.cfg = g, cfg
	for r := range g.members {
		g.members[r] = r
	}
	g.timeout.Store(int64(cfg.Timeout))
	if cfg.WorldSize > 1 {
		ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
		if err := g.connect(ctx, cfg, storeLn); err != nil {
			for _, l := range g.links {
				if l != nil {
					l.conn.Close()
				}
			}
			g.report(err, -1)
			return nil, err
		}
	} else if storeLn != nil {
		storeLn.Close()
	}
	for r, l := range g.links {
		if l != nil {
			g.peers[r] = &peer{rank: r, link: l}
			go g.readLoop(l)
		}
	}
	go g.worker()
	if cfg.WorldSize > 1 {
		if err := wait(g.submit(func(deadline time.Time) error { return g.setupShm(cfg, deadline) })); err != nil {
			g.report(err, -1) // (the abort has reported it)
			g.Close()
			return nil, err
		}
		if err := g.setupHierarchy(cfg); err != nil {
			g.report(err, -1)
			g.Close()
			return nil, err
		}
	}
	return g, nil
}

// Rank implements ProcessGroup.
func (g *TCPGroup) Rank() int { return g.rank }

// Size implements ProcessGroup.
func (g *TCPGroup) Size() int { return g.size }

// Timeout implements ProcessGroup.
func (g *TCPGroup) Timeout() time.Duration { return time.Duration(g.timeout.Load()) }

// SetTimeout implements ProcessGroup; it panics if d is not positive.
func (g *TCPGroup) SetTimeout(d time.Duration) {
	if d <= 0 {
		panic(fmt.Sprintf("distributed.SetTimeout: timeout %v must be positive", d))
	}
	g.timeout.Store(int64(d))
	if g.hier != nil {
		g.hier.local.SetTimeout(d)
		g.hier.cross.SetTimeout(d)
	}
}

// connect runs the rendezvous and builds the mesh.
func (g *TCPGroup) connect(ctx context.Context, cfg Config, storeLn net.Listener) error {
	deadline, _ := ctx.Deadline()
	listenAddr, err := resolveListenAddr(cfg)
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", listenAddr)
	if err != nil {
		return fmt.Errorf("distributed: rank %d: listen on %s: %w", g.rank, listenAddr, err)
	}
	defer ln.Close()
	stopOnCancel := context.AfterFunc(ctx, func() { ln.Close() })
	defer stopOnCancel()

	var addrs []string
	if g.rank == 0 {
		if storeLn == nil {
			if storeLn, err = lc.Listen(ctx, "tcp", cfg.MasterAddr); err != nil {
				return fmt.Errorf("distributed: rank 0: listen for rendezvous on %s: %w", cfg.MasterAddr, err)
			}
		}
		addrs, err = serveRendezvous(ctx, storeLn, cfg, ln.Addr().String())
	} else {
		addrs, err = joinRendezvous(ctx, cfg, ln.Addr().String())
	}
	if err != nil {
		return err
	}
	// Dial the lower ranks, accept the higher ones.
	errs := make(chan error, 2)
	go func() {
		for j := 0; j < g.rank; j++ {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", addrs[j])
			if err != nil {
				errs <- &PeerError{Op: "connect", Rank: j, Reporter: -1, Err: err}
				return
			}
			if _, err := handshake(c, cfg.Token, purposeMesh, roleDial, g.rank, g.size, j, deadline); err != nil {
				c.Close()
				errs <- &PeerError{Op: "connect", Rank: j, Reporter: -1, Err: err}
				return
			}
			g.links[j] = newLink(j, addrs[j], c)
		}
		errs <- nil
	}()
	go func() {
		got, err := acceptPeers(ctx, ln, g.size-1-g.rank, func(c net.Conn, deadline time.Time) (int, string, error) {
			h, err := handshake(c, cfg.Token, purposeMesh, roleAccept, g.rank, g.size, -1, deadline)
			if err != nil {
				return 0, "", err
			}
			if h.rank <= g.rank {
				return 0, "", fmt.Errorf("rank %d dialed rank %d, but lower ranks are dialed", h.rank, g.rank)
			}
			return h.rank, addrs[h.rank], nil
		})
		connected := map[int]bool{}
		for _, a := range got {
			g.links[a.rank] = newLink(a.rank, a.addr, a.conn)
			connected[a.rank] = true
		}
		if err != nil {
			// Name the first higher rank that did not connect (the
			// listener is also closed when this rank's own dial fails,
			// an error that then comes first).
			missing := g.rank + 1
			for connected[missing] {
				missing++
			}
			err = &PeerError{Op: "connect", Rank: missing, Reporter: -1, Err: fmt.Errorf("it did not connect to rank %d: %w", g.rank, err)}
		}
		errs <- err
	}()
	var first error
	for range 2 {
		if err := <-errs; err != nil && first == nil {
			first = err
			ln.Close()
		}
	}
	return first
}

// ctxErr prefers the context's error (a timeout reads better than "use of
// closed network connection").
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// newLink wraps an authenticated connection.
func newLink(rank int, addr string, c net.Conn) *link {
	return &link{global: rank, addr: addr, conn: c, boxes: map[byte]*inbox{}}
}

// resolveListenAddr picks the mesh listen address.
func resolveListenAddr(cfg Config) (string, error) {
	a := cfg.ListenAddr
	if a == "" {
		mh, _, err := net.SplitHostPort(cfg.MasterAddr)
		if err != nil {
			return "", fmt.Errorf("distributed: MasterAddr %q: %w", cfg.MasterAddr, err)
		}
		if cfg.Rank == 0 {
			return net.JoinHostPort(mh, "0"), nil
		}
		// The local address of the route to the master (UDP "dial" sends
		// nothing).
		c, err := net.Dial("udp", cfg.MasterAddr)
		if err != nil {
			return "", fmt.Errorf("distributed: finding the interface that reaches %s: %w", cfg.MasterAddr, err)
		}
		defer c.Close()
		h, _, _ := net.SplitHostPort(c.LocalAddr().String())
		return net.JoinHostPort(h, "0"), nil
	}
	if _, _, err := net.SplitHostPort(a); err != nil {
		return net.JoinHostPort(a, "0"), nil
	}
	return a, nil
}

// handshakeTimeout bounds one connection's handshake during setup, so that
// a stranger who connects and stays silent cannot hold up the others.
const handshakeTimeout = 10 * time.Second

// acceptedPeer is a connection that passed acceptPeers' check.
type acceptedPeer struct {
	rank int
	addr string
	conn net.Conn
}

// acceptPeers accepts connections on ln until want distinct ranks have
// passed check (which runs concurrently per connection, with its own
// deadline, and returns the peer's rank and address). Connections that
// fail the check or repeat a rank are closed and ignored. On error the
// peers accepted so far are returned with it, for the caller to close.
func acceptPeers(ctx context.Context, ln net.Listener, want int, check func(c net.Conn, deadline time.Time) (int, string, error)) ([]acceptedPeer, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan acceptedPeer)
	acceptErr := make(chan error, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				acceptErr <- err
				return
			}
			go func() {
				deadline := time.Now().Add(handshakeTimeout)
				if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
					deadline = d
				}
				rank, addr, err := check(c, deadline)
				if err != nil {
					c.Close()
					return
				}
				c.SetDeadline(time.Time{})
				select {
				case results <- acceptedPeer{rank, addr, c}:
				case <-ctx.Done():
					c.Close()
				}
			}()
		}
	}()
	var got []acceptedPeer
	seen := map[int]bool{}
	for len(got) < want {
		select {
		case a := <-results:
			if seen[a.rank] {
				a.conn.Close()
				continue
			}
			seen[a.rank] = true
			got = append(got, a)
		case err := <-acceptErr:
			return got, fmt.Errorf("%d of %d ranks connected: %w", len(got), want, ctxErr(ctx, err))
		case <-ctx.Done():
			return got, fmt.Errorf("%d of %d ranks connected: %w", len(got), want, ctx.Err())
		}
	}
	return got, nil
}

// readLoop reads l's frames into the inboxes of their groups until the
// connection ends. It never blocks on a slow group, so one group's traffic
// cannot stall another's. An abort frame fails the world at once; an error
// is queued behind the frames that preceded it, so a peer that finished and
// closed is not mistaken for a failure while its last messages are unread.
func (g *TCPGroup) readLoop(l *link) {
	// A small read buffer: it batches the headers and payloads of small
	// frames, while large payloads are read past it straight into their
	// buffer (or their sink) with few bytes copied out of it.
	r := bufio.NewReaderSize(l.conn, 4<<10)
	inPlace := false
	alloc := func(h frameHeader) []byte {
		if b := l.land(h); b != nil {
			inPlace = true
			return b
		}
		inPlace = false
		if h.n > uint64(g.chunk) {
			return nil // read as it arrives: a header alone allocates no more than a chunk
		}
		return g.payloadBuf(int(h.n))
	}
	for {
		f, err := readFrame(r, g.maxFrame, alloc)
		f.inPlace = inPlace
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				err = fmt.Errorf("connection closed (%w)", err)
			}
			l.fail(frame{err: &PeerError{Rank: l.global, Reporter: -1, Err: err}})
			return
		}
		if f.kind == frameAbort {
			failed, reason := parseAbort(f.payload)
			pe := &PeerError{Rank: failed, Reporter: l.global, Err: errors.New(reason)}
			blame := failed
			if failed < 0 || failed >= g.size || failed == g.rank {
				pe = &PeerError{Rank: l.global, Reporter: -1, Err: fmt.Errorf("aborted: %s", reason)}
				if failed != g.rank {
					blame = l.global
				}
			}
			pe.Op = "abort"
			// A rank named as the failure relays that name, not the
			// sender's: the others must hear whom the sender blamed.
			g.abortBlaming(pe, blame)
			l.fail(frame{err: pe})
			return
		}
		l.deliver(f)
	}
}

// payloadBuf returns a buffer of n bytes for a received payload, from the
// pool when it fits in a chunk.
func (g *TCPGroup) payloadBuf(n int) []byte {
	if n == 0 || n > g.chunk {
		return make([]byte, n)
	}
	if b, ok := g.root.bufs.Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, g.chunk)
}

// releaseBuf returns a payload buffer to the pool once its contents are
// used.
func (g *TCPGroup) releaseBuf(b []byte) {
	if cap(b) == g.chunk {
		g.root.bufs.Put(&b)
	}
}

// failure returns the error that stopped the group, or nil.
func (g *TCPGroup) failure() error {
	g = g.root
	g.failMu.Lock()
	defer g.failMu.Unlock()
	return g.err
}

// abort stops the group after err: it tells every peer which rank failed
// (best effort) and closes the connections, so that no rank waits for a
// message that will never come.
func (g *TCPGroup) abort(err error) {
	failed := -1
	var pe *PeerError
	if errors.As(err, &pe) {
		failed = pe.Rank
	}
	g.abortBlaming(err, failed)
}

// abortBlaming is abort telling the peers that rank failed (-1: none).
func (g *TCPGroup) abortBlaming(err error, failed int) {
	g = g.root
	g.failMu.Lock()
	if g.err != nil {
		g.failMu.Unlock()
		return
	}
	g.err = err
	// The report is written before anything can return err, so that it is
	// there when the rank exits.
	g.report(err, failed)
	close(g.done)
	g.failMu.Unlock()
	payload := abortPayload(failed, err.Error())
	var hdr [frameHeaderLen]byte
	putHeader(hdr[:], frameHeader{kind: frameAbort, n: uint64(len(payload))})
	msg := append(hdr[:], payload...)
	var wg sync.WaitGroup
	for _, l := range g.links {
		if l != nil {
			wg.Go(func() { sendAbort(l, msg) })
		}
	}
	wg.Wait()
}

// sendAbort writes msg to p at a frame boundary, waiting a moment for a
// frame being written to finish, then closes the connection.
func sendAbort(p *link, msg []byte) {
	locked := make(chan struct{})
	go func() {
		p.wmu.Lock()
		close(locked)
	}()
	select {
	case <-locked:
		p.conn.SetWriteDeadline(time.Now().Add(250 * time.Millisecond))
		p.conn.Write(msg)
		p.wmu.Unlock()
	case <-time.After(250 * time.Millisecond):
		// The peer is not reading: give up on telling it why.
		p.conn.SetWriteDeadline(time.Now())
		go func() {
			<-locked
			p.wmu.Unlock()
		}()
	}
	p.conn.Close()
}

// Close implements ProcessGroup: pending operations fail with ErrClosed.
// Closing the world group (the one NewTCPGroup returned) closes the
// connections and its subgroups too; closing a subgroup only stops its own
// operations. Close may be called more than once.
func (g *TCPGroup) Close() error {
	g.queue.close()
	if g.root == g {
		g.failMu.Lock()
		if g.err == nil {
			g.err = ErrClosed
			close(g.done)
		}
		g.failMu.Unlock()
		for _, l := range g.links {
			if l != nil {
				l.conn.Close()
			}
		}
	}
	<-g.wdone
	if g.root == g {
		// Its subgroups, hier's among them: their operations have failed
		// with the connections, and their segments go with the group.
		g.subMu.Lock()
		subs := g.subs
		g.subMu.Unlock()
		for _, sub := range subs {
			sub.Close()
		}
	}
	g.unmapOnce.Do(func() {
		if g.shm != nil {
			g.shm.unmap()
		}
	})
	return nil
}

// submit queues fn and returns its Work.
func (g *TCPGroup) submit(fn func(deadline time.Time) error) Work {
	w := &work{g: g, fn: fn, done: make(chan struct{})}
	if !g.queue.push(w) {
		w.finish(ErrClosed)
	}
	return w
}

// worker runs the queued operations one at a time, in issue order.
func (g *TCPGroup) worker() {
	defer close(g.wdone)
	for {
		w, closed, ok := g.queue.pop()
		if !ok {
			return
		}
		if closed {
			w.finish(ErrClosed)
			continue
		}
		if err := g.failure(); err != nil {
			w.finish(fmt.Errorf("distributed: process group unusable after an earlier failure: %w", err))
			continue
		}
		err := w.fn(time.Now().Add(g.Timeout()))
		if err != nil {
			g.abort(err)
		}
		w.finish(err)
	}
}

// wait is the blocking form of an operation.
func wait(w Work) error { return w.Wait(context.Background()) }

// send writes one data frame to p before deadline.
func (g *TCPGroup) send(p *peer, h frameHeader, payload []byte, deadline time.Time) error {
	h.kind = frameData
	h.group = g.gid
	h.n = uint64(len(payload))
	var hdr [frameHeaderLen]byte
	putHeader(hdr[:], h)
	p.wmu.Lock()
	defer p.wmu.Unlock()
	select {
	case <-g.done:
		return g.failure()
	default:
	}
	p.conn.SetWriteDeadline(deadline)
	bufs := net.Buffers{hdr[:], payload}
	if _, err := bufs.WriteTo(p.conn); err != nil {
		return g.settle(&PeerError{Op: opName(h.op), Seq: h.seq, Rank: p.global, Reporter: -1, Err: err})
	}
	return nil
}

// settleDelay is how long a rank that lost a connection waits for an abort
// frame that names the rank that failed first. The abort crosses a timer,
// two goroutines and a socket, which on a loaded machine can take tens of
// milliseconds; a failure is reported this much later at most.
const settleDelay = 250 * time.Millisecond

// settle returns the group's failure if one is recorded within settleDelay
// (a peer that aborted after another rank's failure sends the cause before
// closing), else err.
func (g *TCPGroup) settle(err error) error {
	return g.settleUntil(time.Now().Add(settleDelay), err)
}

// settleUntil is settle waiting until when.
func (g *TCPGroup) settleUntil(when time.Time, err error) error {
	t := time.NewTimer(time.Until(when))
	defer t.Stop()
	select {
	case <-g.done:
		return g.failure()
	case <-t.C:
		return err
	}
}

// recv waits for p's next frame and checks that it belongs to operation
// (op, seq) and has dtype dt; its payload must be empty when maxN is 0,
// else hold between 1 and maxN bytes in whole units of unit bytes. inPlace
// reports a payload a sink placed in the receiver's memory (not to be
// released to the pool); end, a frame that ends its message.
func (g *TCPGroup) recv(p *peer, op byte, seq uint64, dt byte, maxN, unit int, deadline time.Time) (payload []byte, inPlace, end bool, err error) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	fail := func(err error) error {
		return &PeerError{Op: opName(op), Seq: seq, Rank: p.global, Reporter: -1, Err: err}
	}
	var f frame
	for {
		var ok bool
		var notify <-chan struct{}
		if f, ok, notify = p.next(g.gid); ok {
			break
		}
		select {
		case <-notify:
		case <-g.done:
			return nil, false, false, g.failure()
		case <-timer.C:
			err := fail(fmt.Errorf("timed out after %v waiting for its message (is it running the same collective?)", g.Timeout()))
			if p.heardSeq == seq {
				// p joined this collective, so it may be stuck on a
				// silent rank itself (over the ring, rank r hears only
				// from r-1): its own timer fires by one timeout after
				// its first message, and its abort names that rank.
				return nil, false, false, g.settleUntil(p.heardAt.Add(g.Timeout()+settleDelay), err)
			}
			return nil, false, false, err
		}
	}
	if f.err != nil {
		var pe *PeerError
		if errors.As(f.err, &pe) && pe.Op == "" {
			pe.Op, pe.Seq = opName(op), seq
		}
		return nil, false, false, g.settle(f.err)
	}
	if f.op == op && f.seq == seq && p.heardSeq != seq {
		p.heardSeq, p.heardAt = seq, time.Now()
	}
	n := len(f.payload)
	switch {
	case f.op != op || f.seq != seq:
		return nil, false, false, fail(fmt.Errorf("mismatched operation: it sent %s #%d while this rank runs %s #%d (ranks must issue the same collectives in the same order)", opName(f.op), f.seq, opName(op), seq))
	case f.dtype != dt:
		return nil, false, false, fail(fmt.Errorf("dtype code %d, this rank has %d (tensors must have the same dtype on every rank)", f.dtype, dt))
	case maxN == 0 && n != 0, maxN > 0 && (n == 0 || n > maxN || n%unit != 0):
		return nil, false, false, fail(fmt.Errorf("message of %d bytes where this rank expects %d (tensors must have the same shape on every rank)", n, maxN))
	}
	return f.payload, f.inPlace, f.end, nil
}

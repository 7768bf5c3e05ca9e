package distributed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// Rendezvous. Rank 0 serves a one-shot store at MasterAddr. Every other
// rank connects, authenticates (handshake, purpose 'S'), sends its listen
// address and waits for the store's reply:
//
//	address: length uint16 | bytes (at most maxAddrLen)
//	reply:   replyTable  | one address per rank, rank 0 first
//	     or  replyFailed | failed rank int32 | cause byte
//
// The store answers replyFailed, to every rank that has registered and to
// those that register within storeNoticeWait afterwards, when the job
// cannot start: a rank failed authentication (causeAuth) or had not
// registered when rank 0 stopped waiting (causeTimeout). Only ranks that
// passed authentication hear a reply, and its content is rank 0's own
// observation: a process that does not know the token sends nothing that
// reaches another rank. What it can do is fail the handshake under the
// rank it claims, which ends the rendezvous as that rank's own failed
// authentication would (only for a rank that has not registered yet).
const (
	replyTable  byte = 'T'
	replyFailed byte = 'F'

	causeAuth    byte = 1 // the rank failed authentication with rank 0
	causeTimeout byte = 2 // the rank had not registered when rank 0 stopped waiting
)

// storeNoticeWait bounds how long rank 0's store stays open after the job
// has failed to start, to tell the ranks that have not registered yet why
// (a rank that arrives after rank 0 has gone waits out its own timeout).
const storeNoticeWait = 5 * time.Second

// noticeWriteTimeout bounds the write of a failure notice to one rank.
const noticeWriteTimeout = time.Second

// rendezvousFailure is the error that rank failed in the rendezvous for
// cause (a cause code of the reply).
func rendezvousFailure(rank int, cause byte) error {
	switch cause {
	case causeAuth:
		return authFailure(rank, 0)
	case causeTimeout:
		return fmt.Errorf("rank %d had not registered when rank 0 stopped waiting, at the end of its timeout (is it running, with the same MASTER_ADDR and WORLD_SIZE?)", rank)
	}
	return fmt.Errorf("rank %d failed in the rendezvous for an unknown cause %d", rank, cause)
}

// maxAddrLen bounds an address in the rendezvous messages.
const maxAddrLen = 512

// writeString writes a length-prefixed string.
func writeString(w io.Writer, s string) error {
	b := binary.LittleEndian.AppendUint16(nil, uint16(len(s)))
	_, err := w.Write(append(b, s...))
	return err
}

// readString reads a length-prefixed string of at most maxAddrLen bytes.
func readString(r io.Reader) (string, error) {
	var lb [2]byte
	if _, err := io.ReadFull(r, lb[:]); err != nil {
		return "", err
	}
	n := binary.LittleEndian.Uint16(lb[:])
	if n > maxAddrLen {
		return "", fmt.Errorf("address of %d bytes is too long", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return string(b), nil
}

// storeArrival is one connection to rank 0's store after its handshake:
// a registered rank (conn and addr set), or a rank that failed
// authentication (authFailed; its connection already closed).
type storeArrival struct {
	rank       int
	addr       string
	conn       net.Conn
	authFailed bool
}

// storeCheck runs the store's side of one connection: the handshake, then
// the rank's address. ok is false for a connection to ignore (a stranger,
// a malformed greeting, a second rank 0), which it closes.
func storeCheck(c net.Conn, cfg Config, deadline time.Time) (a storeArrival, ok bool) {
	h, err := handshake(c, cfg.Token, purposeStore, roleAccept, 0, cfg.WorldSize, -1, deadline)
	switch {
	case errors.Is(err, errAuth) && h.rank > 0:
		c.Close()
		return storeArrival{rank: h.rank, authFailed: true}, true
	case err != nil || h.rank == 0:
		c.Close()
		return a, false
	}
	c.SetDeadline(deadline)
	addr, err := readString(c)
	if err != nil {
		c.Close()
		return a, false
	}
	c.SetDeadline(time.Time{})
	return storeArrival{rank: h.rank, addr: addr, conn: c}, true
}

// store is the state of rank 0's rendezvous.
type store struct {
	addrs     []string   // listen addresses by rank
	conns     []net.Conn // registered ranks waiting for the reply
	settled   []bool     // registered, or failed authentication
	unsettled int
	failed    int  // the rank that broke the rendezvous, or -1
	cause     byte // and why
}

// newStore is the state of a rendezvous of size ranks, rank 0 listening
// at own.
func newStore(size int, own string) *store {
	s := &store{addrs: make([]string, size), conns: make([]net.Conn, size), settled: make([]bool, size), unsettled: size - 1, failed: -1}
	s.addrs[0], s.settled[0] = own, true
	return s
}

// notify tells c's rank why the rendezvous failed and closes c.
func (s *store) notify(c net.Conn) {
	msg := binary.LittleEndian.AppendUint32([]byte{replyFailed}, uint32(int32(s.failed)))
	c.SetWriteDeadline(time.Now().Add(noticeWriteTimeout))
	c.Write(append(msg, s.cause))
	c.Close()
}

// fail records that rank broke the rendezvous for cause and tells the
// registered ranks.
func (s *store) fail(rank int, cause byte) {
	s.failed, s.cause = rank, cause
	for r, c := range s.conns {
		if c != nil {
			s.notify(c)
			s.conns[r] = nil
		}
	}
}

// settle marks rank as registered or failed.
func (s *store) settle(rank int) {
	if !s.settled[rank] {
		s.settled[rank] = true
		s.unsettled--
	}
}

// arrive takes in a rank that registered or failed authentication, and
// reports whether the rendezvous has failed just now.
func (s *store) arrive(a storeArrival) (failedNow bool) {
	switch {
	case a.authFailed && s.settled[a.rank]:
		// The rank has registered (or already failed): a stranger
		// claims its rank.
	case a.authFailed:
		s.settle(a.rank)
		if s.failed < 0 {
			s.fail(a.rank, causeAuth)
			return true
		}
	case s.failed >= 0:
		// Too late to join: tell the rank why.
		s.settle(a.rank)
		s.notify(a.conn)
	case s.settled[a.rank]:
		a.conn.Close() // a second process with this rank
	default:
		s.settle(a.rank)
		s.addrs[a.rank], s.conns[a.rank] = a.addr, a.conn
	}
	return false
}

// failure is rank 0's error once the rendezvous has failed.
func (s *store) failure() error {
	return &PeerError{Op: "rendezvous", Rank: s.failed, Reporter: -1, Err: rendezvousFailure(s.failed, s.cause)}
}

// ended is the store's error when ctx ends before every rank has settled:
// the recorded failure if there is one, else a *PeerError naming the first
// rank that has not registered, which the registered ranks are told when
// ctx's deadline has passed.
func (s *store) ended(ctx context.Context) error {
	if s.failed >= 0 {
		return s.failure()
	}
	var missing []string
	first := -1
	for r, ok := range s.settled {
		if !ok {
			if first < 0 {
				first = r
			}
			missing = append(missing, strconv.Itoa(r))
		}
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		s.fail(first, causeTimeout)
	}
	return &PeerError{Op: "rendezvous", Rank: first, Reporter: -1, Err: fmt.Errorf(
		"%d of %d ranks registered with rank 0; missing rank(s) %s: %w", len(s.settled)-len(missing), len(s.settled), strings.Join(missing, ", "), ctx.Err())}
}

// serveRendezvous runs rank 0's one-shot store: it collects every rank's
// listen address and sends the full table to each. When a rank fails
// authentication, or some have not registered when ctx ends (the store
// gives up a tenth of the remaining time, at most a second, before ctx's
// deadline), it tells every registered rank which rank failed and why, and
// returns that failure.
func serveRendezvous(ctx context.Context, ln net.Listener, cfg Config, own string) ([]string, error) {
	defer ln.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if d, ok := ctx.Deadline(); ok {
		// Give up on missing ranks a little before the registered ones
		// give up on rank 0, so that they hear which rank is missing.
		var cancelEarly context.CancelFunc
		ctx, cancelEarly = context.WithDeadline(ctx, d.Add(-min(time.Until(d)/10, time.Second)))
		defer cancelEarly()
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()

	arrivals := make(chan storeArrival)
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
				a, ok := storeCheck(c, cfg, deadline)
				if !ok {
					return
				}
				select {
				case arrivals <- a:
				case <-ctx.Done():
					if a.conn != nil {
						a.conn.Close()
					}
				}
			}()
		}
	}()

	s := newStore(cfg.WorldSize, own)
	defer func() {
		for _, c := range s.conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	noticeEnd := time.NewTimer(time.Hour)
	noticeEnd.Stop()
	defer noticeEnd.Stop()
	for s.unsettled > 0 {
		select {
		case a := <-arrivals:
			if s.arrive(a) {
				noticeEnd.Reset(storeNoticeWait)
			}
		case <-noticeEnd.C:
			return nil, s.failure()
		case err := <-acceptErr:
			if ctx.Err() != nil {
				return nil, s.ended(ctx)
			}
			if s.failed >= 0 {
				return nil, s.failure()
			}
			return nil, fmt.Errorf("distributed: rank 0: rendezvous: accepting connections: %w", err)
		case <-ctx.Done():
			return nil, s.ended(ctx)
		}
	}
	if s.failed >= 0 {
		return nil, s.failure()
	}
	table := []byte{replyTable}
	for _, a := range s.addrs {
		table = binary.LittleEndian.AppendUint16(table, uint16(len(a)))
		table = append(table, a...)
	}
	deadline, _ := ctx.Deadline() // a rank that stopped reading cannot hold rank 0 past it
	for r, c := range s.conns {
		if c == nil {
			continue
		}
		c.SetWriteDeadline(deadline)
		if _, err := c.Write(table); err != nil {
			return nil, &PeerError{Op: "rendezvous", Rank: r, Reporter: -1, Err: err}
		}
	}
	return s.addrs, nil
}

// joinRendezvous registers own with rank 0's store (retrying until it is
// up) and returns the address table, or the failure the store reports.
func joinRendezvous(ctx context.Context, cfg Config, own string) ([]string, error) {
	deadline, _ := ctx.Deadline()
	var c net.Conn
	backoff := 20 * time.Millisecond
	for {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, "tcp", cfg.MasterAddr)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("distributed: rank %d: reaching rank 0 at %s: %w (last error: %v)", cfg.Rank, cfg.MasterAddr, ctx.Err(), err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if _, err := handshake(c, cfg.Token, purposeStore, roleDial, cfg.Rank, cfg.WorldSize, 0, deadline); err != nil {
		if errors.Is(err, errAuth) {
			// Rank 0 saw the same and tells the other ranks: this rank's
			// error names itself.
			return nil, fmt.Errorf("distributed: rank %d: rendezvous: %w", cfg.Rank, err)
		}
		return nil, &PeerError{Op: "rendezvous", Rank: 0, Reporter: -1, Err: err}
	}
	c.SetDeadline(deadline)
	if err := writeString(c, own); err != nil {
		return nil, &PeerError{Op: "rendezvous", Rank: 0, Reporter: -1, Err: err}
	}
	addrs, err := readStoreReply(c, cfg.WorldSize)
	if err != nil {
		var pe *PeerError
		if !errors.As(err, &pe) {
			if ctx.Err() != nil {
				// The read failed because ctx closed the connection.
				err = fmt.Errorf("%w (%v)", ctx.Err(), err)
			}
			err = &PeerError{Op: "rendezvous", Rank: 0, Reporter: -1, Err: err}
		}
		return nil, err
	}
	return addrs, nil
}

// readStoreReply reads rank 0's reply to a rank of a world of size ranks:
// the address table, or the failure it reports as a *PeerError from rank
// 0. Other errors are those of the connection or a malformed reply.
func readStoreReply(r io.Reader, size int) ([]string, error) {
	var kind [1]byte
	if _, err := io.ReadFull(r, kind[:]); err != nil {
		return nil, fmt.Errorf("reading rank 0's reply: %w", err)
	}
	switch kind[0] {
	case replyTable:
	case replyFailed:
		var b [5]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("reading rank 0's failure notice: %w", err)
		}
		failed, cause := int(int32(binary.LittleEndian.Uint32(b[:4]))), b[4]
		if failed <= 0 || failed >= size || (cause != causeAuth && cause != causeTimeout) {
			return nil, fmt.Errorf("malformed failure notice (rank %d, cause %d)", failed, cause)
		}
		return nil, &PeerError{Op: "rendezvous", Rank: failed, Reporter: 0, Err: rendezvousFailure(failed, cause)}
	default:
		return nil, fmt.Errorf("malformed reply (kind %d)", kind[0])
	}
	addrs := make([]string, size)
	for i := range addrs {
		a, err := readString(r)
		if err != nil {
			return nil, fmt.Errorf("reading the address table: %w", err)
		}
		addrs[i] = a
	}
	return addrs, nil
}

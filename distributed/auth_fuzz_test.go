package distributed

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"
)

// scriptedConn is a net.Conn whose peer's bytes are fixed in advance: reads
// come from in (then io.EOF), writes are collected in out.
type scriptedConn struct {
	in  *bytes.Reader
	out bytes.Buffer
}

func (c *scriptedConn) Read(b []byte) (int, error)       { return c.in.Read(b) }
func (c *scriptedConn) Write(b []byte) (int, error)      { return c.out.Write(b) }
func (c *scriptedConn) Close() error                     { return nil }
func (c *scriptedConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *scriptedConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *scriptedConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptedConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptedConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzHandshake plays an arbitrary peer against both ends of the handshake
// and against rank 0's address table: every input must end in an error or
// a well-formed result, never a panic, and no input may pass
// authentication, since a valid proof covers this end's fresh random
// nonce, which the input cannot know. The same bytes are then read as
// rank 0's reply to the rendezvous.
func FuzzHandshake(f *testing.F) {
	valid := make([]byte, helloLen)
	copy(valid, helloMagic)
	valid[4] = helloVersion
	valid[5], valid[6] = purposeMesh, roleAccept
	binary.LittleEndian.PutUint32(valid[7:], 1)
	binary.LittleEndian.PutUint32(valid[11:], 2)
	f.Add(append(valid, make([]byte, 32)...))
	f.Add(valid[:10])
	f.Add([]byte("EMBH\x02"))
	f.Add(binary.LittleEndian.AppendUint16([]byte{}, 9))
	f.Add([]byte{})
	f.Add([]byte{replyTable, 1, 0, 'a', 0, 0, 2, 0, 'b', 'c'})
	f.Add([]byte{replyFailed, 2, 0, 0, 0, causeAuth})
	f.Add([]byte{replyFailed, 7, 0, 0, 0, causeTimeout})
	f.Fuzz(func(t *testing.T, b []byte) {
		deadline := time.Now().Add(time.Second)
		for _, role := range []byte{roleDial, roleAccept} {
			c := &scriptedConn{in: bytes.NewReader(b)}
			h, err := handshake(c, "token", purposeMesh, role, 0, 2, -1, deadline)
			if err == nil {
				t.Fatalf("role %q: a scripted peer passed authentication as %+v", role, h)
			}
			// This end sends its hello first, and its proof only after a
			// well-formed hello from the peer.
			if n := c.out.Len(); n != helloLen && n != helloLen+32 {
				t.Fatalf("role %q: wrote %d bytes", role, n)
			}
		}
		// Rank 0's reply after the handshake: an address table or a
		// failure notice.
		addrs, err := readStoreReply(bytes.NewReader(b), 3)
		var pe *PeerError
		switch {
		case err == nil && len(addrs) != 3:
			t.Fatalf("a table of %d addresses for 3 ranks", len(addrs))
		case errors.As(err, &pe) && (pe.Rank < 1 || pe.Rank > 2 || pe.Reporter != 0):
			t.Fatalf("a notice blaming rank %d, reported by %d", pe.Rank, pe.Reporter)
		}
		for _, a := range addrs {
			if len(a) > maxAddrLen {
				t.Fatalf("address of %d bytes accepted", len(a))
			}
		}
	})
}

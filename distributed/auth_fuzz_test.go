package distributed

import (
	"bytes"
	"encoding/binary"
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
// nonce, which the input cannot know.
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
		// The address table rank 0 sends after the handshake.
		r := bytes.NewReader(b)
		for range 4 {
			a, err := readString(r)
			if err != nil {
				break
			}
			if len(a) > maxAddrLen {
				t.Fatalf("address of %d bytes accepted", len(a))
			}
		}
	})
}

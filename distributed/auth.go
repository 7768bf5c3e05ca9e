package distributed

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Handshake. Both ends of a new connection send a hello and then an
// HMAC-SHA256, keyed by the shared token, over both hellos and the sender's
// role; each end checks the other's. Fresh random nonces in the hellos stop
// replay, and the role byte stops a peer from reflecting our own proof back.
//
//	hello: "EMBH" | version (2) | purpose | role | rank int32 | size int32 | nonce [32]
//
// Version 2 added the reply byte of rank 0's store (rendezvous.go), so that
// the store can tell the ranks that the job cannot start instead of sending
// the address table.
const (
	helloLen     = 4 + 1 + 1 + 1 + 4 + 4 + 32
	helloMagic   = "EMBH"
	helloVersion = 2

	purposeStore byte = 'S' // rendezvous with rank 0's store
	purposeMesh  byte = 'M' // rank-to-rank data connection

	roleDial   byte = 'D'
	roleAccept byte = 'A'

	authLabel = "ember-dist-auth-v1"
)

// errAuth marks a failed authentication (wrapped by authFailure, which
// names the two ranks).
var errAuth = errors.New("authentication failed")

// authFailure is the error of a failed authentication between rank and
// peer: one of them holds another token.
func authFailure(rank, peer int) error {
	return fmt.Errorf("%w between rank %d and rank %d: their tokens (%s) differ", errAuth, rank, peer, EnvToken)
}

// hello is a decoded handshake greeting.
type hello struct {
	purpose, role byte
	rank, size    int
}

// proof computes the HMAC a peer with role sends over the two hellos.
func proof(token string, role byte, senderHello, receiverHello []byte) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(authLabel))
	m.Write([]byte{role})
	m.Write(senderHello)
	m.Write(receiverHello)
	return m.Sum(nil)
}

// handshake authenticates conn and returns the peer's hello. wantRank < 0
// accepts any rank in [0, size).
func handshake(conn net.Conn, token string, purpose, role byte, rank, size, wantRank int, deadline time.Time) (hello, error) {
	if err := conn.SetDeadline(deadline); err != nil {
		return hello{}, err
	}
	defer conn.SetDeadline(time.Time{})
	mine := make([]byte, helloLen)
	copy(mine, helloMagic)
	mine[4] = helloVersion
	mine[5] = purpose
	mine[6] = role
	binary.LittleEndian.PutUint32(mine[7:], uint32(int32(rank)))
	binary.LittleEndian.PutUint32(mine[11:], uint32(int32(size)))
	if _, err := rand.Read(mine[15:]); err != nil {
		return hello{}, err
	}
	if _, err := conn.Write(mine); err != nil {
		return hello{}, err
	}
	theirs := make([]byte, helloLen)
	if _, err := io.ReadFull(conn, theirs); err != nil {
		return hello{}, fmt.Errorf("reading handshake: %w", err)
	}
	h, err := parseHello(theirs)
	if err != nil {
		return hello{}, err
	}
	wantRole := roleAccept
	if role == roleAccept {
		wantRole = roleDial
	}
	switch {
	case h.purpose != purpose:
		return h, fmt.Errorf("handshake: peer connected for purpose %q, want %q", h.purpose, purpose)
	case h.role != wantRole:
		return h, fmt.Errorf("handshake: peer role %q, want %q", h.role, wantRole)
	case h.size != size:
		return h, fmt.Errorf("handshake: peer rank %d has world size %d, this rank %d", h.rank, h.size, size)
	case h.rank < 0 || h.rank >= size:
		return h, fmt.Errorf("handshake: peer rank %d outside [0, %d)", h.rank, size)
	case wantRank >= 0 && h.rank != wantRank:
		return h, fmt.Errorf("handshake: peer is rank %d, expected rank %d", h.rank, wantRank)
	case bytes.Equal(mine[15:], theirs[15:]):
		return h, fmt.Errorf("handshake: peer echoed our nonce")
	}
	if _, err := conn.Write(proof(token, role, mine, theirs)); err != nil {
		return h, err
	}
	got := make([]byte, sha256.Size)
	if _, err := io.ReadFull(conn, got); err != nil {
		return h, fmt.Errorf("reading handshake proof: %w (the peer may have rejected our token)", err)
	}
	if !hmac.Equal(got, proof(token, h.role, theirs, mine)) {
		return h, authFailure(rank, h.rank)
	}
	return h, nil
}

// parseHello decodes a greeting.
func parseHello(b []byte) (hello, error) {
	if len(b) != helloLen || string(b[:4]) != helloMagic {
		return hello{}, fmt.Errorf("handshake: not an Ember peer (bad magic %q)", b[:min(4, len(b))])
	}
	if b[4] != helloVersion {
		return hello{}, fmt.Errorf("handshake: protocol version %d, want %d", b[4], helloVersion)
	}
	return hello{
		purpose: b[5], role: b[6],
		rank: int(int32(binary.LittleEndian.Uint32(b[7:]))),
		size: int(int32(binary.LittleEndian.Uint32(b[11:]))),
	}, nil
}

package distributed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"
)

// NewLocalGroups starts n ranks of a TCP process group inside this process,
// connected over loopback with a random token: group i is rank i. It is
// meant for tests and for trying distributed code on one machine; each
// group is used from its own goroutine like a separate process would.
func NewLocalGroups(ctx context.Context, n int) ([]*TCPGroup, error) {
	return newLocalGroups(ctx, n, Config{})
}

// newLocalGroups is NewLocalGroups with the timeouts and sizes of base.
func newLocalGroups(ctx context.Context, n int, base Config) ([]*TCPGroup, error) {
	return newLocalGroupsPerRank(ctx, n, base, nil)
}

// newLocalGroupsPerRank is newLocalGroups where perRank, when set, adjusts
// each rank's configuration before its group starts (its read loops then
// see the setting from the first frame on).
func newLocalGroupsPerRank(ctx context.Context, n int, base Config, perRank func(rank int, cfg *Config)) ([]*TCPGroup, error) {
	if n < 1 {
		return nil, fmt.Errorf("distributed: NewLocalGroups: %d ranks, want at least 1", n)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("distributed: NewLocalGroups: %w", err)
	}
	var tok [16]byte
	rand.Read(tok[:])
	gs := make([]*TCPGroup, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		cfg := base
		cfg.Rank, cfg.WorldSize, cfg.LocalRank = i, n, i
		cfg.MasterAddr = ln.Addr().String()
		cfg.ListenAddr = "127.0.0.1:0"
		if cfg.Token == "" {
			cfg.Token = hex.EncodeToString(tok[:])
		}
		if perRank != nil {
			perRank(i, &cfg)
		}
		var store net.Listener
		if i == 0 {
			store = ln
		}
		wg.Go(func() { gs[i], errs[i] = newTCPGroup(ctx, cfg, store) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, g := range gs {
			if g != nil {
				g.Close()
			}
		}
		return nil, err
	}
	return gs, nil
}

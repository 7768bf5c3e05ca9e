package distributed

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

func TestReadFrameAllocatesAsBytesArrive(t *testing.T) {
	// A header announcing the default limit (1 GiB) followed by 10 bytes
	// fails without allocating the gigabyte.
	var h [frameHeaderLen]byte
	putHeader(h[:], frameHeader{kind: frameData, op: opAllReduce, seq: 1, n: defaultMaxFrameBytes})
	in := append(h[:], make([]byte, 10)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readFrame(bytes.NewReader(in), defaultMaxFrameBytes, nil)
	runtime.ReadMemStats(&after)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4*payloadStep), "bytes allocated for a 10-byte payload")

	// Payloads past the first step, and of every size around the
	// doublings, arrive intact.
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, payloadStep - 1, payloadStep, payloadStep + 1, 2 * payloadStep, 3*payloadStep + 5} {
		payload := make([]byte, n)
		for i := range payload {
			payload[i] = byte(rng.Uint32())
		}
		putHeader(h[:], frameHeader{kind: frameData, op: opAllReduce, seq: 2, n: uint64(n)})
		f, err := readFrame(bytes.NewReader(append(h[:], payload...)), defaultMaxFrameBytes, nil)
		require.NoError(t, err, "%d bytes", n)
		assert.Equal(t, payload, f.payload, "%d bytes", n)
		// and the same with a buffer from alloc
		f, err = readFrame(bytes.NewReader(append(h[:], payload...)), defaultMaxFrameBytes, func(h frameHeader) []byte { return make([]byte, h.n) })
		require.NoError(t, err, "%d bytes", n)
		assert.Equal(t, payload, f.payload, "%d bytes", n)
	}
}

func TestFramesLargerThanTheReceiversChunk(t *testing.T) {
	// Rank 0 sends frames of 4 KiB to ranks that pool 256-byte chunks: the
	// receivers read them as they arrive, outside the pool, and every rank
	// ends with the same sum.
	gs, err := newLocalGroupsPerRank(context.Background(), 3, Config{Timeout: 20 * time.Second, ChunkBytes: 256, DisableSharedMemory: true}, func(rank int, cfg *Config) {
		if rank == 0 {
			cfg.ChunkBytes = 4096
		}
	})
	require.NoError(t, err)
	for _, g := range gs {
		g.direct = 64
		t.Cleanup(func() { g.Close() })
	}
	const n = 10000
	errs := onAll(gs, func(g *TCPGroup) error {
		x := tensor.Full([]int{n}, float64(g.Rank()+1))
		if err := g.AllReduce(x, Sum); err != nil {
			return err
		}
		for i, v := range x.Float32s() {
			if v != 6 {
				return fmt.Errorf("rank %d: element %d is %v, want 6", g.Rank(), i, v)
			}
		}
		return nil
	})
	for r, err := range errs {
		assert.NoError(t, err, "rank %d", r)
	}
}

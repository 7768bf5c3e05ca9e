package distributed

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// ddpModel is a small MLP; seed picks its initial weights.
func ddpModel(seed uint64) nn.Module {
	g := tensor.NewGenerator(seed)
	return nn.NewSequential(nn.NewLinear(g, 5, 16, true), nn.NewTanh(), nn.NewLinear(g, 16, 3, true))
}

// ddpBatch is step's batch of b samples: inputs and class labels.
func ddpBatch(step, b int) (*tensor.Tensor, *tensor.Tensor) {
	g := tensor.NewGenerator(uint64(1000 + step))
	return g.Randn([]int{b, 5}), g.RandInt([]int{b}, 0, 3)
}

// ddpStep runs forward and backward of the mean cross-entropy on x, y.
func ddpStep(t *testing.T, m nn.Module, x, y *tensor.Tensor) {
	loss := nn.NewCrossEntropyLoss().Forward(m.Forward(autograd.New(x)), y)
	require.NoError(t, loss.Backward())
}

// assertReplicasMatch checks that rank 0's parameters got are within 1e-5
// of want and that every rank's equal rank 0's bit for bit.
func assertReplicasMatch(t *testing.T, want [][]float32, got [][][]float32) {
	t.Helper()
	for i := range want {
		assert.InDeltaSlice(t, want[i], got[0][i], 1e-5, "parameter %d", i)
	}
	for r := 1; r < len(got); r++ {
		assert.Equal(t, got[0], got[r], "rank %d's parameters differ from rank 0's", r)
	}
}

// paramValues returns copies of m's parameter values.
func paramValues(m nn.Module) [][]float32 {
	var out [][]float32
	for _, p := range m.Parameters() {
		out = append(out, p.Value().Float32s())
	}
	return out
}

func TestDataParallelMatchesSingleProcess(t *testing.T) {
	const batch, steps = 8, 20
	ref := ddpModel(100)
	opt := optim.NewSGD(ref.Parameters(), optim.SGDOptions{LR: 0.1, Momentum: 0.9})
	for step := range steps {
		opt.ZeroGrad()
		x, y := ddpBatch(step, batch)
		ddpStep(t, ref, x, y)
		require.NoError(t, opt.Step())
	}
	want := paramValues(ref)

	for _, c := range []struct {
		w     int
		after bool
	}{{2, false}, {4, false}, {2, true}} {
		w := c.w
		t.Run(fmt.Sprintf("W=%d/SyncAfterBackward=%v", w, c.after), func(t *testing.T) {
			gs := localGroups(t, w)
			got := make([][][]float32, w)
			requireAll(t, gs, func(g *TCPGroup) error {
				// Each rank starts from different weights: DataParallel
				// must replace them with rank 0's.
				m, err := DataParallel(ddpModel(100+uint64(g.Rank())), g, DDPOptions{BucketBytes: 200, SyncAfterBackward: c.after})
				if err != nil {
					return err
				}
				assert.Greater(t, m.Buckets(), 1)
				started := -1
				opt := optim.NewSGD(m.Parameters(), optim.SGDOptions{LR: 0.1, Momentum: 0.9})
				per := batch / w
				for step := range steps {
					opt.ZeroGrad()
					x, y := ddpBatch(step, batch)
					ddpStep(t, m, x.Narrow(0, g.Rank()*per, per), y.Narrow(0, g.Rank()*per, per))
					m.mu.Lock()
					started = len(m.works)
					m.mu.Unlock()
					if err := m.SyncGradients(); err != nil {
						return err
					}
					if err := opt.Step(); err != nil {
						return err
					}
				}
				if c.after {
					assert.Zero(t, started, "no bucket starts during backward")
				} else {
					assert.Equal(t, m.Buckets(), started, "every bucket's all-reduce starts during backward")
				}
				got[g.Rank()] = paramValues(m)
				return nil
			})
			assertReplicasMatch(t, want, got)
		})
	}
}

func TestDataParallelNoSyncAccumulates(t *testing.T) {
	const w = 2
	// Reference: each rank's gradient sum over two micro-batches, averaged.
	ref := ddpModel(7)
	var want [][]float64
	for r := range w {
		ref.ZeroGrad()
		for micro := range 2 {
			x, y := ddpBatch(10*r+micro, 3)
			ddpStep(t, ref, x, y)
		}
		for i, p := range ref.Parameters() {
			g := p.Grad().Float64s()
			if r == 0 {
				want = append(want, make([]float64, len(g)))
			}
			for j := range g {
				want[i][j] += g[j] / w
			}
		}
	}
	gs := localGroups(t, w)
	requireAll(t, gs, func(g *TCPGroup) error {
		m, err := DataParallel(ddpModel(7), g, DDPOptions{})
		if err != nil {
			return err
		}
		err = m.NoSync(func() error {
			x, y := ddpBatch(10*g.Rank(), 3)
			ddpStep(t, m, x, y)
			return m.SyncGradients() // a no-op here
		})
		if err != nil {
			return err
		}
		x, y := ddpBatch(10*g.Rank()+1, 3)
		ddpStep(t, m, x, y)
		if err := m.SyncGradients(); err != nil {
			return err
		}
		for i, p := range m.Parameters() {
			assert.InDeltaSlice(t, want[i], p.Grad().Float64s(), 1e-6, "rank %d parameter %d", g.Rank(), i)
		}
		return nil
	})
}

func TestDataParallelUnusedParameters(t *testing.T) {
	gs := localGroups(t, 2)
	requireAll(t, gs, func(g *TCPGroup) error {
		m, err := DataParallel(ddpModel(3), g, DDPOptions{})
		if err != nil {
			return err
		}
		ps := m.Parameters()
		// Rank 0 gives the first weight a gradient of ones, rank 1 gives
		// none; the last bias is unused everywhere.
		if g.Rank() == 0 {
			ps[0].SetGrad(tensor.OnesLike(ps[0].Value()))
		}
		ps[1].SetGrad(tensor.Full(ps[1].Value().Shape(), float64(g.Rank()+1)))
		if err := m.SyncGradients(); err != nil {
			return err
		}
		assert.Equal(t, tensor.Full(ps[0].Value().Shape(), 0.5).Float32s(), ps[0].Grad().Float32s())
		assert.Equal(t, tensor.Full(ps[1].Value().Shape(), 1.5).Float32s(), ps[1].Grad().Float32s())
		assert.Nil(t, ps[3].Grad())
		return nil
	})
}

func TestDataParallelRejectsDifferentModels(t *testing.T) {
	// Rank 1's model differs from rank 0's: a parameter fewer; the same
	// counts with a weight 3×2 where rank 0's is 2×3 (which the
	// parameters' broadcast would fill without complaint); the same
	// parameters with a BatchNorm without affine over 4 features where
	// rank 0's has 2 (only the buffers' shapes differ). Every rank must
	// fail with an error naming what differs.
	gen := tensor.NewGenerator(1)
	bn := func(n int) nn.Module {
		return nn.NewSequential(nn.NewLinear(gen, 3, 2, false), nn.NewBatchNorm1d(n, nn.BatchNormOptions{NoAffine: true}))
	}
	for _, c := range []struct {
		name         string
		rank0, rank1 nn.Module
		want         [2]string
	}{
		{"count", nn.NewLinear(gen, 3, 2, true), nn.NewLinear(gen, 3, 2, false),
			[2]string{"rank 0's model has 2 parameters", "rank 1's model has 1 parameters"}},
		{"shape", nn.NewLinear(gen, 3, 2, false), nn.NewLinear(gen, 2, 3, false),
			[2]string{"parameter 0 is float32 [2 3] on rank 0", "parameter 0 is float32 [3 2] on rank 1"}},
		{"buffer", bn(2), bn(4),
			[2]string{"float32 [2] on rank 0", "float32 [4] on rank 1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			gs := localGroups(t, 2)
			errs := onAll(gs, func(g *TCPGroup) error {
				m := c.rank0
				if g.Rank() == 1 {
					m = c.rank1
				}
				_, err := DataParallel(m, g, DDPOptions{})
				return err
			})
			for r, err := range errs {
				require.Error(t, err, "rank %d", r)
				assert.Contains(t, err.Error(), c.want[r])
				assert.Contains(t, err.Error(), "every rank must build the same model")
			}
		})
	}
}

func TestDataParallelSecondBackwardWithoutNoSync(t *testing.T) {
	gs := localGroups(t, 2)
	requireAll(t, gs, func(g *TCPGroup) error {
		m, err := DataParallel(ddpModel(5), g, DDPOptions{BucketBytes: 200})
		if err != nil {
			return err
		}
		for micro := range 2 {
			x, y := ddpBatch(micro, 2)
			ddpStep(t, m, x, y)
		}
		err = m.SyncGradients()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "NoSync")
		// The next round works normally.
		m.ZeroGrad()
		x, y := ddpBatch(3, 2)
		ddpStep(t, m, x, y)
		return m.SyncGradients()
	})
}

func TestDataParallelCloseRemovesHooks(t *testing.T) {
	gs := localGroups(t, 2)
	requireAll(t, gs, func(g *TCPGroup) error {
		m, err := DataParallel(ddpModel(6), g, DDPOptions{BucketBytes: 200})
		if err != nil {
			return err
		}
		m.Close()
		x, y := ddpBatch(g.Rank(), 2)
		ddpStep(t, m, x, y)
		m.mu.Lock()
		assert.Empty(t, m.works)
		m.mu.Unlock()
		local := paramGrads(m)
		if err := m.SyncGradients(); err != nil {
			return err
		}
		// Still averaged, by SyncGradients alone.
		other := make([][]float64, len(local))
		for i, p := range m.Parameters() {
			other[i] = p.Grad().Float64s()
		}
		assert.NotEqual(t, local, other)
		return nil
	})
}

// paramGrads returns copies of m's parameter gradients.
func paramGrads(m nn.Module) [][]float64 {
	var out [][]float64
	for _, p := range m.Parameters() {
		out = append(out, p.Grad().Float64s())
	}
	return out
}

func TestDataParallelFrozenParameterStillOverlaps(t *testing.T) {
	gs := localGroups(t, 2)
	requireAll(t, gs, func(g *TCPGroup) error {
		model := ddpModel(8)
		model.Parameters()[2].SetRequiresGrad(false) // the second layer's weight
		m, err := DataParallel(model, g, DDPOptions{BucketBytes: 200})
		if err != nil {
			return err
		}
		x, y := ddpBatch(g.Rank(), 2)
		ddpStep(t, m, x, y)
		m.mu.Lock()
		started := len(m.works)
		m.mu.Unlock()
		assert.Equal(t, m.Buckets(), started, "every bucket starts during backward despite the frozen weight")
		if err := m.SyncGradients(); err != nil {
			return err
		}
		assert.Nil(t, m.Parameters()[2].Grad())
		assert.NotNil(t, m.Parameters()[0].Grad())
		return nil
	})
}

func TestDataParallelSharedBucketsAlternate(t *testing.T) {
	gs := localGroups(t, 2)
	requireAll(t, gs, func(g *TCPGroup) error {
		m, err := DataParallel(ddpModel(7), g, DDPOptions{})
		if err != nil {
			return err
		}
		p := m.Parameters()[0]
		var grads []*tensor.Tensor // the first parameter's gradient of each round
		var kept [][]float64       // and its values right after SyncGradients
		for step := range 3 {
			x, y := ddpBatch(step, 4)
			for _, q := range m.Parameters() {
				q.SetGrad(nil)
			}
			ddpStep(t, m, x, y)
			if err := m.SyncGradients(); err != nil {
				return err
			}
			grads = append(grads, p.Grad())
			kept = append(kept, p.Grad().Float64s())
			assert.True(t, isShared(g, p.Grad().Reshape(-1)), "the gradient is a view of a shared bucket")
		}
		// Round 1 refilled no buffer of round 0's; round 2 refilled them.
		assert.NotEqual(t, kept[0], kept[1])
		assert.Equal(t, kept[2], grads[0].Float64s(), "rounds 0 and 2 share buckets")
		assert.Equal(t, kept[1], grads[1].Float64s())
		return nil
	})
}

func TestDataParallelOneRankLeavesGradients(t *testing.T) {
	g := localGroups(t, 1)[0]
	m, err := DataParallel(ddpModel(3), g, DDPOptions{})
	require.NoError(t, err)
	ref := ddpModel(3)
	x, y := ddpBatch(0, 6)
	ddpStep(t, m, x, y)
	ddpStep(t, ref, x, y)
	before := m.Parameters()[0].Grad()
	require.NoError(t, m.SyncGradients())
	// The very gradient backward produced, not a copy through a bucket.
	assert.Same(t, before, m.Parameters()[0].Grad())
	assert.Equal(t, paramGrads(ref), paramGrads(m))
}

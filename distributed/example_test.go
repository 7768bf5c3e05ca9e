package distributed_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/distributed"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// startGroups makes n ranks in this process and a function that closes
// them.
func startGroups(n int) ([]*distributed.TCPGroup, func()) {
	groups, err := distributed.NewLocalGroups(context.Background(), n)
	if err != nil {
		log.Fatal(err)
	}
	return groups, func() {
		for _, g := range groups {
			g.Close()
		}
	}
}

// onEveryRank runs fn on every rank of groups at once, as the processes of
// a job would, and stops the example on the first error.
func onEveryRank(groups []*distributed.TCPGroup, fn func(g *distributed.TCPGroup) error) {
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Go(func() { errs[i] = fn(g) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			log.Fatalf("rank %d: %v", r, err)
		}
	}
}

// flatParameters returns m's parameters, one after the other.
func flatParameters(m nn.Module) []float32 {
	var all []float32
	for _, p := range m.Parameters() {
		all = append(all, p.Value().Float32s()...)
	}
	return all
}

// Four ranks in one process (as tests use them) sum a tensor: every rank
// holds rank+1 and ends with 1+2+3+4. In a real job each rank is a process
// that calls NewGroupFromEnv (started by `ember launch` or torchrun) and
// runs the same code.
func ExampleNewLocalGroups() {
	groups, closeAll := startGroups(4)
	defer closeAll()
	sums := make([][]float32, len(groups))
	onEveryRank(groups, func(g *distributed.TCPGroup) error {
		x := tensor.Full([]int{3}, float64(g.Rank()+1))
		if err := g.AllReduce(x, distributed.Sum); err != nil {
			return err
		}
		sums[g.Rank()] = x.Float32s()
		return nil
	})
	for r, s := range sums {
		fmt.Println("rank", r, s)
	}
	// Output:
	// rank 0 [10 10 10]
	// rank 1 [10 10 10]
	// rank 2 [10 10 10]
	// rank 3 [10 10 10]
}

// Collectives with a root: rank 0 scatters one row to each rank, each rank
// squares its row, and rank 0 gathers the results.
func ExampleTCPGroup_Scatter() {
	groups, closeAll := startGroups(3)
	defer closeAll()
	var gathered []*tensor.Tensor
	onEveryRank(groups, func(g *distributed.TCPGroup) error {
		var rows []*tensor.Tensor
		if g.Rank() == 0 {
			for r := range g.Size() {
				rows = append(rows, tensor.FromSlice([]float32{float32(r), float32(r + 1)}, 2))
			}
		}
		row := tensor.Zeros([]int{2})
		if err := g.Scatter(row, rows, 0); err != nil {
			return err
		}
		squared := row.Mul(row)
		var outs []*tensor.Tensor
		if g.Rank() == 0 {
			for range g.Size() {
				outs = append(outs, tensor.Zeros([]int{2}))
			}
			gathered = outs
		}
		return g.Gather(outs, squared, 0)
	})
	for r, t := range gathered {
		fmt.Println("from rank", r, t.Float32s())
	}
	// Output:
	// from rank 0 [0 1]
	// from rank 1 [1 4]
	// from rank 2 [4 9]
}

// Subgroups run collectives among some of the ranks: here the even and
// the odd ranks of four each sum their ranks, as two data-parallel
// replicas of a model split over two ranks would.
func ExampleTCPGroup_NewSubgroup() {
	groups, closeAll := startGroups(4)
	defer closeAll()
	sums := make([]float32, len(groups))
	onEveryRank(groups, func(g *distributed.TCPGroup) error {
		// Every rank creates every subgroup, in the same order; a rank
		// gets nil for the subgroups it is not in.
		even, err := g.NewSubgroup([]int{0, 2})
		if err != nil {
			return err
		}
		odd, err := g.NewSubgroup([]int{1, 3})
		if err != nil {
			return err
		}
		mine := even
		if mine == nil {
			mine = odd
		}
		x := tensor.Full([]int{1}, float64(g.Rank()))
		if err := mine.AllReduce(x, distributed.Sum); err != nil {
			return err
		}
		sums[g.Rank()] = x.Float32s()[0]
		return nil
	})
	fmt.Println(sums)
	// Output:
	// [2 4 2 4]
}

// Data-parallel training on two ranks: each rank starts from different
// weights (DataParallel replaces them with rank 0's), trains on its own
// half of every batch, and SyncGradients averages the gradients, so both
// ranks take the same steps and keep bit-identical parameters.
func ExampleDataParallel() {
	groups, closeAll := startGroups(2)
	defer closeAll()
	weights := make([][]float32, len(groups))
	losses := make([]float64, len(groups))
	onEveryRank(groups, func(g *distributed.TCPGroup) error {
		gen := tensor.NewGenerator(uint64(10 + g.Rank()))
		net := nn.NewSequential(nn.NewLinear(gen, 4, 8, true), nn.NewTanh(), nn.NewLinear(gen, 8, 1, true))
		model, err := distributed.DataParallel(net, g, distributed.DDPOptions{})
		if err != nil {
			return err
		}
		defer model.Close()
		opt := optim.NewSGD(model.Parameters(), optim.SGDOptions{LR: 0.05})
		data := tensor.NewGenerator(99) // the same batches on every rank
		for range 50 {
			x := data.Randn([]int{8, 4})
			y := x.Sum([]int{1}, true) // learn the sum of the inputs
			half := 8 / g.Size()
			x, y = x.Narrow(0, g.Rank()*half, half), y.Narrow(0, g.Rank()*half, half)
			opt.ZeroGrad()
			loss := nn.NewMSELoss(nn.ReduceMean).Forward(model.Forward(autograd.New(x)), y)
			if err := loss.Backward(); err != nil {
				return err
			}
			if err := model.SyncGradients(); err != nil {
				return err
			}
			if err := opt.Step(); err != nil {
				return err
			}
			losses[g.Rank()] = loss.Value().Item()
		}
		weights[g.Rank()] = flatParameters(model)
		return nil
	})
	same := fmt.Sprint(weights[0]) == fmt.Sprint(weights[1])
	fmt.Println("replicas identical:", same)
	fmt.Println("loss below 0.5 on both ranks:", losses[0] < 0.5 && losses[1] < 0.5)
	// Output:
	// replicas identical: true
	// loss below 0.5 on both ranks: true
}

// Three ranks train with Adam sharded by ZeroOptimizer: each rank keeps
// Adam's state for its third of the parameters only and updates that
// third, and an all-gather after each step gives every rank the whole
// updated model.
func ExampleNewZeroOptimizer() {
	groups, closeAll := startGroups(3)
	defer closeAll()
	weights := make([][]float32, len(groups))
	shard := make([]int, len(groups))
	onEveryRank(groups, func(g *distributed.TCPGroup) error {
		gen := tensor.NewGenerator(uint64(10 + g.Rank()))
		net := nn.NewSequential(nn.NewLinear(gen, 4, 8, true), nn.NewTanh(), nn.NewLinear(gen, 8, 1, true))
		model, err := distributed.DataParallel(net, g, distributed.DDPOptions{})
		if err != nil {
			return err
		}
		defer model.Close()
		opt := distributed.NewZeroOptimizer(model, func(part []*autograd.Var) distributed.Optimizer {
			for _, v := range part {
				shard[g.Rank()] += v.Value().Numel()
			}
			return optim.NewAdam(part, optim.AdamOptions{LR: 0.01})
		})
		data := tensor.NewGenerator(99) // the same batches on every rank
		for range 20 {
			x := data.Randn([]int{12, 4})
			y := x.Sum([]int{1}, true)
			third := 12 / g.Size()
			x, y = x.Narrow(0, g.Rank()*third, third), y.Narrow(0, g.Rank()*third, third)
			opt.ZeroGrad()
			loss := nn.NewMSELoss(nn.ReduceMean).Forward(model.Forward(autograd.New(x)), y)
			if err := loss.Backward(); err != nil {
				return err
			}
			if err := opt.Step(); err != nil {
				return err
			}
		}
		weights[g.Rank()] = flatParameters(model)
		return nil
	})
	fmt.Println("parameters each rank's Adam updates:", shard, "of", len(weights[0]))
	same := fmt.Sprint(weights[0]) == fmt.Sprint(weights[1]) && fmt.Sprint(weights[0]) == fmt.Sprint(weights[2])
	fmt.Println("replicas identical:", same)
	// Output:
	// parameters each rank's Adam updates: [16 17 16] of 49
	// replicas identical: true
}

// SaveCheckpoint writes a model and its optimizer state atomically;
// LoadCheckpoint restores both, so training resumes where it stopped.
func ExampleSaveCheckpoint() {
	dir, err := os.MkdirTemp("", "ember-checkpoint")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "step-100.ckpt")

	model := nn.NewLinear(tensor.NewGenerator(1), 3, 2, true)
	opt := optim.NewAdam(model.Parameters(), optim.AdamOptions{LR: 1e-3})
	if err := distributed.SaveCheckpoint(path, model, opt, map[string]string{"step": "100"}); err != nil {
		log.Fatal(err)
	}

	restored := nn.NewLinear(tensor.NewGenerator(2), 3, 2, true) // other weights
	ropt := optim.NewAdam(restored.Parameters(), optim.AdamOptions{LR: 1e-3})
	meta, err := distributed.LoadCheckpoint(path, restored, ropt)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("step", meta["step"])
	fmt.Println("same weights:", fmt.Sprint(restored.Parameters()[0].Value().Float32s()) == fmt.Sprint(model.Parameters()[0].Value().Float32s()))
	// Output:
	// step 100
	// same weights: true
}

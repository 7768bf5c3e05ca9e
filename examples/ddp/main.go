// Command ddp trains a network with data parallelism over several
// processes on this machine, and reports the training throughput and the
// test accuracy.
//
//	go run ./examples/ddp -nproc 2
//
// With -nproc N the program starts N copies of itself with the
// torchrun-style environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT, EMBER_DIST_TOKEN) and prefixes their output with the rank;
// started with that environment already set (by torchrun-like launchers or
// by hand on several machines) it is one rank of the job.
//
// The data is the 8×8 digits set shipped with examples/quickstart
// (-digits), or MNIST from the original idx files (-mnist DIR, see
// examples/mnist). The network is a perceptron with one hidden layer
// (-model mlp, the default) or examples/quickstart's convolutional network
// sized for the images (-model cnn: about five times the arithmetic per
// sample for half the parameters, so communication weighs less). Each
// rank sees a 1/N shard of every epoch through data.DistributedSampler,
// and distributed.DataParallel averages the gradients, so N processes
// train the same model as one process would with the same global batch.
//
// With more than one process the Adam step is sharded
// (distributed.NewZeroOptimizer, ZeRO stage 1): the gradients are
// reduce-scattered, each process updates its 1/N of the parameters and
// holds Adam's moments for those only, and the updated parameters are
// all-gathered. -zero=false runs the whole Adam step on every process
// after an all-reduce instead; both reach the same accuracy.
//
// -phases makes every rank print, after training, the time it spent
// gathering batches, in forward, in backward, in SyncGradients (waiting for
// the gradients' reduction and for the slower ranks) and in the optimizer
// step (with -zero, the all-gather of the parameters too), and the CPU
// time the process used in the training loop; -steplog FILE writes the
// same phases step by step, in microseconds, one line per step, to
// FILE.rank0, FILE.rank1, ... (the sync column of one rank against the
// others' compute shows which rank waited for which, and when); -cpuprofile
// FILE writes each rank's CPU profile of the training loop to FILE.rank0,
// FILE.rank1, ... for go tool pprof.
//
// Measured on a 2-core machine with no other job running (commit
// 52030c6), MNIST, one thread per process, 2 processes against 1 (MLP:
// 3 alternating rounds of 2 epochs, medians; CNN: 2 rounds of 1 epoch):
//
//	-model mlp -batch 64     32460 → 29987 samples/s   0.92×
//	-model mlp -batch 256    51381 → 70807 samples/s   1.38×
//	-model cnn -batch 64      1229 →  2487,  1290 → 2366 samples/s   2.02×, 1.83×
//
// The CNN does far more arithmetic per gradient byte and scales to both
// cores. The MLP did not at small batches: a step of one process takes
// about 2 ms at batch 64, its matrix products cost nearly as much for half
// the batch, and the parameter exchange over loopback TCP (≈ 0.8 MB each
// way per step, about a quarter of each rank's time in system calls) does
// not shrink with it.
//
// Processes of one machine now exchange through shared memory
// (distributed's package doc; EMBER_DIST_SHM=0 keeps them on TCP).
// Re-measured at commit 04733db on the same machine while other jobs kept
// it loaded (load 8–20), so wall-clock ratios meant nothing there; the
// CPU time per sample does not depend on the load, and 2 × (CPU time
// per sample of 1 process) / (CPU time per sample of 2 processes, both
// ranks) is the speed-up when each process has a core of its own. CPU
// time is the "CPU in the loop" that -phases prints (user + system, summed
// over the ranks); 1 process, 2 processes and 2 processes with
// EMBER_DIST_SHM=0 alternated, 3 rounds, medians (MLP 2 epochs, CNN 1):
//
//	                        shared memory   TCP only
//	-model mlp -batch 64        1.19×          0.93×
//	-model mlp -batch 256       1.40×          1.36×
//	-model cnn -batch 64        1.86×          1.78×
//
// Wall clock on the quiet machine again (commit bd7237b, no other job,
// 1 epoch, 1 and 2 processes alternated twice; the CNN's one-process rate
// has risen with the convolution work, so its ratio fell):
//
//	-model mlp -batch 64     31609 → 38198,  32426 → 40939 samples/s   1.21×, 1.26×   (TCP only: 31675 → 33030, 1.04×)
//	-model cnn -batch 64      1610 →  2548,   1500 →  2504 samples/s   1.58×, 1.67×
//
// The MLP still falls short of 1.7× at batch 64: in a rank's CPU profile
// (-cpuprofile, 2 epochs) the matrix products take 32%, Adam on the 1/2
// shard 9%, but runtime.memmove 24% (staging the peer's half of the
// gradients, seeding the reduction, copying the gathered parameters) and
// the reduction's add and divide 7%. Shared memory removed the system
// calls, not the copies: moving 0.8 MB through memory each step costs
// about as much as the matrix products of half a batch of 64.
//
// Since then the collectives add the ranks' float contributions in one
// pass (the reduce-scatter's copy that seeded the sum is gone). Measured
// again (commit d434a35) on the machine under other jobs' load (5–9), where
// 2 processes in lock-step ran slower than 1 by wall clock, so only the
// CPU-time speed-up means anything (1 epoch, batch 64, 1 process, 2
// processes and 2 processes of the previous tree alternated; MLP 3
// rounds, CNN 2):
//
//	-model mlp    1.06×, 1.14×, 1.21×   (previous tree 0.97×, 1.18×, 1.22×)
//	-model cnn    1.93×, 1.78×          (previous tree 1.75×, 1.82×)
//
// In CPU profiles of 2 epochs (-cpuprofile) an MLP rank's loop outside the
// collectives takes 63% of one process's CPU time (the matrix products of
// batch 32 cost 70% of those of 64), so free communication would give
// about 1.6×; the collectives, all copies and sums of 0.4 MB pieces, add
// 25%.
//
// The per-step costs that do not shrink with the batch were then cut in the
// library (commit 4bc9cf1 against the same tree with those commits reverted,
// shared-memory collectives in both): the forward product x·Wᵀ of a batch of
// at most 64 rows skips packing W (an inner-product kernel reads both as
// stored: Linear.Forward 375–385 against 525–580 µs per step at batch 64,
// 225–300 against 280–360 at 32, BenchmarkMLPStep profiles), the
// cross-entropy picks each target with one Gather instead of a dozen one-hot
// ops, and a gathered batch is no longer zeroed first. One process, batch
// 64, 1 epoch, old and new alternated 10 times (load 1.0–2.0): 35644 → 40615
// samples/s, CPU in the loop 1.67 → 1.47 s.
// Then 1 and 2 processes alternated 6 times (load 1.0–1.8):
//
//	1 process    41221 samples/s, CPU 1.45 s
//	2 processes  31597 samples/s (14898–46929), CPU 2.50 s (both ranks)
//	             wall 0.77×, CPU-time speed-up 1.16× (old tree 0.84×, 1.12×)
//
// Two ranks in lock-step on two cores lose whole steps whenever another job
// takes a core, so the wall-clock ratio swings with the load; the best
// rounds reach 1.14×. Still far from 1.7×: a rank's forward and backward at
// batch 32 cost 0.81–0.91 ms per step against 0.94–1.17 ms for one process
// at 64 (the weight gradient's 784 KiB output is fresh, uncached memory each
// step, ≈ 130 µs that the batch does not shrink), and the sync and step
// phases, which hold the collectives, Adam on half the parameters and the
// waiting for the other rank, take 0.79–1.05 ms per step against 0.24 ms for
// one process (-phases, 2 rounds each).
//
// Since then DataParallel's buckets live in shared memory (SharedZeros) and
// the CNN's one-channel first layer runs through the packed matrix product
// instead of the scalar depthwise loop (one process 1,507 → about 2,450
// samples/s). Quiet machine, commit 61dd1cb, 1 and 2 processes alternated
// 3 times (README "Distributed: tensors in shared memory"): CNN 1.33×,
// 1.55×, 1.60×; MLP 0.90×, 0.46×, 0.58× (0.71×, 0.60×, 0.39× with
// -zero=false). Two independent one-process CNN runs side by side now reach
// 2.02× one alone, so what the CNN loses is lock-step waiting: 1.2–2.3 s of
// SyncGradients and 0.45–0.7 s of ZeRO step per rank in 15.6–18.5 s. With
// max pooling in AVX-512 (commit 6988d3f), 7 alternations: CNN 2.06×,
// 1.37×, 1.59×, 1.27×, 1.58×, 1.46×, 1.74× (median 1.58×; one process
// alone moved between 2,689 and 4,001 samples/s).
//
// Then the convolutions got faster (one-copy im2col taps, weight gradients
// a chunk of images at a time, no zero fill of outputs) and all-reduce
// results are pushed into the peers' tensors. Commit 5c7cdbb, quiet
// machine, 7 alternations (README "every tensor all-reduced in place"):
// CNN one process 3,415–4,122 samples/s, two 5,245–7,056: 2.07×, 1.59×,
// 1.67×, 1.72×, 1.72×, 1.73×, 1.37× (median 1.72×), and in a second
// reading of 7 right after 1.72×, 1.56×, 1.57×, 1.55×, 1.84×, 1.52×, 1.98×
// (median 1.57×), and a third 1.85×, 1.47×, 1.84×, 1.55×, 1.76×, 1.82×,
// 1.44× (median 1.76×; all 21: median 1.72×); MLP 0.91×, 0.85×, 0.77×. The all-reduce itself takes about 0.16 ms a step; the rest of the
// CNN's loss is one rank waiting while the other's per-step compute runs
// 5–25% slower for seconds at a time.
//
// Then collectives of every size went through shared memory (the small
// ones had crossed loopback TCP), and a rank waiting for its peer spins
// instead of sleeping when each rank's threads have CPUs of their own.
// Commit 70f67d6, 1 and 2 processes alternated (README "small collectives
// through shared memory"): CNN 1.65×, 1.93×, 1.32×, 1.77×, 1.75×, 1.62×,
// 1.62× (median 1.65×; the previous tree 1.56× in the same rounds); MLP
// on MNIST median 1.17× (previous 0.96×); the default, the MLP on the
// digits, 0.81× (previous 0.16×: its step is a fifth of a millisecond).
// Two ddp processes reach 0.85–0.98 of what two independent one-process
// runs do side by side.
package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/data"
	"github.com/emberml/ember/distributed"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

func main() {
	nproc := flag.Int("nproc", 1, "number of local processes to start")
	threads := flag.Int("threads", 1, "GOMAXPROCS of each process")
	epochs := flag.Int("epochs", 20, "training epochs")
	batch := flag.Int("batch", 64, "global batch size (split among the processes)")
	lr := flag.Float64("lr", 1e-3, "Adam learning rate")
	seed := flag.Uint64("seed", 1, "seed for initialization and shuffling")
	digits := flag.String("digits", "examples/quickstart/digits.csv.gz", "gzipped digits CSV (64 pixels 0..16, then the label)")
	mnist := flag.String("mnist", "", "directory of the MNIST idx files (used instead of -digits when set)")
	cpuprofile := flag.String("cpuprofile", "", "write each rank's CPU profile of the training loop to FILE.rankN")
	steplog := flag.String("steplog", "", "write each rank's per-step phase times (µs) to FILE.rankN")
	phases := flag.Bool("phases", false, "report the time each rank spends in each phase of the training step")
	zero := flag.Bool("zero", true, "shard the optimizer over the processes (distributed.NewZeroOptimizer); false: every process runs the whole Adam step")
	model := flag.String("model", "mlp", "network: mlp (one hidden layer) or cnn (examples/quickstart's convolutional network)")
	flag.Parse()
	var err error
	if _, worker := os.LookupEnv(distributed.EnvRank); worker || *nproc == 1 {
		runtime.GOMAXPROCS(*threads)
		_, err = trainModel(options{
			digits: *digits, mnist: *mnist, epochs: *epochs, batch: *batch, lr: *lr, seed: *seed,
			cpuprofile: *cpuprofile, steplog: *steplog, phases: *phases, zero: *zero, model: *model,
		})
	} else {
		err = launch(*nproc)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ddp:", err)
		os.Exit(1)
	}
}

// launch re-executes this program nproc times as the ranks of one job and
// waits for them; when one fails, the others are stopped.
func launch(nproc int) error {
	if nproc < 1 {
		return fmt.Errorf("-nproc %d: want at least 1", nproc)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	var tok [16]byte
	rand.Read(tok[:])
	token := hex.EncodeToString(tok[:])

	cmds := make([]*exec.Cmd, nproc)
	var out sync.Mutex
	var pipes sync.WaitGroup
	for r := range nproc {
		c := exec.Command(exe, os.Args[1:]...)
		c.Env = append(os.Environ(),
			"RANK="+strconv.Itoa(r), "LOCAL_RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(nproc),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+port, distributed.EnvToken+"="+token)
		pr, pw := io.Pipe()
		c.Stdout, c.Stderr = pw, pw
		pipes.Go(func() {
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				out.Lock()
				fmt.Printf("[rank %d] %s\n", r, sc.Text())
				out.Unlock()
			}
		})
		if err := c.Start(); err != nil {
			pw.Close()
			stopAll(cmds)
			return err
		}
		cmds[r] = c
		defer pw.Close()
	}
	errs := make(chan error, nproc)
	for r, c := range cmds {
		go func() {
			err := c.Wait()
			if err != nil {
				err = fmt.Errorf("rank %d: %w", r, err)
			}
			errs <- err
		}()
	}
	var first error
	for range nproc {
		if err := <-errs; err != nil && first == nil {
			first = err
			stopAll(cmds)
		}
	}
	if first != nil {
		return fmt.Errorf("%w; stopped the other ranks", first)
	}
	return nil
}

// stopAll kills the started ranks that are still running.
func stopAll(cmds []*exec.Cmd) {
	for _, c := range cmds {
		if c != nil && c.Process != nil && c.ProcessState == nil {
			c.Process.Kill()
		}
	}
}

// loadDigits reads the gzipped digits CSV and splits it 80/20.
func loadDigits(path string) (train, test data.Dataset, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (run from the repository root or pass -digits)", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	tab, err := data.ReadCSV(zr, data.CSVOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(tab.Columns) != 65 {
		return nil, nil, fmt.Errorf("%s: %d columns, want 64 pixels and a label", path, len(tab.Columns))
	}
	cols := make([]int, 64)
	for i := range cols {
		cols[i] = i
	}
	x := tab.Tensor(tensor.Float32, cols...).DivScalar(16)
	y := tab.Tensor(tensor.Int64, 64).Reshape(-1)
	n := tab.Rows()
	cut := n * 4 / 5
	return data.NewTensorDataset(x.Narrow(0, 0, cut), y.Narrow(0, 0, cut)),
		data.NewTensorDataset(x.Narrow(0, cut, n-cut), y.Narrow(0, cut, n-cut)), nil
}

// options are the settings of one rank's training run.
type options struct {
	digits, mnist string
	epochs, batch int
	lr            float64
	seed          uint64
	cpuprofile    string // profile file prefix; the rank is appended
	steplog       string // per-step phase log prefix; the rank is appended
	phases        bool   // report the time spent in each phase
	zero          bool   // shard the optimizer
	model         string // "mlp" or "cnn"
}

// phaseNames names the phases of a training step, in order.
var phaseNames = [...]string{"gather", "forward", "backward", "sync", "step"}

// trainModel runs one rank of the job and returns rank 0's test accuracy
// (0 on the other ranks).
func trainModel(o options) (float64, error) {
	digits, mnist, epochs, batch, lr, seed := o.digits, o.mnist, o.epochs, o.batch, o.lr, o.seed
	ctx := context.Background()
	var pg *distributed.TCPGroup
	var err error
	if _, ok := os.LookupEnv(distributed.EnvRank); ok {
		pg, err = distributed.NewGroupFromEnv(ctx)
	} else {
		pg, err = distributed.NewTCPGroup(ctx, distributed.Config{WorldSize: 1})
	}
	if err != nil {
		return 0, err
	}
	defer pg.Close()
	if batch%pg.Size() != 0 {
		return 0, fmt.Errorf("global batch %d does not divide among %d processes", batch, pg.Size())
	}

	if o.model != "mlp" && o.model != "cnn" {
		return 0, fmt.Errorf("-model %q: want mlp or cnn", o.model)
	}
	var trainSet, testSet data.Dataset
	side, hidden := 8, 128
	if mnist != "" {
		flat := data.MNISTOptions{Flatten: true}
		if trainSet, err = data.LoadMNIST(mnist, true, flat); err != nil {
			return 0, err
		}
		if testSet, err = data.LoadMNIST(mnist, false, flat); err != nil {
			return 0, err
		}
		side, hidden = 28, 256
	} else if trainSet, testSet, err = loadDigits(digits); err != nil {
		return 0, err
	}

	g := tensor.NewGenerator(seed)
	net := nn.NewSequential(nn.NewLinear(g, side*side, hidden, true), nn.NewReLU(), nn.NewLinear(g, hidden, 10, true))
	if o.model == "cnn" {
		net = newCNN(g, side)
	}
	model, err := distributed.DataParallel(net, pg, distributed.DDPOptions{})
	if err != nil {
		return 0, err
	}
	var opt distributed.Optimizer = optim.NewAdam(model.Parameters(), optim.AdamOptions{LR: lr})
	if o.zero && pg.Size() > 1 {
		opt = distributed.NewZeroOptimizer(model, func(shard []*autograd.Var) distributed.Optimizer {
			return optim.NewAdam(shard, optim.AdamOptions{LR: lr})
		})
	}
	lossFn := nn.NewCrossEntropyLoss()
	sampler := data.NewDistributedSampler(trainSet.Len(), data.DistributedSamplerOptions{
		Replicas: pg.Size(), Rank: pg.Rank(), Shuffle: true, Seed: seed, DropLast: true,
	})
	perRank := batch / pg.Size()
	if pg.Rank() == 0 {
		fmt.Printf("%d process(es), %d training and %d test samples, global batch %d\n", pg.Size(), trainSet.Len(), testSet.Len(), batch)
	}
	if o.cpuprofile != "" {
		f, err := os.Create(fmt.Sprintf("%s.rank%d", o.cpuprofile, pg.Rank()))
		if err != nil {
			return 0, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return 0, err
		}
		defer pprof.StopCPUProfile()
	}
	var stepLog *bufio.Writer
	if o.steplog != "" {
		f, err := os.Create(fmt.Sprintf("%s.rank%d", o.steplog, pg.Rank()))
		if err != nil {
			return 0, err
		}
		defer f.Close()
		stepLog = bufio.NewWriter(f)
		defer stepLog.Flush()
		fmt.Fprintln(stepLog, strings.Join(phaseNames[:], "\t"))
	}
	var spent, step [len(phaseNames)]time.Duration
	mark := time.Now()
	lap := func(phase int) {
		now := time.Now()
		step[phase] = now.Sub(mark)
		spent[phase] += step[phase]
		mark = now
	}
	user0, sys0, _ := processCPU()
	start := time.Now()
	samples := 0
	for epoch := range epochs {
		var sum float64
		steps := 0
		for idx := range sampler.Batches(epoch, perRank, true) {
			mark = time.Now()
			b := data.Gather(trainSet, idx)
			lap(0)
			opt.ZeroGrad()
			loss := lossFn.Forward(model.Forward(autograd.New(b[0])), b[1])
			lap(1)
			if err := loss.Backward(); err != nil {
				return 0, err
			}
			lap(2)
			if err := model.SyncGradients(); err != nil {
				return 0, err
			}
			lap(3)
			if err := opt.Step(); err != nil {
				return 0, err
			}
			lap(4)
			if stepLog != nil {
				for i, d := range step {
					if i > 0 {
						stepLog.WriteByte('\t')
					}
					stepLog.WriteString(strconv.FormatInt(d.Microseconds(), 10))
				}
				stepLog.WriteByte('\n')
			}
			sum += loss.Item()
			steps++
			samples += len(idx) * pg.Size()
		}
		if pg.Rank() == 0 && (epoch+1)%5 == 0 {
			fmt.Printf("epoch %d  loss %.4f (rank 0)\n", epoch+1, sum/float64(max(steps, 1)))
		}
	}
	elapsed := time.Since(start)
	if o.phases {
		line := fmt.Sprintf("rank %d phases:", pg.Rank())
		for i, d := range spent {
			line += fmt.Sprintf(" %s %v", phaseNames[i], d.Round(time.Millisecond))
		}
		if user, sys, ok := processCPU(); ok {
			line += fmt.Sprintf("; CPU in the loop %v user %v system", (user - user0).Round(time.Millisecond), (sys - sys0).Round(time.Millisecond))
		}
		fmt.Println(line)
	}
	if err := pg.Barrier(); err != nil {
		return 0, err
	}
	acc := 0.0
	if pg.Rank() == 0 {
		acc = accuracy(model, testSet)
		fmt.Printf("samples/s: %.0f (%d samples in %v)\n", float64(samples)/elapsed.Seconds(), samples, elapsed.Round(time.Millisecond))
		fmt.Printf("test accuracy: %.4f\n", acc)
	}
	return acc, nil
}

// newCNN builds examples/quickstart's network for side×side images given
// as rows of side² pixels: two 3×3 convolutions with max pooling, then two
// fully connected layers.
func newCNN(g *tensor.Generator, side int) *nn.Sequential {
	same := tensor.Conv2dOptions{Padding: [2]int{1, 1}}
	pool := tensor.Pool2dOptions{Kernel: [2]int{2, 2}}
	q := side / 4 // after two poolings
	return nn.NewSequential(
		nn.NewUnflatten(1, 1, side, side),
		nn.NewConv2d(g, 1, 16, [2]int{3, 3}, same, true),
		nn.NewReLU(),
		nn.NewMaxPool2d(pool),
		nn.NewConv2d(g, 16, 32, [2]int{3, 3}, same, true),
		nn.NewReLU(),
		nn.NewMaxPool2d(pool),
		nn.NewFlatten(1, -1),
		nn.NewLinear(g, 32*q*q, 64, true),
		nn.NewReLU(),
		nn.NewLinear(g, 64, 10, true),
	)
}

// accuracy evaluates m on ds.
func accuracy(m nn.Module, ds data.Dataset) float64 {
	m.Train(false)
	defer m.Train(true)
	correct, total := 0, 0
	for batch := range data.NewLoader(ds, data.LoaderOptions{BatchSize: 1000}).All() {
		pred := m.Forward(autograd.New(batch[0])).Value().ArgMax(1, false).Int64s()
		for i, y := range batch[1].Int64s() {
			if pred[i] == y {
				correct++
			}
			total++
		}
	}
	if total == 0 {
		return 0
	}
	return float64(correct) / float64(total)
}

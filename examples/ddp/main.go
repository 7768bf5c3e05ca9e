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
// by hand on several machines) it is one rank of the job. On two machines,
// with ember launch (cmd/ember) and the same EMBER_DIST_TOKEN on both:
//
//	ember launch -nnodes 2 -node-rank 0 -master 10.0.0.1:29500 -nproc 2 ./ddp   # on 10.0.0.1
//	ember launch -nnodes 2 -node-rank 1 -master 10.0.0.1:29500 -nproc 2 ./ddp   # on the other
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
// How well it scales depends on how much arithmetic a step has per byte
// of gradient and on the machine. On a 2-core virtual machine, one thread
// per process, batch 64 (commit 70f67d6; docs/performance.md, "Small
// collectives through shared memory", holds the commands and the rounds,
// and git history the earlier readings), 2 processes against 1, medians of alternated
// rounds:
//
//	-model cnn -mnist DIR    1.65× (rounds 1.32–1.93×)
//	-model mlp -mnist DIR    1.17×
//	-model mlp (digits)      0.81×
//
// Two ddp processes reach 0.85–0.98 of the throughput of two independent
// one-process runs side by side, which is the bound here and moves with
// the machine from run to run; bench/ddp_scaling.py measures all three in
// alternated rounds. The MLPs gain little or lose: their steps
// are short (a fifth of a millisecond for the digits), and the costs that
// do not shrink with the batch (the weight gradients, the optimizer, the
// exchange) weigh as much as the rest.
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

//go:build cuda

package distributed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/cuda"
	"github.com/emberml/ember/internal/dl"
	"github.com/emberml/ember/tensor"
)

func TestNCCLSearchOrder(t *testing.T) {
	files := map[string]bool{
		"/opt/ld1/libnccl.so.2": true,
		"/opt/ld3/libnccl.so.2": true,
		"/usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2":     true,
		"/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2":          true,
		"/home/u/.local/lib/python3.10/site-packages/nvidia/nccl/lib/libnccl.so.2": true,
	}
	folders := []string{
		"/usr/local/lib/python3.12/dist-packages",
		"/usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib",
		"/venv/lib/python3.11/site-packages",
		"/venv/lib/python3.11/site-packages/nvidia/nccl/lib",
		"/home/u/.local/lib/python3.10/site-packages",
		"/home/u/.local/lib/python3.10/site-packages/nvidia/nccl/lib",
		"/usr/lib/python3/dist-packages",
		"/usr/lib/python3/dist-packages/nvidia/nccl/lib", // exists, without the library
	}
	env := dl.Env{
		LDLibraryPath: "/opt/ld1::/opt/ld2:/opt/ld1/:/opt/ld3",
		VirtualEnv:    "/venv",
		Home:          "/home/u",
		Glob: func(pattern string) ([]string, error) {
			var out []string
			for _, d := range folders {
				if ok, _ := filepath.Match(pattern, d); ok {
					out = append(out, d)
				}
			}
			return out, nil
		},
		Exists: func(p string) bool { return files[p] },
	}
	assert.Equal(t, []string{
		"/opt/ld1", "/opt/ld2", "/opt/ld3",
		"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
		"/usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib",
		"/usr/lib/python3/dist-packages/nvidia/nccl/lib",
		"/venv/lib/python3.11/site-packages/nvidia/nccl/lib",
		"/home/u/.local/lib/python3.10/site-packages/nvidia/nccl/lib",
	}, env.Dirs())
	var paths []string
	for _, c := range env.Candidates(ncclSpec.Sonames) {
		paths = append(paths, c.Path())
	}
	assert.Equal(t, []string{
		"/opt/ld1/libnccl.so.2",
		"/opt/ld3/libnccl.so.2",
		"/usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2",
		"/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2",
		"/home/u/.local/lib/python3.10/site-packages/nvidia/nccl/lib/libnccl.so.2",
		"libnccl.so.2",
	}, paths)
}

func TestNCCLSearchRealFileSystem(t *testing.T) {
	root := t.TempDir()
	lib := filepath.Join(root, "usr/lib/python3.11/site-packages/nvidia/nccl/lib")
	require.NoError(t, os.MkdirAll(lib, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(lib, ncclLibName), nil, 0o644))
	ld := filepath.Join(root, "ld")
	require.NoError(t, os.MkdirAll(filepath.Join(ld, ncclLibName), 0o755)) // a folder, not a library
	env := dl.Env{LDLibraryPath: ld, Root: root}
	assert.Equal(t, []dl.Candidate{{Dir: lib, Soname: ncclLibName}, {Soname: ncclLibName}}, env.Candidates(ncclSpec.Sonames))
}

func TestOpenNCCLReportsEveryAttempt(t *testing.T) {
	env := dl.Env{
		LDLibraryPath: "/a:/b",
		Glob:          func(string) ([]string, error) { return nil, nil },
		Exists:        func(p string) bool { return p == "/b/libnccl.so.2" },
	}
	var tried []string
	_, err := openNCCL(env, dl.OpenerFunc(func(p string) (uintptr, error) {
		tried = append(tried, p)
		return 0, fmt.Errorf("cannot open %s", filepath.Base(filepath.Dir(p)))
	}))
	require.Error(t, err)
	require.ErrorIs(t, err, dl.ErrNotFound)
	assert.Equal(t, []string{"/b/libnccl.so.2", "libnccl.so.2"}, tried)
	var de *dl.Error
	require.ErrorAs(t, err, &de)
	assert.Equal(t, []dl.Attempt{
		{Path: "/b/libnccl.so.2", Err: errors.New("cannot open b")},
		{Path: "libnccl.so.2", Err: errors.New("cannot open .")},
	}, de.Attempts)
	msg := err.Error()
	for _, s := range []string{
		"NCCL (libnccl.so.2)", "searched /a, /b", "/b/libnccl.so.2: cannot open b", "; libnccl.so.2: cannot open .",
		"pip install nvidia-nccl-cu12", "LD_LIBRARY_PATH",
	} {
		assert.Contains(t, msg, s)
	}
}

func TestOpenNCCLWithTheSystemLoader(t *testing.T) {
	lib, err := openNCCL(dl.OSEnv(), dl.OpenerFunc(dlopen))
	if err == nil {
		t.Logf("NCCL %s at %s", ncclVersionString(lib.version), lib.path)
		assert.NotZero(t, lib.allReduce)
		assert.Greater(t, lib.version, 2000)
		return
	}
	msg := err.Error()
	if errors.Is(err, dl.ErrNotFound) {
		assert.Contains(t, msg, "searched ")
		assert.Contains(t, msg, "; libnccl.so.2: ") // the bare soname is the last attempt
		return
	}
	// Found but unusable: too old, or missing symbols.
	assert.Contains(t, msg, "NCCL")
}

func TestLoadDriverWithoutGPU(t *testing.T) {
	d, err := loadDriver()
	if err == nil {
		assert.NotZero(t, d.streamQuery)
		return
	}
	assert.ErrorIs(t, err, cuda.ErrNoDevice)
}

func TestNCCLCodes(t *testing.T) {
	dtypes := []struct {
		dt   tensor.DType
		code uintptr
		ok   bool
	}{
		{tensor.Int32, 2, true}, {tensor.Int64, 4, true}, {tensor.Float16, 6, true},
		{tensor.Float32, 7, true}, {tensor.Float64, 8, true}, {tensor.BFloat16, 9, true},
		{tensor.Bool, 0, false},
	}
	for _, c := range dtypes {
		code, ok := ncclDType(c.dt)
		assert.Equal(t, c.ok, ok, "%s", c.dt)
		assert.Equal(t, c.code, code, "%s", c.dt)
	}
	ops := []struct {
		op      ReduceOp
		withAvg bool
		code    uintptr
	}{
		{Sum, true, 0}, {Prod, true, 1}, {Max, true, 2}, {Min, true, 3}, {Avg, true, 4}, {Avg, false, 0},
	}
	for _, c := range ops {
		assert.Equal(t, c.code, ncclRedOp(c.op, c.withAvg), "%s avg=%v", c.op, c.withAvg)
	}
	versions := []struct {
		code int
		want string
	}{{22703, "2.27.3"}, {21000, "2.10.0"}, {2804, "2.8.4"}, {2708, "2.7.8"}}
	for _, c := range versions {
		assert.Equal(t, c.want, ncclVersionString(c.code))
	}
}

func TestCString(t *testing.T) {
	cases := []struct{ mem, want string }{
		{"unhandled cuda error\x00junk", "unhandled cuda error"},
		{"\x00", ""},
	}
	for _, c := range cases {
		b := []byte(c.mem)
		assert.Equal(t, c.want, cString(uintptr(unsafe.Pointer(&b[0]))))
		runtime.KeepAlive(b)
	}
	assert.Equal(t, "unknown error", cString(0))
}

// ncclDevices returns how many CUDA devices, up to n, can be opened.
func ncclDevices(n int) int {
	for i := range n {
		if _, err := tensor.BackendFor(tensor.CUDA(i)); err != nil {
			return i
		}
	}
	return n
}

func TestNewNCCLGroupWithoutDevice(t *testing.T) {
	if ncclDevices(1) > 0 {
		t.Skip("a CUDA device is present")
	}
	cases := []struct {
		name string
		cfg  Config
	}{
		{"single rank", Config{WorldSize: 1}},
		{"rank 1 of 2", Config{Rank: 1, WorldSize: 2, LocalRank: 1, MasterAddr: "127.0.0.1:1", Timeout: time.Second}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, err := NewNCCLGroup(context.Background(), c.cfg)
			require.Error(t, err)
			assert.Nil(t, g)
			assert.ErrorIs(t, err, cuda.ErrNoDevice)
			assert.Contains(t, err.Error(), "NewNCCLGroup")
			t.Log(err)
		})
	}
}

func TestNewNCCLGroupInvalidConfig(t *testing.T) {
	_, err := NewNCCLGroup(context.Background(), Config{Rank: 2, WorldSize: 2})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rank 2 outside [0, 2)")
}

// singleNCCL returns a world-size-1 NCCL group on cuda:0, skipping without
// a device or NCCL.
func singleNCCL(t *testing.T) *NCCLGroup {
	t.Helper()
	if ncclDevices(1) == 0 {
		t.Skip("no CUDA device")
	}
	if _, err := loadNCCL(); err != nil {
		t.Skipf("NCCL is not available: %v", err)
	}
	g, err := NewNCCLGroup(context.Background(), Config{WorldSize: 1, Timeout: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { g.Close() })
	v, path := g.NCCLVersion()
	t.Logf("NCCL %s from %s", v, path)
	return g
}

// deviceGroup runs an NCCLGroup's collectives on CPU tensors by copying
// them to its device and the results back, so the TCP backend's serial
// reference suite checks it.
type deviceGroup struct{ *NCCLGroup }

func (d deviceGroup) dev(t *tensor.Tensor) *tensor.Tensor {
	if t == nil {
		return nil
	}
	x, err := t.ToDevice(d.Device())
	if err != nil {
		panic(err)
	}
	return x
}

func (d deviceGroup) devs(ts []*tensor.Tensor) []*tensor.Tensor {
	if ts == nil {
		return nil
	}
	out := make([]*tensor.Tensor, len(ts))
	for i, t := range ts {
		out[i] = d.dev(t)
	}
	return out
}

// back copies device results into the host tensors.
func back(hosts, devs []*tensor.Tensor) {
	for i, h := range hosts {
		x, err := devs[i].ToDevice(tensor.CPU)
		if err != nil {
			panic(err)
		}
		h.CopyFrom(x)
	}
}

// hostWork copies results back once the device work completes.
type hostWork struct {
	Work
	after func()
	once  sync.Once
}

func (w *hostWork) Wait(ctx context.Context) error {
	err := w.Work.Wait(ctx)
	if err == nil {
		w.once.Do(w.after)
	}
	return err
}

func (d deviceGroup) AllReduce(t *tensor.Tensor, op ReduceOp) error {
	return wait(d.AllReduceAsync(t, op))
}

func (d deviceGroup) AllReduceAsync(t *tensor.Tensor, op ReduceOp) Work {
	x := d.dev(t)
	return &hostWork{Work: d.NCCLGroup.AllReduceAsync(x, op), after: func() { back([]*tensor.Tensor{t}, []*tensor.Tensor{x}) }}
}

func (d deviceGroup) Broadcast(t *tensor.Tensor, root int) error {
	x := d.dev(t)
	err := d.NCCLGroup.Broadcast(x, root)
	back([]*tensor.Tensor{t}, []*tensor.Tensor{x})
	return err
}

func (d deviceGroup) Reduce(t *tensor.Tensor, root int, op ReduceOp) error {
	x := d.dev(t)
	err := d.NCCLGroup.Reduce(x, root, op)
	back([]*tensor.Tensor{t}, []*tensor.Tensor{x})
	return err
}

func (d deviceGroup) AllGather(outs []*tensor.Tensor, in *tensor.Tensor) error {
	xs := d.devs(outs)
	err := d.NCCLGroup.AllGather(xs, d.dev(in))
	back(outs, xs)
	return err
}

func (d deviceGroup) ReduceScatter(out *tensor.Tensor, ins []*tensor.Tensor, op ReduceOp) error {
	x := d.dev(out)
	err := d.NCCLGroup.ReduceScatter(x, d.devs(ins), op)
	back([]*tensor.Tensor{out}, []*tensor.Tensor{x})
	return err
}

func (d deviceGroup) Gather(outs []*tensor.Tensor, in *tensor.Tensor, root int) error {
	xs := d.devs(outs)
	err := d.NCCLGroup.Gather(xs, d.dev(in), root)
	back(outs, xs)
	return err
}

func (d deviceGroup) Scatter(out *tensor.Tensor, ins []*tensor.Tensor, root int) error {
	x := d.dev(out)
	err := d.NCCLGroup.Scatter(x, d.devs(ins), root)
	back([]*tensor.Tensor{out}, []*tensor.Tensor{x})
	return err
}

func (d deviceGroup) SendAsync(t *tensor.Tensor, dst int) Work {
	return d.NCCLGroup.SendAsync(d.dev(t), dst)
}

func (d deviceGroup) Recv(t *tensor.Tensor, src int) error {
	x := d.dev(t)
	err := d.NCCLGroup.Recv(x, src)
	back([]*tensor.Tensor{t}, []*tensor.Tensor{x})
	return err
}

// ncclSuite is one rank's part of the NCCL tests: the serial reference
// suite through deviceGroup, half-precision dtypes, views of device
// tensors, async forms and host tensors refused.
func ncclSuite(t *testing.T, g *NCCLGroup) error {
	if err := collectiveSuite(t, deviceGroup{g}, []int{1, 0, 7, 333}); err != nil {
		return err
	}
	if g.Size() > 1 {
		if err := ncclRing(t, g); err != nil {
			return err
		}
	}
	if err := nonContiguousAsync(t, deviceGroup{g}); err != nil {
		return err
	}
	n, r := g.Size(), g.Rank()
	for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
		for _, op := range []ReduceOp{Sum, Avg, Max, Min, Prod} {
			x := deviceGroup{g}.dev(rankTensor(r, int(op), 37, dt))
			if err := g.AllReduce(x, op); err != nil {
				return err
			}
			assert.Equal(t, roundTo(serialReduce(n, int(op), 37, dt, op), dt), x.Float64s(), "AllReduce %s %s", dt, op)
		}
	}
	// A transposed view of a device tensor is reduced through a
	// contiguous copy and written back through the view.
	base := deviceGroup{g}.dev(rankTensor(r, 0, 12, tensor.Float64).Reshape(3, 4))
	v0 := base.Version()
	if err := g.AllReduce(base.T(), Sum); err != nil {
		return err
	}
	assert.Equal(t, serialReduce(n, 0, 12, tensor.Float64, Sum), base.Float64s())
	assert.Greater(t, base.Version(), v0, "the write is recorded")
	// Host tensors are refused with an error, without touching the group.
	err := g.AllReduce(tensor.Ones([]int{3}), Sum)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is on cpu")
	return g.Barrier()
}

// ncclRing passes tensors round the ring of ranks with SendRecv, then
// with Send and Recv ordered so that no cycle waits: even ranks send
// first.
func ncclRing(t *testing.T, g *NCCLGroup) error {
	n, r := g.Size(), g.Rank()
	next, prev := (r+1)%n, (r+n-1)%n
	d := deviceGroup{g}
	for k := range 3 {
		got := d.dev(tensor.Zeros([]int{9}, tensor.Int64))
		if err := g.SendRecv(d.dev(rankTensor(r, k, 9, tensor.Int64)), next, got, prev); err != nil {
			return err
		}
		assert.Equal(t, rankTensor(prev, k, 9, tensor.Int64).Float64s(), got.Float64s(), "SendRecv %d", k)
	}
	if n%2 == 1 {
		return nil // an odd ring has two neighbouring even ranks
	}
	got := tensor.Zeros([]int{5}, tensor.Float32)
	steps := []func() error{
		func() error { return d.SendAsync(rankTensor(r, 7, 5, tensor.Float32), next).Wait(context.Background()) },
		func() error { return d.Recv(got, prev) },
	}
	if r%2 == 1 {
		steps[0], steps[1] = steps[1], steps[0]
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	assert.Equal(t, rankTensor(prev, 7, 5, tensor.Float32).Float64s(), got.Float64s(), "Send/Recv")
	return nil
}

func TestNCCLSingleRank(t *testing.T) {
	g := singleNCCL(t)
	require.NoError(t, ncclSuite(t, g))
	sub, err := g.NewSubgroup([]int{0})
	require.NoError(t, err)
	require.NotNil(t, sub)
	x := deviceGroup{sub}.dev(tensor.FromSlice([]float32{1, 2, 3}, 3))
	require.NoError(t, sub.AllReduce(x, Sum))
	assert.Equal(t, []float32{1, 2, 3}, x.Float32s())
}

func TestNCCLClosedGroup(t *testing.T) {
	g := singleNCCL(t)
	require.NoError(t, g.Close())
	err := g.AllReduce(deviceGroup{g}.dev(tensor.Ones([]int{2})), Sum)
	assert.ErrorIs(t, err, ErrClosed)
}

// ncclHelperEnv selects what TestNCCLHelperRank does in a child process.
const ncclHelperEnv = "EMBER_NCCL_TEST_HELPER"

// runNCCLRanks runs n ranks of TestNCCLHelperRank as processes, rank r on
// cuda:r, and requires that all succeed.
func runNCCLRanks(t *testing.T, n int, mode string) {
	if ncclDevices(n) < n {
		t.Skipf("needs %d CUDA devices (one per rank: NCCL does not allow two ranks of a communicator on one device)", n)
	}
	if _, err := loadNCCL(); err != nil {
		t.Skipf("NCCL is not available: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	require.NoError(t, ln.Close())
	outs := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		c := exec.Command(os.Args[0], "-test.run=^TestNCCLHelperRank$", "-test.count=1", "-test.v")
		c.Env = append(os.Environ(), ncclHelperEnv+"="+mode,
			"RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(n), "LOCAL_RANK="+strconv.Itoa(r),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+port, EnvToken+"=nccl-test", EnvTimeout+"=60s")
		wg.Go(func() { outs[r], errs[r] = c.CombinedOutput() })
	}
	wg.Wait()
	for r := range n {
		require.NoError(t, errs[r], "rank %d:\n%s", r, outs[r])
		assert.Contains(t, string(outs[r]), "nccl helper done", "rank %d:\n%s", r, outs[r])
	}
}

func TestNCCLTwoRanks(t *testing.T)  { runNCCLRanks(t, 2, "suite") }
func TestNCCLFourRanks(t *testing.T) { runNCCLRanks(t, 4, "suite") }

func TestNCCLDeadPeerTimesOut(t *testing.T) { runNCCLRanks(t, 2, "dead peer") }

func TestNCCLHelperRank(t *testing.T) {
	mode := os.Getenv(ncclHelperEnv)
	if mode == "" {
		t.Skip("helper for the multi-process NCCL tests")
	}
	g, err := NewNCCLGroupFromEnv(context.Background())
	require.NoError(t, err)
	defer g.Close()
	switch mode {
	case "suite":
		require.NoError(t, ncclSuite(t, g))
		// Subgroups: the even ranks, then the odd ones.
		for parity := range 2 {
			var ranks []int
			for r := parity; r < g.Size(); r += 2 {
				ranks = append(ranks, r)
			}
			sub, err := g.NewSubgroup(ranks)
			require.NoError(t, err)
			if g.Rank()%2 != parity {
				require.Nil(t, sub)
				continue
			}
			require.NotNil(t, sub)
			x := deviceGroup{sub}.dev(tensor.FromSlice([]int64{int64(g.Rank())}, 1))
			require.NoError(t, sub.AllReduce(x, Sum))
			var want int64
			for _, r := range ranks {
				want += int64(r)
			}
			assert.Equal(t, []int64{want}, x.Int64s())
		}
	case "dead peer":
		x := deviceGroup{g}.dev(tensor.Ones([]int{1 << 10}))
		require.NoError(t, g.AllReduce(x, Sum))
		if g.Rank() == 1 {
			fmt.Println("nccl helper done") // leaves without joining the next collective
			return
		}
		g.SetTimeout(3 * time.Second)
		start := time.Now()
		err := g.AllReduce(x, Sum)
		require.Error(t, err)
		var ne *NCCLError
		require.True(t, errors.As(err, &ne), "error %v", err)
		assert.Equal(t, "AllReduce", ne.Op)
		assert.Less(t, time.Since(start), time.Minute)
		assert.True(t, strings.Contains(err.Error(), "AllReduce"), "error %v", err)
		err = g.Barrier()
		require.Error(t, err, "the group is unusable after a failure")
	}
	fmt.Println("nccl helper done")
}

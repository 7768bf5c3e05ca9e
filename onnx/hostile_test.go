package onnx

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// Hostile inputs.
//
// Each probe writes a model folder an attacker could hand over and names
// the error it must end in. TestHostileProbes runs every probe with the
// default limits; TestHostileProbesMemory runs each in a child process and
// checks its peak memory.

// hostileProbe is one hostile model folder.
type hostileProbe struct {
	name string
	// build writes the folder under dir and returns the model's path.
	build func(t testing.TB, dir string) string
	// want is a substring of the error.
	want string
	// unix marks probes that need symbolic links, FIFOs or sparse files
	// (a file with a hole would take its whole size on Windows).
	unix bool
}

// secretFile writes a file outside the model's folder that no probe may
// read, and returns its path.
func secretFile(t testing.TB, dir string) string {
	p := filepath.Join(dir, "secret.txt")
	require.NoError(t, os.WriteFile(p, []byte("secret!!secret!!"), 0o600))
	return p
}

// extTensor encodes a TensorProto of dims and type dt whose data is in the
// external file loc.
func extTensor(name string, dt int64, dims []int64, loc string) []byte {
	var b []byte
	for _, d := range dims {
		b = pbVarint(b, 1, d)
	}
	b = pbVarint(b, 2, dt)
	b = pbString(b, 8, name)
	e := pbString(nil, 1, "location")
	e = pbString(e, 2, loc)
	b = pbBytes(b, 13, e)
	return pbVarint(b, 14, 1)
}

// identityOfExternal writes a model folder model/ whose output is the
// external initializer W of 16 bytes at loc, and returns the model path.
func identityOfExternal(t testing.TB, dir, loc string) string {
	folder := filepath.Join(dir, "model")
	require.NoError(t, os.MkdirAll(folder, 0o755))
	model := mkModel(13, graphParts{
		nodes:   [][]byte{mkNode("Identity", []string{"W"}, []string{"y"})},
		inits:   [][]byte{extTensor("W", dtFloat, []int64{4}, loc)},
		outputs: [][]byte{mkValueInfo("y", dtFloat, 4)},
	})
	p := filepath.Join(folder, "model.onnx")
	require.NoError(t, os.WriteFile(p, model, 0o644))
	return p
}

// writeModel writes model bytes to dir/model.onnx.
func writeModel(t testing.TB, dir string, model []byte) string {
	p := filepath.Join(dir, "model.onnx")
	require.NoError(t, os.WriteFile(p, model, 0o644))
	return p
}

// overBudget returns an element count of elemSize-byte elements just above
// the default byte budget (or the element limit, whichever comes first),
// so a probe fails on any machine.
func overBudget(elemSize int64) int64 {
	return min(DefaultMaxBytes()/elemSize+1, maxElements+1)
}

// stringGatherModel is one string of strLen bytes gathered count times,
// then StringNormalizer.
func stringGatherModel(strLen int, count int64) []byte {
	idx := make([]int64, count)
	return mkModel(13, graphParts{
		nodes: [][]byte{
			mkNode("Gather", []string{"s", "idx"}, []string{"g"}),
			mkNode("StringNormalizer", []string{"g"}, []string{"y"}, mkAttrString("case_change_action", "UPPER")),
		},
		inits: [][]byte{
			mkStringTensor("s", []int64{1}, strings.Repeat("a", strLen)),
			mkInt64Tensor("idx", []int64{count}, idx...),
		},
		outputs: [][]byte{mkValueInfo("y", dtString, count)},
	})
}

// constantOfShapeModel is ConstantOfShape(shape) of DOUBLE ones, with the
// shape an initializer (so folded at load) or, when fed, a graph input.
func constantOfShapeModel(dims []int64, fed bool) []byte {
	g := graphParts{
		nodes:   [][]byte{mkNode("ConstantOfShape", []string{"shape"}, []string{"y"}, mkAttrTensor("value", mkTensor("", dtDouble, []int64{1}, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f})))},
		outputs: [][]byte{mkValueInfoAnyShape("y", dtDouble)},
	}
	if fed {
		g.inputs = [][]byte{mkValueInfo("shape", dtInt64, int64(len(dims)))}
	} else {
		g.inits = [][]byte{mkInt64Tensor("shape", []int64{int64(len(dims))}, dims...)}
	}
	return mkModel(13, g)
}

func hostileProbes() []hostileProbe {
	return []hostileProbe{
		{name: "symlink-to-file", unix: true, want: "escapes", build: func(t testing.TB, dir string) string {
			secret := secretFile(t, dir)
			p := identityOfExternal(t, dir, "weights.bin")
			require.NoError(t, os.Symlink(secret, filepath.Join(filepath.Dir(p), "weights.bin")))
			return p
		}},
		{name: "symlink-to-folder", unix: true, want: "escapes", build: func(t testing.TB, dir string) string {
			secretFile(t, dir)
			p := identityOfExternal(t, dir, "etc/secret.txt")
			require.NoError(t, os.Symlink(dir, filepath.Join(filepath.Dir(p), "etc")))
			return p
		}},
		{name: "symlink-to-etc-passwd", unix: true, want: "escapes", build: func(t testing.TB, dir string) string {
			p := identityOfExternal(t, dir, "etc/passwd")
			require.NoError(t, os.Symlink("/etc", filepath.Join(filepath.Dir(p), "etc")))
			return p
		}},
		{name: "dot-dot", want: "relative path inside the model's folder", build: func(t testing.TB, dir string) string {
			secretFile(t, dir)
			return identityOfExternal(t, dir, "../secret.txt")
		}},
		{name: "absolute-path", want: "relative path inside the model's folder", build: func(t testing.TB, dir string) string {
			return identityOfExternal(t, dir, secretFile(t, dir))
		}},
		{name: "folder-as-data", want: "not a regular file", build: func(t testing.TB, dir string) string {
			p := identityOfExternal(t, dir, "sub")
			require.NoError(t, os.Mkdir(filepath.Join(filepath.Dir(p), "sub"), 0o755))
			return p
		}},
		{name: "fifo", unix: true, want: "is a named pipe (FIFO), not a regular file", build: func(t testing.TB, dir string) string {
			p := identityOfExternal(t, dir, "weights.bin")
			require.NoError(t, mkfifo(filepath.Join(filepath.Dir(p), "weights.bin")))
			return p
		}},
		{name: "sparse-external-file", unix: true, want: "bytes", build: func(t testing.TB, dir string) string {
			n := overBudget(8)
			model := mkModel(13, graphParts{
				nodes:   [][]byte{mkNode("Identity", []string{"W"}, []string{"y"})},
				inits:   [][]byte{extTensor("W", dtDouble, []int64{n}, "weights.bin")},
				outputs: [][]byte{mkValueInfo("y", dtDouble, n)},
			})
			f, err := os.Create(filepath.Join(dir, "weights.bin"))
			require.NoError(t, err)
			require.NoError(t, f.Truncate(8*n)) // a hole: no disk space
			require.NoError(t, f.Close())
			return writeModel(t, dir, model)
		}},
		{name: "constant-of-shape-folded", want: "ConstantOfShape node", build: func(t testing.TB, dir string) string {
			return writeModel(t, dir, constantOfShapeModel([]int64{overBudget(8)}, false))
		}},
		{name: "strings-gathered", want: "string input 0", build: func(t testing.TB, dir string) string {
			return writeModel(t, dir, stringGatherModel(1<<20, DefaultMaxBytes()>>20+1))
		}},
		{name: "negative-declared-dim", want: "dim_value must be 0 or more", build: func(t testing.TB, dir string) string {
			return writeModel(t, dir, mkModel(13, graphParts{
				nodes:   [][]byte{mkNode("Relu", []string{"x"}, []string{"y"})},
				inputs:  [][]byte{mkValueInfo("x", dtFloat, 2), negDimValueInfo("x2", -5)},
				outputs: [][]byte{mkValueInfo("y", dtFloat, 2)},
			}))
		}},
		{name: "huge-initializer-dims", want: "more than", build: func(t testing.TB, dir string) string {
			return writeModel(t, dir, mkModel(13, graphParts{
				nodes:   [][]byte{mkNode("Identity", []string{"W"}, []string{"y"})},
				inits:   [][]byte{mkTensor("W", dtFloat, []int64{1 << 20, 1 << 20, 0}, nil)},
				outputs: [][]byte{mkValueInfo("y", dtFloat, 1<<20, 1<<20, 0)},
			}))
		}},
		{name: "zero-first-huge-dims", want: "more than", build: func(t testing.TB, dir string) string {
			return writeModel(t, dir, mkModel(13, graphParts{
				nodes:   [][]byte{mkNode("Identity", []string{"W"}, []string{"y"})},
				inits:   [][]byte{mkTensor("W", dtFloat, []int64{0, 1 << 40, 1 << 40}, nil)},
				outputs: [][]byte{mkValueInfo("y", dtFloat, 0, 1<<40, 1<<40)},
			}))
		}},
	}
}

// negDimValueInfo encodes a FLOAT input whose one dimension has dim_value d.
func negDimValueInfo(name string, d int64) []byte {
	dim := pbVarint(nil, 1, d)
	shape := pbBytes(nil, 1, dim)
	tt := pbVarint(nil, 1, dtFloat)
	tt = pbBytes(tt, 2, shape)
	return pbBytes(pbString(nil, 1, name), 2, pbBytes(nil, 1, tt))
}

// runProbe loads, prepares and runs the model at path with the default
// options and returns the first error. Graph inputs get zeros of their
// declared shape (none of the probes needs more).
func runProbe(ctx context.Context, path string) error {
	m, err := LoadContext(ctx, path, LoadOptions{})
	if err != nil {
		return err
	}
	s, err := m.NewSession(SessionOptions{})
	if err != nil {
		return err
	}
	out, err := s.RunValues(ctx, map[string]any{})
	if err != nil {
		return err
	}
	return fmt.Errorf("probe ran to the end with %d outputs", len(out))
}

func TestHostileProbes(t *testing.T) {
	for _, p := range hostileProbes() {
		t.Run(p.name, func(t *testing.T) {
			if p.unix && runtime.GOOS == "windows" {
				t.Skip("needs symbolic links, FIFOs and sparse files")
			}
			path := p.build(t, t.TempDir())
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- runProbe(ctx, path) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("the probe hangs") // a FIFO opened for reading blocks for ever
			}
			require.Error(t, err)
			t.Log(err)
			assert.Contains(t, err.Error(), p.want)
			assert.NotContains(t, err.Error(), "secret!!")
			assert.Less(t, len(err.Error()), 4096, "error messages are bounded")
		})
	}
}

// The probes of the issue at their own sizes, with explicit budgets so the
// test does not depend on the machine's memory.
func TestByteBudgetMessages(t *testing.T) {
	t.Run("constant-of-shape-at-load", func(t *testing.T) {
		m, err := Read(strings.NewReader(string(constantOfShapeModel([]int64{1<<31 - 1}, false))))
		require.NoError(t, err)
		_, err = m.NewSession(SessionOptions{MaxBytes: 1 << 30})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "ConstantOfShape node")
		assert.Contains(t, err.Error(), "needs 17179869176 bytes, more than the limit of 1073741824 bytes")
	})
	t.Run("constant-of-shape-at-run", func(t *testing.T) {
		m, err := Read(strings.NewReader(string(constantOfShapeModel([]int64{1<<31 - 1}, true))))
		require.NoError(t, err)
		s, err := m.NewSession(SessionOptions{MaxBytes: 1 << 30})
		require.NoError(t, err)
		_, err = s.Run(context.Background(), map[string]*tensor.Tensor{"shape": tensor.FromSlice([]int64{1<<31 - 1})})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "ConstantOfShape node")
		assert.Contains(t, err.Error(), "needs 17179869176 bytes")
		// Within the budget it runs.
		out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"shape": tensor.FromSlice([]int64{3})})
		require.NoError(t, err)
		assert.Equal(t, []float64{1, 1, 1}, out["y"].Float64s())
	})
	t.Run("sparse-external-8GiB", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("files with holes are not sparse by default")
		}
		dir := t.TempDir()
		n := int64(1 << 30)
		f, err := os.Create(filepath.Join(dir, "weights.bin"))
		require.NoError(t, err)
		require.NoError(t, f.Truncate(8*n))
		require.NoError(t, f.Close())
		path := writeModel(t, dir, mkModel(13, graphParts{
			nodes:   [][]byte{mkNode("Identity", []string{"W"}, []string{"y"})},
			inits:   [][]byte{extTensor("W", dtDouble, []int64{n}, "weights.bin")},
			outputs: [][]byte{mkValueInfo("y", dtDouble, n)},
		}))
		_, err = LoadContext(context.Background(), path, LoadOptions{MaxBytes: 1 << 30})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `tensor "W" of shape [1073741824] and type DOUBLE needs 8589934592 bytes, more than the`)
		assert.Contains(t, err.Error(), "of the limit of 1073741824 bytes")
	})
	t.Run("initializers-sum", func(t *testing.T) {
		model := mkModel(13, graphParts{
			nodes: [][]byte{mkNode("Add", []string{"A", "B"}, []string{"y"})},
			inits: [][]byte{
				mkFloatTensor("A", []int64{4}, 1, 2, 3, 4),
				mkFloatTensor("B", []int64{4}, 1, 2, 3, 4),
			},
			outputs: [][]byte{mkValueInfo("y", dtFloat, 4)},
		})
		m, err := ReadContext(context.Background(), strings.NewReader(string(model)), LoadOptions{MaxBytes: len64(model) + 32})
		require.NoError(t, err)
		assert.Equal(t, []float32{1, 2, 3, 4}, m.Initializer("B").Float32s())
		_, err = ReadContext(context.Background(), strings.NewReader(string(model)), LoadOptions{MaxBytes: len64(model) + 16 + 8})
		require.Error(t, err, "two 16-byte initializers do not fit 24 bytes")
		assert.Contains(t, err.Error(), fmt.Sprintf(`tensor "B" of shape [4] and type FLOAT needs 16 bytes, more than the 8 bytes left of the limit of %d bytes`, len64(model)+24))
	})
	t.Run("strings-16384x1MiB", func(t *testing.T) {
		m, err := Read(strings.NewReader(string(stringGatherModel(1<<20, 16384))))
		require.NoError(t, err)
		s, err := m.NewSession(SessionOptions{MaxBytes: 1 << 30})
		require.NoError(t, err)
		_, err = s.RunValues(context.Background(), nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "StringNormalizer node")
		assert.Contains(t, err.Error(), "string input 0 holds 16384 strings")
		// A small gather runs.
		m, err = Read(strings.NewReader(string(stringGatherModel(3, 2))))
		require.NoError(t, err)
		s, err = m.NewSession(SessionOptions{MaxBytes: 1 << 30})
		require.NoError(t, err)
		out, err := s.RunValues(context.Background(), nil)
		require.NoError(t, err)
		assert.Equal(t, []string{"AAA", "AAA"}, out["y"].(Strings).Data)
	})
	t.Run("live-intermediates", func(t *testing.T) {
		// Each of the three 4 KiB outputs fits a 10 KiB budget; all three
		// held at once (y reads a, b and c) do not.
		model := mkModel(13, graphParts{
			nodes: [][]byte{
				mkNode("Relu", []string{"x"}, []string{"a"}),
				mkNode("Neg", []string{"x"}, []string{"b"}),
				mkNode("Abs", []string{"x"}, []string{"c"}),
				mkNode("Sum", []string{"a", "b", "c"}, []string{"y"}),
			},
			inputs:  [][]byte{mkValueInfo("x", dtFloat, 1024)},
			outputs: [][]byte{mkValueInfo("y", dtFloat, 1024)},
		})
		m, err := Read(strings.NewReader(string(model)))
		require.NoError(t, err)
		x := tensor.Ones([]int{1024}, tensor.Float32)
		s, err := m.NewSession(SessionOptions{MaxBytes: 10 << 10})
		require.NoError(t, err)
		_, err = s.Run(context.Background(), map[string]*tensor.Tensor{"x": x})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the run holds 12288 bytes of intermediate values, more than the limit of 10240 bytes")
		s, err = m.NewSession(SessionOptions{MaxBytes: 16 << 10})
		require.NoError(t, err)
		out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": x})
		require.NoError(t, err)
		assert.Equal(t, float32(1), out["y"].Float32s()[0]) // 1 + -1 + 1
	})
}

func len64(b []byte) int64 { return int64(len(b)) }

func TestLongNamesAreCut(t *testing.T) {
	long := strings.Repeat("n", 1<<20)
	model := mkModel(13, graphParts{
		nodes:   [][]byte{pbString(mkNode("Reshape", []string{"x", "shape"}, []string{long}), 3, long)},
		inits:   [][]byte{mkInt64Tensor("shape", []int64{1}, 5)},
		inputs:  [][]byte{mkValueInfo("x", dtFloat, 6)},
		outputs: [][]byte{mkValueInfoAnyShape(long, dtFloat)},
	})
	m, err := Read(strings.NewReader(string(model)))
	require.NoError(t, err)
	s, err := m.NewSession(SessionOptions{})
	if err == nil {
		_, err = s.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.Zeros([]int{6}, tensor.Float32)})
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Reshape node")
	assert.Contains(t, err.Error(), "... (1048576 bytes)")
	assert.Less(t, len(err.Error()), 4096)
}

func TestDefaultMaxBytes(t *testing.T) {
	total, ok := parseMemTotal([]byte("MemTotal:       24684096 kB\nMemFree: 1 kB\n"))
	require.True(t, ok)
	assert.Equal(t, int64(24684096)<<10, total)
	for _, bad := range []string{"", "MemTotal: x kB\n", "MemTotal: 12 MB\n", "MemFree: 3 kB\n"} {
		_, ok := parseMemTotal([]byte(bad))
		assert.False(t, ok, bad)
	}
	d := DefaultMaxBytes()
	if mem, ok := physicalMemory(); ok {
		assert.Equal(t, max(mem/2, maxBytesFloor), d)
	} else {
		assert.Equal(t, int64(fallbackMaxBytes), d)
	}
}

func TestLoadContextCancelled(t *testing.T) {
	dir := t.TempDir()
	path := writeModel(t, dir, mlpModel())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := LoadContext(ctx, path, LoadOptions{})
	require.ErrorIs(t, err, context.Canceled)
	m, err := LoadContext(context.Background(), path, LoadOptions{})
	require.NoError(t, err)
	assert.Equal(t, 2, len(m.InitializerNames()))
}

// The memory test runs each probe in a child process (this test binary,
// re-executed) and reads the child's peak resident memory.
const probeEnv = "EMBER_ONNX_HOSTILE_PROBE"

// TestHostileProbeChild is the child's side: it runs the probe named by
// the environment on the folder it names and prints its peak memory.
func TestHostileProbeChild(t *testing.T) {
	spec := os.Getenv(probeEnv)
	if spec == "" {
		t.Skip("runs only as the child of TestHostileProbesMemory")
	}
	path, _ := strings.CutPrefix(spec, "path=")
	start := time.Now()
	err := runProbe(context.Background(), path)
	elapsed := time.Since(start)
	hwm, herr := peakRSS()
	require.NoError(t, herr)
	fmt.Printf("probe-result hwm=%d elapsed=%d err=%q\n", hwm, elapsed.Nanoseconds(), errString(err))
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// peakRSS reads VmHWM (peak resident memory) from /proc/self/status.
func peakRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc/self/status")
}

// TestHostileProbesMemory checks that every probe ends in an error with a
// peak resident memory under twice the folder's size on disk plus 64 MiB,
// and reports how long each took (not asserted: the machine may be busy).
func TestHostileProbesMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	if testing.Short() {
		t.Skip("starts a process per probe")
	}
	var report []string
	for _, p := range hostileProbes() {
		t.Run(p.name, func(t *testing.T) {
			dir := t.TempDir()
			path := p.build(t, dir)
			size := diskUsage(t, dir)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHostileProbeChild$", "-test.v")
			cmd.Env = append(os.Environ(), probeEnv+"=path="+path)
			out, err := cmd.CombinedOutput()
			require.NoError(t, ctx.Err(), "the probe hangs")
			require.NoError(t, err, "%s", out)
			var hwm, ns int64
			var msg string
			found := false
			for _, line := range strings.Split(string(out), "\n") {
				if rest, ok := strings.CutPrefix(line, "probe-result "); ok {
					_, err := fmt.Sscanf(rest, "hwm=%d elapsed=%d err=%q", &hwm, &ns, &msg)
					require.NoError(t, err, line)
					found = true
				}
			}
			require.True(t, found, "%s", out)
			assert.Contains(t, msg, p.want)
			limit := 2*size + 64<<20
			assert.LessOrEqual(t, hwm, limit, "peak memory %d bytes for %d bytes on disk", hwm, size)
			report = append(report, fmt.Sprintf("%-28s %6.1f ms  peak %5.1f MiB  (on disk %d KiB)", p.name, float64(ns)/1e6, float64(hwm)/(1<<20), size>>10))
		})
	}
	sort.Strings(report)
	t.Logf("hostile probes (default limits):\n%s", strings.Join(report, "\n"))
}

// A Loop whose scan outputs, gathered over its iterations, exceed the
// budget stops with an error naming it, however small each step is.
func TestLoopScanOutputsBudget(t *testing.T) {
	model := mkModel(13, graphParts{
		nodes: [][]byte{
			mkNode("Loop", []string{"M", ""}, []string{"trace"},
				mkAttrGraph("body", graphParts{
					nodes: [][]byte{
						mkNode("Identity", []string{"cond_in"}, []string{"cond_out"}),
						mkNode("Identity", []string{"i"}, []string{"scan"}),
					},
					inputs:  [][]byte{mkValueInfo("i", dtInt64), mkValueInfo("cond_in", dtBool)},
					outputs: [][]byte{mkValueInfo("cond_out", dtBool), mkValueInfo("scan", dtInt64)},
				})),
		},
		inputs:  [][]byte{mkValueInfo("M", dtInt64)},
		outputs: [][]byte{mkValueInfo("trace", dtInt64)},
	})
	m, err := Read(strings.NewReader(string(model)))
	require.NoError(t, err)
	s, err := m.NewSession(SessionOptions{MaxBytes: 1 << 10})
	require.NoError(t, err)
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"M": tensor.FromSlice([]int64{64}, []int{}...)})
	require.NoError(t, err, "64 steps of 8 bytes, 1 KiB stacked, fit")
	assert.Equal(t, int64(63), out["trace"].Int64s()[63])
	_, err = s.Run(context.Background(), map[string]*tensor.Tensor{"M": tensor.FromSlice([]int64{1 << 40}, []int{}...)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Loop node")
	assert.Contains(t, err.Error(), "scan outputs of 520 bytes, stacked, exceed the limit of 1024 bytes")
}

// Errors stay short whatever the model holds, and keep what they wrap.
func TestErrorsAreBounded(t *testing.T) {
	var nodes [][]byte
	for i := range 1000 {
		nodes = append(nodes, mkNode(fmt.Sprintf("NoSuchOp%04d%s", i, strings.Repeat("x", 200)), []string{"x"}, []string{fmt.Sprintf("y%d", i)}))
	}
	m, err := Read(strings.NewReader(string(mkModel(13, graphParts{
		nodes:   nodes,
		inputs:  [][]byte{mkValueInfo("x", dtFloat, 2)},
		outputs: [][]byte{mkValueInfo("y0", dtFloat, 2)},
	}))))
	require.NoError(t, err)
	_, err = m.NewSession(SessionOptions{})
	require.Error(t, err)
	assert.LessOrEqual(t, len(err.Error()), maxErrorLen+64)
	var ue *UnsupportedError
	require.ErrorAs(t, err, &ue)
	assert.Len(t, ue.Ops, 1000, "the error still lists every operator")
	assert.Contains(t, ue.Error(), "(1000 in all)")

	long := bounded(fmt.Errorf("wrapped: %w", context.Canceled))
	require.ErrorIs(t, long, context.Canceled)
	huge := bounded(fmt.Errorf("%s: %w", strings.Repeat("é", 5000), context.Canceled))
	require.ErrorIs(t, huge, context.Canceled)
	assert.Contains(t, huge.Error(), "... (10018 bytes in all)") // 5000 two-byte runes, ": ", "context canceled"
	assert.LessOrEqual(t, len(huge.Error()), maxErrorLen+64)
}

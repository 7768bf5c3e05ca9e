package onnx

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

// bagFeed is one set of inputs of an EmbeddingBag offsets export: 1-d ids,
// offsets and, for the weighted cases, per-sample weights.
type bagFeed struct {
	ids, offsets []int64
	weights      []float32
}

func (f bagFeed) tensors(weighted bool) []*tensor.Tensor {
	ts := []*tensor.Tensor{tensor.FromSlice(f.ids, len(f.ids)), tensor.FromSlice(f.offsets, len(f.offsets))}
	if weighted {
		ts = append(ts, tensor.FromSlice(f.weights, len(f.weights)))
	}
	return ts
}

// bagExportCases are the EmbeddingBag forms with offsets given as a graph
// input (input_0 ids, input_1 offsets, input_2 per-sample weights),
// exported with dynamic ids and bag counts.
func bagExportCases() []struct {
	name     string
	opt      nn.EmbeddingBagOptions
	weighted bool
} {
	return []struct {
		name     string
		opt      nn.EmbeddingBagOptions
		weighted bool
	}{
		{"Sum", nn.EmbeddingBagOptions{Mode: "sum"}, false},
		{"SumWeighted", nn.EmbeddingBagOptions{Mode: "sum"}, true},
		{"Mean", nn.EmbeddingBagOptions{Mode: "mean"}, false},
		{"Max", nn.EmbeddingBagOptions{Mode: "max"}, false},
		{"MeanPadding", nn.EmbeddingBagOptions{Mode: "mean", HasPaddingIdx: true, PaddingIdx: 2}, false},
		{"SumWeightedPaddingLast", nn.EmbeddingBagOptions{Mode: "sum", HasPaddingIdx: true, PaddingIdx: 2, IncludeLastOffset: true}, true},
		{"MaxLast", nn.EmbeddingBagOptions{Mode: "max", IncludeLastOffset: true}, false},
	}
}

// bagFeeds are traced (the first) and checked (all) inputs: a batch of one
// bag, empty bags, repeated padding ids, and ids past the last offset.
var bagFeeds = []bagFeed{
	{[]int64{1, 2, 3, 4, 5, 6, 7}, []int64{0, 2, 5}, []float32{1, 2, 3, 4, 5, 6, 7}},
	{[]int64{9}, []int64{0}, []float32{-0.5}},
	{[]int64{3, 2, 2, 8, 0, 1, 7, 2}, []int64{0, 0, 3, 3, 6, 8}, []float32{0.5, 1, 2, -1, 3, 0.25, 1.5, 2}},
	{[]int64{4, 4, 1, 6, 2, 9}, []int64{0, 1, 1, 5}, []float32{1, -2, 3, 0.5, 1, 2}},
}

func bagModel(opt nn.EmbeddingBagOptions, weighted bool) (*nn.EmbeddingBag, func(in []*autograd.Var) []*autograd.Var) {
	bag := nn.NewEmbeddingBag(tensor.NewGenerator(5), 10, 3, opt)
	return bag, func(in []*autograd.Var) []*autograd.Var {
		var w *tensor.Tensor
		if weighted {
			w = in[2].Value()
		}
		return []*autograd.Var{bag.Bag(in[0].Value(), in[1].Value(), w)}
	}
}

func bagExport(t *testing.T, name string, opt nn.EmbeddingBagOptions, weighted bool, opset int) ([]byte, func(in []*autograd.Var) []*autograd.Var) {
	t.Helper()
	bag, fn := bagModel(opt, weighted)
	dyn := map[string]map[int]string{"input_0": {0: "n"}, "input_1": {0: "bags"}, "input_2": {0: "n"}, "output_0": {0: "out_bags"}}
	var buf bytes.Buffer
	require.NoError(t, ExportFunc(fn, bag.NamedParameters(), nil, bagFeeds[0].tensors(weighted), &buf,
		ExportOptions{Opset: opset, DynamicAxes: dyn}), name)
	return buf.Bytes(), fn
}

// TestExportEmbeddingBagOffsets exports every case at opsets 13, 17 and 21
// and checks Ember's import of it on every feed; the opset-17 files go
// through onnx.checker when available.
func TestExportEmbeddingBagOffsets(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, opset := range []int{13, 17, 21} {
		for _, tc := range bagExportCases() {
			t.Run(tc.name+"/opset"+strconv.Itoa(opset), func(t *testing.T) {
				b, fn := bagExport(t, tc.name, tc.opt, tc.weighted, opset)
				if opset == DefaultExportOpset {
					path := filepath.Join(dir, tc.name+".onnx")
					require.NoError(t, os.WriteFile(path, b, 0o644))
					files = append(files, path)
				}
				for i, f := range bagFeeds {
					if tc.opt.IncludeLastOffset && len(f.offsets) < 2 {
						continue
					}
					ins := f.tensors(tc.weighted)
					vars := make([]*autograd.Var, len(ins))
					for j, x := range ins {
						vars[j] = autograd.New(x)
					}
					want := fn(vars)[0].Value()
					got := runExportedAll(t, b, ins, 1)[0]
					require.Equal(t, want.Shape(), got.Shape(), "feed %d", i)
					assertClose(t, want, got, 1e-5)
				}
			})
		}
	}
	checkWithONNX(t, files)
}

// TestExportEmbeddingBagOffsetsRefused checks the clear errors for offsets
// and per-sample weights computed in Go.
func TestExportEmbeddingBagOffsetsRefused(t *testing.T) {
	bag := nn.NewEmbeddingBag(tensor.NewGenerator(1), 10, 3, nn.EmbeddingBagOptions{Mode: "sum"})
	ids := tensor.FromSlice([]int64{1, 2, 3, 4, 5, 6, 7}, 7)
	cases := []struct {
		name string
		fn   func(in []*autograd.Var) []*autograd.Var
		want string
	}{
		{"OffsetsFromGo", func(in []*autograd.Var) []*autograd.Var {
			return []*autograd.Var{bag.Bag(in[0].Value(), tensor.FromSlice([]int64{0, 2, 5}, 3), nil)}
		}, "offsets"},
		{"WeightsFromGo", func(in []*autograd.Var) []*autograd.Var {
			return []*autograd.Var{bag.Bag(in[0].Value(), in[1].Value(), tensor.OnesLike(in[0].Value()).To(tensor.Float32))}
		}, "per-sample weights"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := ExportFunc(tc.fn, bag.NamedParameters(), nil, []*tensor.Tensor{ids, tensor.FromSlice([]int64{0, 2, 5}, 3)}, &buf, ExportOptions{})
			require.Error(t, err)
			require.Contains(t, err.Error(), `op "EmbeddingBag"`)
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), "neither an example input nor a buffer")
		})
	}
}

// TestExportEmbeddingBagOffsetsORT runs the opset-17 exports in ONNX
// Runtime on every feed and compares with Ember to 1e-4.
func TestExportEmbeddingBagOffsetsORT(t *testing.T) {
	if !ortAvailable(t) {
		t.Skip("node with onnxruntime-node not available")
	}
	dir := t.TempDir()
	var runs []ortRun
	var want []*tensor.Tensor
	for ci, tc := range bagExportCases() {
		b, fn := bagExport(t, tc.name, tc.opt, tc.weighted, 0)
		model := filepath.Join(dir, strconv.Itoa(ci)+".onnx")
		require.NoError(t, os.WriteFile(model, b, 0o644))
		for fi, f := range bagFeeds {
			if tc.opt.IncludeLastOffset && len(f.offsets) < 2 {
				continue
			}
			ins := f.tensors(tc.weighted)
			vars := make([]*autograd.Var, len(ins))
			run := ortRun{Model: model}
			for j, x := range ins {
				vars[j] = autograd.New(x)
				file := filepath.Join(dir, strconv.Itoa(ci)+"_"+strconv.Itoa(fi)+"_"+strconv.Itoa(j)+".bin")
				dt := writeRaw(t, file, x)
				run.Inputs = append(run.Inputs, ortValue{Name: "input_" + strconv.Itoa(j), DType: dt, Shape: x.Shape(), File: file})
			}
			run.Outputs = []ortValue{{Name: "output_0", File: filepath.Join(dir, strconv.Itoa(ci)+"_"+strconv.Itoa(fi)+"_y.bin")}}
			runs = append(runs, run)
			want = append(want, fn(vars)[0].Value())
		}
	}
	manifest := filepath.Join(dir, "runs.json")
	mb, err := json.Marshal(runs)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(manifest, mb, 0o644))
	cmd := exec.Command("node", "../internal/golden/gen/run_onnxruntime.js", manifest)
	cmd.Env = ortEnv()
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err)
	var got []ortRun
	require.NoError(t, json.Unmarshal(out, &got))
	require.Len(t, got, len(runs))
	for i, r := range got {
		raw, err := os.ReadFile(r.Outputs[0].File)
		require.NoError(t, err)
		vals := make([]float32, len(raw)/4)
		for j := range vals {
			vals[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
		}
		assertClose(t, want[i], tensor.FromSlice(vals, r.Outputs[0].Shape...), 1e-4)
	}
}

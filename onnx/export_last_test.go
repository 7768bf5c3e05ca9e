package onnx

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

// funcModule is a test module applying f, with sub-modules registered for
// their parameters.
type funcModule struct {
	nn.Base
	f func(x *autograd.Var) *autograd.Var
}

func (m *funcModule) Forward(x *autograd.Var) *autograd.Var { return m.f(x) }

func newFuncModule(f func(x *autograd.Var) *autograd.Var, subs map[string]nn.Module) *funcModule {
	m := &funcModule{f: f}
	for _, name := range []string{"a", "b"} {
		if s, ok := subs[name]; ok {
			m.RegisterModule(name, s)
		}
	}
	return m
}

// lastCases are the layers and ops mapped or first covered by
// export_last.go. Two-input layers (Bilinear, the Transformer decoders)
// read both inputs from one tensor so they fit the one-input tables.
func lastCases() []exportCase {
	return []exportCase{
		{"Roll", fixed(newFuncModule(func(x *autograd.Var) *autograd.Var { return x.Roll([]int{2, -1}, []int{1, -1}) }, nil)), randInput(4, 5)},
		{"CumProd", fixed(newFuncModule(func(x *autograd.Var) *autograd.Var { return x.CumProd(-1) }, nil)), randInput(3, 6)},
		{"CumProdMiddle", fixed(newFuncModule(func(x *autograd.Var) *autograd.Var { return x.CumProd(1) }, nil)), randInput(4, 2)},
		{"MaxUnpool2d", func(g *tensor.Generator) nn.Module {
			c := nn.NewConv2d(g, 2, 3, [2]int{3, 3}, tensor.Conv2dOptions{Padding: [2]int{1, 1}}, true)
			u := nn.NewMaxUnpool2d([2]int{2, 2}, [2]int{}, [2]int{})
			return newFuncModule(func(x *autograd.Var) *autograd.Var {
				y, idx := autograd.MaxPool2dWithIndices(c.Forward(x), tensor.Pool2dOptions{Kernel: [2]int{2, 2}})
				return u.Unpool(y.Relu(), idx).Tanh()
			}, map[string]nn.Module{"a": c})
		}, randInput(2, 6, 4)},
		{"MaxUnpool2dOverlapOtherPlane", fixed(newFuncModule(func(x *autograd.Var) *autograd.Var {
			y, idx := autograd.MaxPool2dWithIndices(x, tensor.Pool2dOptions{Kernel: [2]int{3, 3}, Stride: [2]int{1, 1}, Padding: [2]int{1, 1}})
			return autograd.MaxUnpool2d(y.MulScalar(2), idx, 5, 6)
		}, nil)), randInput(3, 4, 4)},
		{"Bilinear", func(g *tensor.Generator) nn.Module {
			b := nn.NewBilinear(g, 3, 4, 5, true)
			return newFuncModule(func(x *autograd.Var) *autograd.Var { return b.Forward2(x.Narrow(1, 0, 3), x.Narrow(1, 3, 4)) }, map[string]nn.Module{"a": b})
		}, randInput(7)},
		{"BilinearNoBias", func(g *tensor.Generator) nn.Module {
			b := nn.NewBilinear(g, 2, 2, 3, false)
			return newFuncModule(func(x *autograd.Var) *autograd.Var { return b.Forward2(x.Select(1, 0), x.Select(1, 1)) }, map[string]nn.Module{"a": b})
		}, randInput(2, 2)},
		{"TransformerDecoderLayer", func(g *tensor.Generator) nn.Module {
			l := nn.NewTransformerDecoderLayer(g, 8, 2, nn.TransformerOptions{DimFeedforward: 16, BatchFirst: true})
			return newFuncModule(func(x *autograd.Var) *autograd.Var {
				return l.Decode(x.Narrow(1, 0, 3), x.Narrow(1, 3, 2), nn.DecoderMasks{})
			}, map[string]nn.Module{"a": l})
		}, randInput(5, 8)},
		{"TransformerDecoderNormFirst", func(g *tensor.Generator) nn.Module {
			d := nn.NewTransformerDecoder(g, 2, 8, 4, nn.TransformerOptions{DimFeedforward: 12, BatchFirst: true, NormFirst: true, Activation: "gelu"}, true)
			return newFuncModule(func(x *autograd.Var) *autograd.Var {
				return d.Decode(x.Narrow(1, 0, 2), x.Narrow(1, 2, 3), nn.DecoderMasks{})
			}, map[string]nn.Module{"a": d})
		}, randInput(5, 8)},
	}
}

// TestExportLastRoundTrip exports each case of lastCases at opsets 13, 17
// and 21 with a dynamic batch axis and checks Ember's import of it at batch
// sizes 1 and 7; the opset-17 files go through onnx.checker when available.
func TestExportLastRoundTrip(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for _, opset := range []int{13, 17, 21} {
		for _, tc := range lastCases() {
			t.Run(tc.name+"/opset"+strconv.Itoa(opset), func(t *testing.T) {
				g := tensor.NewGenerator(3)
				m := tc.build(g)
				b := exportModule(t, m, tc.input(g, 7), opset)
				if opset == DefaultExportOpset {
					path := filepath.Join(dir, tc.name+".onnx")
					require.NoError(t, os.WriteFile(path, b, 0o644))
					files = append(files, path)
				}
				m.Train(false)
				for _, n := range []int{1, 7} {
					x := tc.input(g, n)
					want := m.Forward(autograd.New(x)).Value()
					assertClose(t, want, runExported(t, b, x), 1e-5)
				}
			})
		}
	}
	checkWithONNX(t, files)
}

// TestExportRollCumProdValues checks the exported Roll (flattened, several
// axes) and CumProd (exact, also with zeros and negatives) without dynamic
// axes against hand-computed values.
func TestExportRollCumProdValues(t *testing.T) {
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	cases := []struct {
		name string
		fn   func(x *autograd.Var) *autograd.Var
		want []float32
	}{
		{"RollFlat", func(x *autograd.Var) *autograd.Var { return x.Roll([]int{2}, nil) }, []float32{5, 6, 1, 2, 3, 4}},
		{"RollAxes", func(x *autograd.Var) *autograd.Var { return x.Roll([]int{1, -1}, []int{0, 1}) }, []float32{5, 6, 4, 2, 3, 1}},
		{"RollZero", func(x *autograd.Var) *autograd.Var { return x.Roll([]int{3}, []int{1}) }, []float32{1, 2, 3, 4, 5, 6}},
		{"CumProd", func(x *autograd.Var) *autograd.Var { return x.CumProd(1) }, []float32{1, 2, 6, 4, 20, 120}},
		{"CumProdZeroNeg", func(x *autograd.Var) *autograd.Var { return x.SubScalar(2).CumProd(1) }, []float32{-1, 0, 0, 2, 6, 24}},
		{"CumProdAxis0", func(x *autograd.Var) *autograd.Var { return x.CumProd(0) }, []float32{1, 2, 3, 4, 10, 18}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fn := func(in []*autograd.Var) []*autograd.Var { return []*autograd.Var{tc.fn(in[0])} }
			var buf bytes.Buffer
			require.NoError(t, ExportFunc(fn, nil, nil, []*tensor.Tensor{x}, &buf, ExportOptions{}))
			got := runExported(t, buf.Bytes(), x)
			require.Equal(t, tc.want, got.Float32s())
			require.Equal(t, tc.want, tc.fn(autograd.New(x)).Value().Float32s())
		})
	}
}

// TestExportBilinearTwoInputs exports nn.Bilinear and a Transformer decoder
// with ExportFunc on two graph inputs, both with a dynamic batch axis.
func TestExportBilinearTwoInputs(t *testing.T) {
	g := tensor.NewGenerator(8)
	bl := nn.NewBilinear(g, 3, 4, 2, true)
	dec := nn.NewTransformerDecoder(g, 2, 8, 2, nn.TransformerOptions{DimFeedforward: 16}, true)
	dec.Train(false)
	cases := []struct {
		name   string
		fn     func(in []*autograd.Var) []*autograd.Var
		params []nn.NamedParam
		shapes func(n int) [][]int
		dyn    map[string]map[int]string
	}{
		{"Bilinear", func(in []*autograd.Var) []*autograd.Var { return []*autograd.Var{bl.Forward2(in[0], in[1])} }, bl.NamedParameters(),
			func(n int) [][]int { return [][]int{{n, 3}, {n, 4}} },
			map[string]map[int]string{"input_0": {0: "batch"}, "input_1": {0: "batch"}, "output_0": {0: "batch"}}},
		{"TransformerDecoder", func(in []*autograd.Var) []*autograd.Var {
			return []*autograd.Var{dec.Decode(in[0], in[1], nn.DecoderMasks{})}
		}, dec.NamedParameters(),
			func(n int) [][]int { return [][]int{{3, n, 8}, {4, n, 8}} },
			map[string]map[int]string{"input_0": {1: "batch"}, "input_1": {1: "batch"}, "output_0": {1: "batch"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mk := func(n int) []*tensor.Tensor {
				var ts []*tensor.Tensor
				for _, s := range tc.shapes(n) {
					ts = append(ts, g.Randn(s))
				}
				return ts
			}
			var buf bytes.Buffer
			require.NoError(t, ExportFunc(tc.fn, tc.params, nil, mk(7), &buf, ExportOptions{DynamicAxes: tc.dyn}))
			for _, n := range []int{1, 7} {
				ins := mk(n)
				got := runExportedAll(t, buf.Bytes(), ins, 1)[0]
				want := tc.fn([]*autograd.Var{autograd.New(ins[0]), autograd.New(ins[1])})[0].Value()
				assertClose(t, want, got, 1e-5)
			}
			path := filepath.Join(t.TempDir(), tc.name+".onnx")
			require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
			checkWithONNX(t, []string{path})
		})
	}
}

// TestExportRefusesOutsideValues checks that values computed outside the
// traced graph, and the forms with no exact mapping, fail the export with
// an error naming the op and the reason instead of being baked in.
func TestExportRefusesOutsideValues(t *testing.T) {
	g := tensor.NewGenerator(6)
	emb := nn.NewEmbedding(g, 10, 4, nn.EmbeddingOptions{})
	bagNorm := nn.NewEmbeddingBag(g, 10, 4, nn.EmbeddingBagOptions{Mode: "sum", MaxNorm: 1})
	bag := nn.NewEmbeddingBag(g, 10, 4, nn.EmbeddingBagOptions{Mode: "sum"})
	ids := g.RandInt([]int{7, 5}, 0, 9)
	x := g.Randn([]int{7, 4})
	dyn := map[string]map[int]string{"input_0": {0: "batch"}, "output_0": {0: "batch"}}
	cases := []struct {
		name    string
		fn      func(in []*autograd.Var) []*autograd.Var
		params  []nn.NamedParam
		example *tensor.Tensor
		dyn     map[string]map[int]string
		want    []string
	}{
		{"EmbeddingIdsShiftedInGo", func(in []*autograd.Var) []*autograd.Var {
			return []*autograd.Var{emb.Forward(autograd.New(in[0].Value().AddScalar(1)))}
		}, emb.NamedParameters(), ids, dyn, []string{`op "Embedding"`, "computed outside the traced graph"}},
		{"EmbeddingIdsShiftedInGoStatic", func(in []*autograd.Var) []*autograd.Var {
			return []*autograd.Var{emb.Forward(autograd.New(in[0].Value().AddScalar(1)))}
		}, emb.NamedParameters(), ids, nil, []string{`op "Embedding"`, "computed outside the traced graph"}},
		{"EmbeddingBagIdsShiftedInGo", func(in []*autograd.Var) []*autograd.Var {
			return []*autograd.Var{bag.Forward(autograd.New(in[0].Value().AddScalar(1)))}
		}, bag.NamedParameters(), ids, dyn, []string{`op "EmbeddingBag"`, "computed outside the traced graph"}},
		{"EmbeddingBagMaxNorm", func(in []*autograd.Var) []*autograd.Var {
			return []*autograd.Var{bagNorm.Forward(in[0])}
		}, bagNorm.NamedParameters(), ids, dyn, []string{`op "EmbeddingBag"`, "max_norm"}},
		{"EmbeddingBagOffsets", func(in []*autograd.Var) []*autograd.Var {
			return []*autograd.Var{bag.Bag(in[0].Value(), tensor.FromSlice([]int64{0, 2, 5}, 3), nil)}
		}, bag.NamedParameters(), tensor.FromSlice([]int64{1, 2, 3, 4, 5, 6, 7}, 7), nil, []string{`op "EmbeddingBag"`, "offsets"}},
		{"EmbeddingBagPerSampleWeights", func(in []*autograd.Var) []*autograd.Var {
			return []*autograd.Var{bag.Bag(in[0].Value(), nil, tensor.OnesLike(in[0].Value()).To(tensor.Float32))}
		}, bag.NamedParameters(), ids, nil, []string{`op "EmbeddingBag"`, "per-sample weights"}},
		{"BatchConstantInput", func(in []*autograd.Var) []*autograd.Var {
			return []*autograd.Var{in[0].Add(autograd.New(in[0].Value().MulScalar(2)))}
		}, nil, x, dyn, []string{`op "Add"`, "traced batch size on axis 0", "computed outside the traced graph"}},
		{"BatchMask", func(in []*autograd.Var) []*autograd.Var {
			return []*autograd.Var{in[0].MaskedFill(in[0].Value().Gt(tensor.Scalar(0)), 0)}
		}, nil, x, dyn, []string{`op "MaskedFill"`, "traced batch size"}},
		{"GatherIndexFromData", func(in []*autograd.Var) []*autograd.Var {
			return []*autograd.Var{in[0].Gather(1, in[0].Value().ArgMax(1, true))}
		}, nil, x, dyn, []string{`op "Gather"`, "computed outside the traced graph"}},
		{"MaxUnpool2dIndicesFromGo", func(in []*autograd.Var) []*autograd.Var {
			y, idx := autograd.MaxPool2dWithIndices(in[0], tensor.Pool2dOptions{Kernel: [2]int{2, 2}})
			return []*autograd.Var{autograd.MaxUnpool2d(y, idx.Clone(), 4, 4)}
		}, nil, g.Randn([]int{7, 2, 4, 4}), dyn, []string{`op "MaxUnpool2d"`, "computed outside the traced graph"}},
		{"MaxUnpool2dSmallerPlane", func(in []*autograd.Var) []*autograd.Var {
			y, idx := autograd.MaxPool2dWithIndices(in[0], tensor.Pool2dOptions{Kernel: [2]int{1, 1}})
			return []*autograd.Var{autograd.MaxUnpool2d(y, idx, 3, 4)}
		}, nil, g.Randn([]int{7, 2, 1, 5}), dyn, []string{`op "MaxUnpool2d"`, "smaller than the input plane"}},
		{"CumProdBatchAxis", func(in []*autograd.Var) []*autograd.Var { return []*autograd.Var{in[0].CumProd(0)} },
			nil, x, dyn, []string{`op "CumProd"`, "axis 0 is dynamic"}},
		{"CumProdLong", func(in []*autograd.Var) []*autograd.Var { return []*autograd.Var{in[0].CumProd(1)} },
			nil, g.Randn([]int{2, 300}), nil, []string{`op "CumProd"`, "300 elements"}},
		{"RollBatchAxis", func(in []*autograd.Var) []*autograd.Var { return []*autograd.Var{in[0].Roll([]int{1}, []int{0})} },
			nil, x, dyn, []string{`op "Roll"`, "dynamic batch size"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ExportFunc(tc.fn, tc.params, nil, []*tensor.Tensor{tc.example}, &bytes.Buffer{}, ExportOptions{DynamicAxes: tc.dyn})
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

package onnx

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mkStringTensor encodes a STRING TensorProto in string_data.
func mkStringTensor(name string, dims []int64, v ...string) []byte {
	var b []byte
	for _, d := range dims {
		b = pbVarint(b, 1, d)
	}
	b = pbVarint(b, 2, dtString)
	for _, s := range v {
		b = pbString(b, 6, s)
	}
	return pbString(b, 8, name)
}

// stringModel carries strings through a graph: words = Concat(x, tail)
// with tail a string initializer, grid = Transpose(Reshape(words, [2, 2])),
// picked = Gather(grid, [1]) on axis 1, same = Equal(words, hello) with
// hello a Constant, nums = Cast(words) to FLOAT after Cast of numbers to
// STRING has made part of them, and n = Size(words).
func stringModel() []byte {
	return mkModel(17, graphParts{
		nodes: [][]byte{
			mkNode("Cast", []string{"f"}, []string{"fs"}, mkAttrInt("to", dtString)),
			mkNode("Concat", []string{"x", "tail"}, []string{"words"}, mkAttrInt("axis", 0)),
			mkNode("Reshape", []string{"words", "shape"}, []string{"square"}),
			mkNode("Transpose", []string{"square"}, []string{"grid"}),
			mkNode("Gather", []string{"grid", "one"}, []string{"picked"}, mkAttrInt("axis", 1)),
			mkNode("Constant", nil, []string{"hello"}, mkAttrStrings("value_strings", "hello")),
			mkNode("Equal", []string{"words", "hello"}, []string{"same"}),
			mkNode("Concat", []string{"fs", "tail"}, []string{"numbers"}, mkAttrInt("axis", 0)),
			mkNode("Cast", []string{"numbers"}, []string{"nums"}, mkAttrInt("to", dtFloat)),
			mkNode("Size", []string{"words"}, []string{"n"}),
		},
		inits: [][]byte{
			mkStringTensor("tail", []int64{2}, "1e400", "-INF"),
			mkInt64Tensor("shape", []int64{2}, 2, 2),
			mkInt64Tensor("one", []int64{1}, 1),
		},
		inputs: [][]byte{mkValueInfo("x", dtString, 2), mkValueInfo("f", dtFloat, -1)},
		outputs: [][]byte{
			mkValueInfoAnyShape("grid", dtString), mkValueInfoAnyShape("picked", dtString),
			mkValueInfoAnyShape("same", dtBool), mkValueInfoAnyShape("nums", dtFloat),
			mkValueInfoAnyShape("n", dtInt64),
		},
	})
}

func TestStringsThroughGraph(t *testing.T) {
	s := newSession(t, stringModel())
	tail, ok := s.model.InitializerStrings("tail")
	require.True(t, ok)
	assert.Equal(t, Strings{Shape: []int{2}, Data: []string{"1e400", "-INF"}}, tail)
	assert.Nil(t, s.model.Initializer("tail"), "Initializer returns numeric initializers only")

	out, err := s.RunValues(context.Background(), map[string]any{
		"x": Strings{Shape: []int{2}, Data: []string{"hello", "wörld"}},
		"f": tensor.FromSlice([]float32{0.1, -2.5}),
	})
	require.NoError(t, err)
	// words = [hello wörld 1e400 -INF] as [[hello wörld] [1e400 -INF]], transposed.
	assert.Equal(t, Strings{Shape: []int{2, 2}, Data: []string{"hello", "1e400", "wörld", "-INF"}}, out["grid"])
	assert.Equal(t, Strings{Shape: []int{2, 1}, Data: []string{"1e400", "-INF"}}, out["picked"])
	assert.Equal(t, []bool{true, false, false, false}, out["same"].(*tensor.Tensor).Bools())
	nums := out["nums"].(*tensor.Tensor)
	require.Equal(t, tensor.Float32, nums.DType())
	assert.Equal(t, []float32{0.1, -2.5, float32(math.Inf(1)), float32(math.Inf(-1))}, nums.Float32s())
	assert.Equal(t, []int64{4}, out["n"].(*tensor.Tensor).Int64s())

	// A second run gets its own strings.
	out, err = s.RunValues(context.Background(), map[string]any{
		"x": Strings{Shape: []int{2}, Data: []string{"", "hello"}},
		"f": tensor.FromSlice([]float32{}),
	})
	require.NoError(t, err)
	assert.Equal(t, Strings{Shape: []int{2, 2}, Data: []string{"", "1e400", "hello", "-INF"}}, out["grid"])
	assert.Equal(t, []bool{false, true, false, false}, out["same"].(*tensor.Tensor).Bools())
}

func TestStringsRefused(t *testing.T) {
	s := newSession(t, stringModel())
	ctx := context.Background()
	x := tensor.FromSlice([]float32{1, 2})
	_, err := s.Run(ctx, map[string]*tensor.Tensor{"x": x, "f": x})
	require.ErrorContains(t, err, "RunValues")
	for _, tc := range []struct {
		name string
		x    any
		want string
	}{
		{"short data", Strings{Shape: []int{2}, Data: []string{"a"}}, "holds 1 strings, want 2"},
		{"wrong rank", Strings{Shape: []int{1, 2}, Data: []string{"a", "b"}}, "rank"},
		{"wrong dim", Strings{Shape: []int{3}, Data: []string{"a", "b", "c"}}, "axis 0 must be 2"},
		{"negative dim", Strings{Shape: []int{-1}}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.RunValues(ctx, map[string]any{"x": tc.x, "f": x})
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err = s.RunValues(ctx, map[string]any{"x": Strings{Shape: []int{2}, Data: []string{"a", "b"}}, "f": Strings{Shape: []int{0}}})
	require.ErrorContains(t, err, "the model wants a tensor of FLOAT")

	// A string output refused by Run; strings inside with numbers outside run.
	out := mkModel(17, graphParts{
		nodes:   [][]byte{mkNode("Cast", []string{"f"}, []string{"s"}, mkAttrInt("to", dtString))},
		inputs:  [][]byte{mkValueInfo("f", dtFloat, 1)},
		outputs: [][]byte{mkValueInfoAnyShape("s", dtString)},
	})
	_, err = newSession(t, out).Run(ctx, map[string]*tensor.Tensor{"f": tensor.FromSlice([]float32{1})})
	require.ErrorContains(t, err, "string tensor: run the model with RunValues")
	inside := mkModel(17, graphParts{
		nodes: [][]byte{
			mkNode("Cast", []string{"f"}, []string{"s"}, mkAttrInt("to", dtString)),
			mkNode("Cast", []string{"s"}, []string{"g"}, mkAttrInt("to", dtInt32)),
		},
		inputs:  [][]byte{mkValueInfo("f", dtFloat, 2)},
		outputs: [][]byte{mkValueInfoAnyShape("g", dtInt32)},
	})
	got, err := newSession(t, inside).Run(ctx, map[string]*tensor.Tensor{"f": tensor.FromSlice([]float32{-7, 12.75})})
	require.NoError(t, err)
	assert.Equal(t, []int64{-7, 12}, got["g"].Int64s())

	// Operators without string support fail at load, naming the node.
	for _, tc := range []struct {
		name string
		node []byte
		want string
	}{
		{"Add", mkNode("Add", []string{"s", "s"}, []string{"y"}), "does not take string tensors"},
		{"Gather indices", mkNode("Gather", []string{"i", "s"}, []string{"y"}), "this input cannot be"},
		{"Equal mixed", mkNode("Equal", []string{"s", "i"}, []string{"y"}), "compares a string tensor with a number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Read(bytes.NewReader(mkModel(17, graphParts{
				nodes:   [][]byte{tc.node},
				inits:   [][]byte{mkStringTensor("s", []int64{2}, "a", "b"), mkInt64Tensor("i", []int64{2}, 0, 1)},
				outputs: [][]byte{mkValueInfoAnyShape("y", dtFloat)},
			})))
			require.NoError(t, err)
			_, err = m.NewSession(SessionOptions{})
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestFormatStrings(t *testing.T) {
	for _, tc := range []struct {
		name string
		x    *tensor.Tensor
		want []string
	}{
		{"float32 shortest", tensor.FromSlice([]float32{0.9767611, 0.039187793, -2.5, 1e20, float32(math.Copysign(0, -1))}),
			[]string{"0.9767611", "0.039187793", "-2.5", "100000000000000000000", "-0"}},
		{"float specials", tensor.FromSlice([]float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}),
			[]string{"NaN", "INF", "-INF"}},
		{"float64", tensor.FromSlice([]float64{0.1, 1.0 / 3}), []string{"0.1", "0.3333333333333333"}},
		{"float16", tensor.FromSlice([]float32{0.5, 1024}).To(tensor.Float16), []string{"0.5", "1024"}},
		{"int8", tensor.FromSlice([]int64{-128, 0, 127}).To(tensor.Int8), []string{"-128", "0", "127"}},
		{"int64", tensor.FromSlice([]int64{math.MinInt64}), []string{"-9223372036854775808"}},
		{"uint64", tensor.FromSlice([]uint64{math.MaxUint64}), []string{"18446744073709551615"}},
		{"bool", tensor.FromSlice([]bool{true, false}), []string{"True", "False"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := formatTensor(tc.x)
			assert.Equal(t, tc.want, got.Data)
			assert.Equal(t, tc.x.Shape(), got.Shape)
		})
	}
}

func TestParseStrings(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, tc := range []struct {
		name string
		in   []string
		dt   tensor.DType
		want []float64
		err  string
	}{
		{"floats", []string{"3.14", " 1000 ", "1e-5", "1E8", "-0.5"}, tensor.Float32, []float64{float64(float32(3.14)), 1000, float64(float32(1e-5)), 1e8, -0.5}, ""},
		{"special literals any case", []string{"INF", "+inf", "-INF", "NaN", "nan", "-Infinity"}, tensor.Float64, []float64{inf, inf, -inf, nan, nan, -inf}, ""},
		{"overflow is infinite", []string{"1e400", "-1e40"}, tensor.Float32, []float64{inf, -inf}, ""},
		{"float64 range", []string{"1e300", "1e400"}, tensor.Float64, []float64{1e300, inf}, ""},
		{"garbage", []string{"1", "Hello World!"}, tensor.Float32, nil, `"Hello World!" is not a number`},
		{"empty string", []string{""}, tensor.Float32, nil, "is not a number"},
		{"underscores", []string{"1_000"}, tensor.Float64, nil, "is not a number"},
		{"ints truncate", []string{"100.5", "-7", "-2.9", "1e3"}, tensor.Int32, []float64{100, -7, -2, 1000}, ""},
		{"int8 range", []string{"127", "128"}, tensor.Int8, nil, `"128" is out of the range of int8`},
		{"int nan", []string{"NaN"}, tensor.Int64, nil, "out of the range"},
		{"uint8 negative", []string{"-1"}, tensor.Uint8, nil, "out of the range"},
		{"bools", []string{"True", "false", "0", "2.5", "1"}, tensor.Bool, []float64{1, 0, 0, 1, 1}, ""},
		{"bfloat16", []string{"1.5", "-INF"}, tensor.BFloat16, []float64{1.5, -inf}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStrings(Strings{Shape: []int{len(tc.in)}, Data: tc.in}, tc.dt)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.dt, got.DType())
			g := got.Float64s()
			require.Len(t, g, len(tc.want))
			for i, w := range tc.want {
				if math.IsNaN(w) {
					assert.True(t, math.IsNaN(g[i]), "element %d: %v", i, g[i])
					continue
				}
				assert.Equal(t, w, g[i], "element %d", i)
			}
		})
	}
	// Integers beyond 2^53 stay exact.
	got, err := parseStrings(Strings{Shape: []int{2}, Data: []string{"9223372036854775807", "-9007199254740993"}}, tensor.Int64)
	require.NoError(t, err)
	assert.Equal(t, []int64{math.MaxInt64, -9007199254740993}, got.Int64s())
	got, err = parseStrings(Strings{Shape: []int{1}, Data: []string{"18446744073709551615"}}, tensor.Uint64)
	require.NoError(t, err)
	assert.Equal(t, []uint64{math.MaxUint64}, got.Uint64s())
	_, err = parseStrings(Strings{Shape: []int{1}, Data: []string{"1e20"}}, tensor.Int64)
	require.ErrorContains(t, err, "out of the range")
}

// normalizerModel is y = StringNormalizer(x) with the given attributes.
func normalizerModel(rank int, attrs ...[]byte) []byte {
	dims := []int64{-1}
	if rank == 2 {
		dims = []int64{1, -1}
	}
	return mkModel(17, graphParts{
		nodes:   [][]byte{mkNode("StringNormalizer", []string{"x"}, []string{"y"}, attrs...)},
		inputs:  [][]byte{mkValueInfo("x", dtString, dims...)},
		outputs: [][]byte{mkValueInfoAnyShape("y", dtString)},
	})
}

func TestStringNormalizer(t *testing.T) {
	words := []string{"Monday", "monday", "", "Émile", "straße", "istanbul"}
	for _, tc := range []struct {
		name  string
		rank  int
		in    []string
		attrs [][]byte
		want  Strings
	}{
		{"no attributes", 1, words, nil, Strings{Shape: []int{6}, Data: words}},
		{"lower", 1, words, [][]byte{mkAttrString("case_change_action", "LOWER")},
			Strings{Shape: []int{6}, Data: []string{"monday", "monday", "", "émile", "straße", "istanbul"}}},
		{"upper", 1, words, [][]byte{mkAttrString("case_change_action", "UPPER")},
			Strings{Shape: []int{6}, Data: []string{"MONDAY", "MONDAY", "", "ÉMILE", "STRAßE", "ISTANBUL"}}},
		{"stopwords case-insensitive by default", 1, words, [][]byte{mkAttrStrings("stopwords", "MONDAY", "ÉMILE")},
			Strings{Shape: []int{3}, Data: []string{"", "straße", "istanbul"}}},
		{"stopwords case-sensitive", 1, words, [][]byte{mkAttrStrings("stopwords", "monday", ""), mkAttrInt("is_case_sensitive", 1)},
			Strings{Shape: []int{4}, Data: []string{"Monday", "Émile", "straße", "istanbul"}}},
		{"all removed, 1-d", 1, []string{"a", "A"}, [][]byte{mkAttrStrings("stopwords", "a")},
			Strings{Shape: []int{1}, Data: []string{""}}},
		{"all removed, 2-d", 2, []string{"a"}, [][]byte{mkAttrStrings("stopwords", "a")},
			Strings{Shape: []int{1, 1}, Data: []string{""}}},
		{"2-d upper", 2, []string{"x", "y"}, [][]byte{mkAttrString("case_change_action", "UPPER")},
			Strings{Shape: []int{1, 2}, Data: []string{"X", "Y"}}},
		{"turkish locale", 1, []string{"istanbul", "IŞIK"}, [][]byte{mkAttrString("case_change_action", "UPPER"), mkAttrString("locale", "tr_TR")},
			Strings{Shape: []int{2}, Data: []string{"İSTANBUL", "IŞIK"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t, normalizerModel(tc.rank, tc.attrs...))
			shape := []int{len(tc.in)}
			if tc.rank == 2 {
				shape = []int{1, len(tc.in)}
			}
			out, err := s.RunValues(context.Background(), map[string]any{"x": Strings{Shape: shape, Data: tc.in}})
			require.NoError(t, err)
			assert.Equal(t, tc.want, out["y"])
		})
	}
	s := newSession(t, normalizerModel(2, mkAttrString("case_change_action", "TITLE")))
	_, err := s.RunValues(context.Background(), map[string]any{"x": Strings{Shape: []int{1, 1}, Data: []string{"a"}}})
	require.ErrorContains(t, err, "case_change_action \"TITLE\"")
	s = newSession(t, normalizerModel(2))
	out, err := s.RunValues(context.Background(), map[string]any{"x": Strings{Shape: []int{1, 0}}})
	require.NoError(t, err)
	assert.Equal(t, Strings{Shape: []int{1, 1}, Data: []string{""}}, out["y"])
	_, err = s.RunValues(context.Background(), map[string]any{"x": Strings{Shape: []int{2, 1}, Data: []string{"a", "b"}}})
	require.ErrorContains(t, err, "axis 0 must be 1")
}

func TestStringCarriers(t *testing.T) {
	x := Strings{Shape: []int{2, 3}, Data: []string{"a", "b", "c", "d", "é", ""}}
	for _, tc := range []struct {
		name  string
		nodes [][]byte
		want  Strings
	}{
		{"Identity", [][]byte{mkNode("Identity", []string{"x"}, []string{"y"})}, x},
		{"Flatten", [][]byte{mkNode("Flatten", []string{"x"}, []string{"y"}, mkAttrInt("axis", 0))},
			Strings{Shape: []int{1, 6}, Data: x.Data}},
		{"Unsqueeze then Squeeze", [][]byte{
			mkNode("Unsqueeze", []string{"x", "ax"}, []string{"u"}),
			mkNode("Squeeze", []string{"u", "ax"}, []string{"y"}),
		}, x},
		{"Unsqueeze", [][]byte{mkNode("Unsqueeze", []string{"x", "ax"}, []string{"y"})},
			Strings{Shape: []int{1, 2, 3}, Data: x.Data}},
		{"Slice", [][]byte{mkNode("Slice", []string{"x", "one", "three", "one"}, []string{"y"})},
			Strings{Shape: []int{2, 2}, Data: []string{"b", "c", "é", ""}}},
		{"Transpose", [][]byte{mkNode("Transpose", []string{"x"}, []string{"y"})},
			Strings{Shape: []int{3, 2}, Data: []string{"a", "d", "b", "é", "c", ""}}},
		{"Concat with itself", [][]byte{mkNode("Concat", []string{"x", "x"}, []string{"y"}, mkAttrInt("axis", 1))},
			Strings{Shape: []int{2, 6}, Data: []string{"a", "b", "c", "a", "b", "c", "d", "é", "", "d", "é", ""}}},
		{"Gather negative index", [][]byte{mkNode("Gather", []string{"x", "minus"}, []string{"y"})},
			Strings{Shape: []int{1, 3}, Data: []string{"d", "é", ""}}},
	} {
		for _, opts := range []SessionOptions{{}, {DisableOptimizations: true, DisableConstantFolding: true}} {
			t.Run(tc.name, func(t *testing.T) {
				m, err := Read(bytes.NewReader(mkModel(17, graphParts{
					nodes: tc.nodes,
					inits: [][]byte{
						mkInt64Tensor("ax", []int64{1}, 0), mkInt64Tensor("one", []int64{1}, 1),
						mkInt64Tensor("three", []int64{1}, 3), mkInt64Tensor("minus", []int64{1}, -1),
					},
					inputs:  [][]byte{mkValueInfo("x", dtString, 2, 3)},
					outputs: [][]byte{mkValueInfoAnyShape("y", dtString)},
				})))
				require.NoError(t, err)
				s, err := m.NewSession(opts)
				require.NoError(t, err)
				out, err := s.RunValues(context.Background(), map[string]any{"x": x})
				require.NoError(t, err)
				assert.Equal(t, tc.want, out["y"])
			})
		}
	}
}

func TestStringConstantsAndCastLike(t *testing.T) {
	s := newSession(t, mkModel(17, graphParts{
		nodes: [][]byte{
			mkNode("Constant", nil, []string{"word"}, mkAttrTensor("value", mkStringTensor("", []int64{2}, "2.5", "-1e-3"))),
			mkNode("CastLike", []string{"word", "f"}, []string{"num"}),
			mkNode("CastLike", []string{"f", "word"}, []string{"back"}),
			mkNode("Shape", []string{"word"}, []string{"shape"}),
		},
		inputs:  [][]byte{mkValueInfo("f", dtFloat, 2)},
		outputs: [][]byte{mkValueInfoAnyShape("num", dtFloat), mkValueInfoAnyShape("back", dtString), mkValueInfoAnyShape("shape", dtInt64)},
	}))
	out, err := s.RunValues(context.Background(), map[string]any{"f": tensor.FromSlice([]float32{1e-7, 123456.5})})
	require.NoError(t, err)
	assert.Equal(t, []float32{2.5, -1e-3}, out["num"].(*tensor.Tensor).Float32s())
	assert.Equal(t, Strings{Shape: []int{2}, Data: []string{"0.0000001", "123456.5"}}, out["back"])
	assert.Equal(t, []int64{2}, out["shape"].(*tensor.Tensor).Int64s())
}

func TestTfIdfVectorizerStrings(t *testing.T) {
	model := func(x []byte, pool []byte) []byte {
		return mkModel(17, graphParts{
			nodes: [][]byte{mkNode("TfIdfVectorizer", []string{"x"}, []string{"y"},
				mkAttrString("mode", "TF"), mkAttrInt("min_gram_length", 1), mkAttrInt("max_gram_length", 2),
				mkAttrInt("max_skip_count", 0), mkAttrInts("ngram_counts", 0, 2), mkAttrInts("ngram_indexes", 0, 1, 2), pool)},
			inputs:  [][]byte{x},
			outputs: [][]byte{mkValueInfoAnyShape("y", dtFloat)},
		})
	}
	// Unigrams a and b, bigram (a, c); "z" is in no n-gram.
	s := newSession(t, model(mkValueInfo("x", dtString, 2, 3), mkAttrStrings("pool_strings", "a", "b", "a", "c")))
	out, err := s.RunValues(context.Background(), map[string]any{"x": Strings{Shape: []int{2, 3}, Data: []string{"a", "c", "b", "a", "c", "z"}}})
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 1, 1, 1, 0, 1}, out["y"].(*tensor.Tensor).Float32s())
	ints := newSession(t, model(mkValueInfo("x", dtInt64, 2, 3), mkAttrInts("pool_int64s", 0, 1, 0, 2)))
	want, err := ints.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.FromSlice([]int64{0, 2, 1, 0, 2, 9}, 2, 3)})
	require.NoError(t, err)
	assert.Equal(t, want["y"].Float32s(), out["y"].(*tensor.Tensor).Float32s(), "same counts as the integer pool")
}

package onnx

import (
	"context"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func tfidfSession(t *testing.T, attrs ...[]byte) *Session {
	t.Helper()
	return newSession(t, mkModel(13, graphParts{
		nodes:   [][]byte{mkNode("TfIdfVectorizer", []string{"x"}, []string{"y"}, attrs...)},
		inputs:  [][]byte{mkValueInfoAnyShape("x", dtInt64)},
		outputs: [][]byte{mkValueInfoAnyShape("y", dtFloat)},
	}))
}

func TestTfIdfVectorizerWeights(t *testing.T) {
	// Pool: unigrams 2, 3; bigrams (2, 3), (3, 3); columns 3, 0, 1, 2.
	pool := [][]byte{
		mkAttrInt("min_gram_length", 1), mkAttrInt("max_gram_length", 2), mkAttrInt("max_skip_count", 1),
		mkAttrInts("ngram_counts", 0, 2), mkAttrInts("ngram_indexes", 3, 0, 1, 2),
		mkAttrInts("pool_int64s", 2, 3, 2, 3, 3, 3),
		mkAttrFloats("weights", 0.5, 2, 4, 8),
	}
	x := tensor.FromSlice([]int64{2, 3, 3, 9, 2}, 1, 5)
	// Counts: unigram 2 twice, 3 twice; bigram (2,3) at skip 0 (positions
	// 0,1) and skip 1 (0,2); (3,3) at skip 0 (1,2). By column: 3 → 2 (unigram
	// 2, weight 0.5), 0 → 2 (unigram 3, weight 2), 1 → 2 (bigram (2,3),
	// weight 4), 2 → 1 (bigram (3,3), weight 8).
	for _, tc := range []struct {
		mode string
		want []float32
	}{
		{"TF", []float32{2, 2, 1, 2}},
		{"IDF", []float32{2, 4, 8, 0.5}},
		{"TFIDF", []float32{4, 8, 8, 1}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			s := tfidfSession(t, append(pool, mkAttrString("mode", tc.mode))...)
			out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": x})
			require.NoError(t, err)
			require.Equal(t, []int{1, 4}, out["y"].Shape())
			assert.Equal(t, tc.want, out["y"].Float32s())
		})
	}
}

func TestTfIdfVectorizerRejectsBadAttributes(t *testing.T) {
	base := func(extra ...[]byte) [][]byte {
		return append([][]byte{mkAttrString("mode", "TF"), mkAttrInt("min_gram_length", 1), mkAttrInt("max_gram_length", 1)}, extra...)
	}
	for _, tc := range []struct {
		name  string
		attrs [][]byte
		msg   string
	}{
		{"strings", base(mkAttrInts("ngram_counts", 0), mkAttrInts("ngram_indexes", 0), mkAttrStrings("pool_strings", "a")), "pool_strings needs string tensors"},
		{"split", base(mkAttrInts("ngram_counts", 0, 1), mkAttrInts("ngram_indexes", 0, 1), mkAttrInts("pool_int64s", 1, 2, 3, 4)), "do not split a pool of 4"},
		{"indexes", base(mkAttrInts("ngram_counts", 0), mkAttrInts("ngram_indexes", 0), mkAttrInts("pool_int64s", 1, 2)), "1 ngram_indexes for 2 n-grams"},
		{"lengths", [][]byte{mkAttrString("mode", "TF"), mkAttrInt("min_gram_length", 2), mkAttrInt("max_gram_length", 1)}, "gram lengths 2 to 1"},
		{"mode", [][]byte{mkAttrString("mode", "XX"), mkAttrInt("min_gram_length", 1), mkAttrInt("max_gram_length", 1), mkAttrInts("ngram_counts", 0), mkAttrInts("ngram_indexes", 0), mkAttrInts("pool_int64s", 1)}, `mode "XX"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tfidfSession(t, tc.attrs...)
			_, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.FromSlice([]int64{1, 2, 3})})
			require.ErrorContains(t, err, tc.msg)
		})
	}
}

func TestTfIdfVectorizerBoundsHostileLengths(t *testing.T) {
	// A gram length or skip count far beyond the pool and the row counts
	// what a sane one would, without sizing anything by it.
	s := tfidfSession(t, mkAttrString("mode", "TF"), mkAttrInt("min_gram_length", 1), mkAttrInt("max_gram_length", 1<<60),
		mkAttrInt("max_skip_count", 1<<60), mkAttrInts("ngram_counts", 0, 1), mkAttrInts("ngram_indexes", 0, 1), mkAttrInts("pool_int64s", 1, 1, 3))
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.FromSlice([]int64{1, 2, 3})})
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 1}, out["y"].Float32s(), "unigram 1 once, bigram (1, 3) at skip 1")
}

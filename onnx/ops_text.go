package onnx

import (
	"encoding/binary"
	"fmt"

	"github.com/emberml/ember/tensor"
)

// Text featurization over integer token ids; a string input with
// pool_strings is mapped to ids by opTfIdfStrings (strings_ops.go).

func textOps() opTable {
	return opTable{
		"TfIdfVectorizer": {{since: 9, impl: opTfIdfVectorizer}},
	}
}

// ngramPool is TfIdfVectorizer's pool: each n-gram (its tokens encoded as
// the map key) maps to its position in the pool, which picks its weight,
// and to the output column it counts into.
type ngramPool struct {
	index          map[string]int // n-gram key → pool position
	column         []int          // pool position → output column
	width          int            // output columns: max(ngram_indexes)+1
	minLen, maxLen int
	maxSkip        int
}

// ngramKey encodes tokens as a map key.
func ngramKey(buf []byte, tokens []int64) []byte {
	buf = buf[:0]
	for _, t := range tokens {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(t))
	}
	return buf
}

// newNgramPool reads and checks the pool attributes.
func (n *node) newNgramPool() (*ngramPool, error) {
	if n.has("pool_strings") {
		return nil, fmt.Errorf("onnx: %v: pool_strings needs string tensors as input; token ids go with pool_int64s", n)
	}
	p := &ngramPool{
		minLen:  int(n.attrInt("min_gram_length", 0)),
		maxLen:  int(n.attrInt("max_gram_length", 0)),
		maxSkip: int(n.attrInt("max_skip_count", 0)),
		index:   map[string]int{},
	}
	if p.minLen < 1 || p.maxLen < p.minLen || p.maxSkip < 0 {
		return nil, fmt.Errorf("onnx: %v: gram lengths %d to %d and max_skip_count %d are invalid", n, p.minLen, p.maxLen, p.maxSkip)
	}
	pool, starts, indexes := n.attrInts("pool_int64s"), n.attrInts("ngram_counts"), n.attrInts("ngram_indexes")
	var key []byte
	for i, start := range starts {
		end := int64(len(pool))
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		size := int64(i + 1)
		if start < 0 || end < start || end > int64(len(pool)) || (end-start)%size != 0 {
			return nil, fmt.Errorf("onnx: %v: ngram_counts %v do not split a pool of %d into whole %d-grams", n, starts, len(pool), size)
		}
		for g := start; g < end; g += size {
			key = ngramKey(key, pool[g:g+size])
			if _, dup := p.index[string(key)]; !dup {
				p.index[string(key)] = len(p.column)
			}
			p.column = append(p.column, -1) // set from ngram_indexes below
		}
	}
	// The pool holds no n-gram longer than len(starts) tokens, so a longer
	// max_gram_length counts nothing more (and must not size buffers).
	p.maxLen = min(p.maxLen, len(starts))
	if len(indexes) != len(p.column) {
		return nil, fmt.Errorf("onnx: %v: %d ngram_indexes for %d n-grams in the pool", n, len(indexes), len(p.column))
	}
	for k, c := range indexes {
		if c < 0 || c >= n.maxElements {
			return nil, fmt.Errorf("onnx: %v: ngram index %d out of range", n, c)
		}
		p.column[k] = int(c)
		p.width = max(p.width, int(c)+1)
	}
	return p, nil
}

// count adds to counts (one row of output columns) the pool n-grams of
// row: unigrams once per position, longer n-grams once for each skip
// distance 0..maxSkip at which their tokens occur.
func (p *ngramPool) count(row []int64, counts []float64) {
	var key []byte
	gram := make([]int64, 0, p.maxLen)
	for size := p.minLen; size <= p.maxLen; size++ {
		skips := min(p.maxSkip, len(row)) // longer steps fit no n-gram in the row
		if size == 1 {
			skips = 0
		}
		for skip := 0; skip <= skips; skip++ {
			step := skip + 1
			for start := 0; start+(size-1)*step < len(row); start++ {
				gram = gram[:0]
				for j := range size {
					gram = append(gram, row[start+j*step])
				}
				key = ngramKey(key, gram)
				if k, ok := p.index[string(key)]; ok {
					counts[p.column[k]]++
				}
			}
		}
	}
}

// opTfIdfVectorizer counts the pool's n-grams in each row of X ([C] or
// [N, C] token ids) and weighs the counts: TF the counts, IDF the weight
// of each n-gram present, TFIDF count × weight (weights default to 1).
func opTfIdfVectorizer(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	if dt := x.DType(); dt != tensor.Int64 && dt != tensor.Int32 {
		return nil, fmt.Errorf("onnx: %v: input dtype %s, want int32 or int64 token ids", n, dt)
	}
	pool, err := n.newNgramPool()
	if err != nil {
		return nil, err
	}
	mode := n.attrString("mode", "")
	if mode != "TF" && mode != "IDF" && mode != "TFIDF" {
		return nil, fmt.Errorf("onnx: %v: mode %q, want TF, IDF or TFIDF", n, mode)
	}
	weights := n.attrFloats("weights")
	if weights != nil && len(weights) != len(pool.column) {
		return nil, fmt.Errorf("onnx: %v: %d weights for %d n-grams", n, len(weights), len(pool.column))
	}
	rows, cols := 1, x.Numel()
	outShape := []int{pool.width}
	switch x.Dim() {
	case 1:
	case 2:
		rows, cols = x.Shape()[0], x.Shape()[1]
		outShape = []int{rows, pool.width}
	default:
		return nil, fmt.Errorf("onnx: %v: input %v must be [C] or [N, C]", n, x.Shape())
	}
	if err := n.checkShape(outShape, tensor.Float64); err != nil {
		return nil, err
	}
	ids := x.Int64s()
	out := make([]float64, rows*pool.width)
	// weight per output column; columns no n-gram maps to keep weight 1.
	colWeight := make([]float64, pool.width)
	for c := range colWeight {
		colWeight[c] = 1
	}
	for k, w := range weights {
		colWeight[pool.column[k]] = float64(w)
	}
	for r := range rows {
		counts := out[r*pool.width : (r+1)*pool.width]
		pool.count(ids[r*cols:(r+1)*cols], counts)
		for c, v := range counts {
			switch {
			case mode == "IDF" && v > 0:
				counts[c] = colWeight[c]
			case mode == "TFIDF":
				counts[c] = v * colWeight[c]
			}
		}
	}
	return one(tensor.FromSlice(out, outShape...).To(tensor.Float32))
}

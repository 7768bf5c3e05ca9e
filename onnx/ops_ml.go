package onnx

import (
	"fmt"
	"math"
	"strconv"

	"github.com/emberml/ember/tensor"
)

// Operators of the ai.onnx.ml domain: LabelEncoder (opsets 2 to 4),
// TreeEnsemble 5, ArrayFeatureExtractor and Binarizer.

// mlOps registers them.
func mlOps() opTable {
	return opTable{
		"ai.onnx.ml.LabelEncoder":          {{since: 2, impl: withStrings(nil, opLabelEncoder), stateful: true}},
		"ai.onnx.ml.TreeEnsemble":          {{since: 5, impl: opTreeEnsemble}},
		"ai.onnx.ml.ArrayFeatureExtractor": {{since: 1, impl: opArrayFeatureExtractor}},
		"ai.onnx.ml.Binarizer":             {{since: 1, impl: opBinarizer}},
	}
}

// labelKey spells a key or input value for LabelEncoder's lookup: strings
// as themselves, integers and floats by value (every NaN alike, as the
// operator matches a NaN key).
func labelKey(kind byte, s string, i int64, f float64) string {
	switch kind {
	case 's':
		return "s" + s
	case 'i':
		return "i" + strconv.FormatInt(i, 10)
	}
	if math.IsNaN(f) {
		return "fNaN"
	}
	return "f" + strconv.FormatFloat(f, 'g', -1, 64)
}

// labelList is one of LabelEncoder's key, value or default lists: strings,
// or numbers (with the dtype they come in).
type labelList struct {
	strs    []string
	ints    []int64
	floats  []float64
	isStr   bool
	isFloat bool
	dtype   tensor.DType
	n       int
}

// labelAttr reads the list prefix_strings / prefix_int64s / prefix_floats /
// prefix_tensor (LabelEncoder's keys_* and values_*); ok is false when none
// is set.
func (n *node) labelAttr(prefix string) (l labelList, ok bool, err error) {
	if a := n.attrs[prefix+"_strings"]; a != nil {
		d := a.stringList()
		return labelList{strs: d, isStr: true, n: len(d)}, true, nil
	}
	if a := n.attrs[prefix+"_int64s"]; a != nil {
		return labelList{ints: a.ints, dtype: tensor.Int64, n: len(a.ints)}, true, nil
	}
	if a := n.attrs[prefix+"_floats"]; a != nil {
		f := make([]float64, len(a.floats))
		for i, v := range a.floats {
			f[i] = float64(v)
		}
		return labelList{floats: f, isFloat: true, dtype: tensor.Float32, n: len(f)}, true, nil
	}
	if a := n.attrs[prefix+"_tensor"]; a != nil && a.t != nil {
		return n.labelTensor(a.t)
	}
	return labelList{}, false, nil
}

// labelTensor reads a tensor attribute of LabelEncoder.
func (n *node) labelTensor(tp *tensorProto) (labelList, bool, error) {
	if tp.dataType == dtString {
		s, err := tp.toStrings()
		if err != nil {
			return labelList{}, false, fmt.Errorf("onnx: %v: %w", n, err)
		}
		return labelList{strs: s.Data, isStr: true, n: len(s.Data)}, true, nil
	}
	t, err := tp.toTensor(n.source())
	if err != nil {
		return labelList{}, false, fmt.Errorf("onnx: %v: %w", n, err)
	}
	if t.DType().IsFloat() {
		return labelList{floats: t.Float64s(), isFloat: true, dtype: t.DType(), n: t.Numel()}, true, nil
	}
	return labelList{ints: t.Int64s(), dtype: t.DType(), n: t.Numel()}, true, nil
}

// key returns element i of l as a lookup key.
func (l labelList) key(i int) string {
	switch {
	case l.isStr:
		return labelKey('s', l.strs[i], 0, 0)
	case l.isFloat:
		return labelKey('f', "", 0, l.floats[i])
	}
	return labelKey('i', "", l.ints[i], 0)
}

// opLabelEncoder maps each element of X to the value whose key it equals,
// or to the default: default_tensor, else default_string ("_Unused"),
// default_int64 (-1) or default_float (-0.0) as the values' type says.
func opLabelEncoder(n *node, e strEnv, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	keys, ok, err := n.labelAttr("keys")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("onnx: %v: no keys (keys_strings, keys_int64s, keys_floats or keys_tensor)", n)
	}
	values, ok, err := n.labelAttr("values")
	if err != nil {
		return nil, err
	}
	if !ok || values.n != keys.n {
		return nil, fmt.Errorf("onnx: %v: %d keys need as many values (values_strings, values_int64s, values_floats or values_tensor)", n, keys.n)
	}
	index := make(map[string]int, keys.n)
	for i := range keys.n {
		if _, dup := index[keys.key(i)]; !dup {
			index[keys.key(i)] = i
		}
	}
	// The input's elements as keys.
	var inKeys []string
	var shape []int
	if s, isStr := e.value(x); isStr {
		if !keys.isStr {
			return nil, fmt.Errorf("onnx: %v: string input for non-string keys", n)
		}
		shape = s.Shape
		for _, v := range s.Data {
			inKeys = append(inKeys, labelKey('s', v, 0, 0))
		}
	} else {
		shape = x.Shape()
		switch {
		case keys.isStr:
			return nil, fmt.Errorf("onnx: %v: %s input for string keys", n, x.DType())
		case keys.isFloat:
			for _, v := range x.Float64s() {
				inKeys = append(inKeys, labelKey('f', "", 0, v))
			}
		default:
			for _, v := range x.Int64s() {
				inKeys = append(inKeys, labelKey('i', "", v, 0))
			}
		}
	}
	// The default, as a one-element list of the values' type.
	def := labelList{n: 1, isStr: values.isStr, isFloat: values.isFloat, dtype: values.dtype}
	if a := n.attrs["default_tensor"]; a != nil && a.t != nil {
		if def, _, err = n.labelTensor(a.t); err != nil {
			return nil, err
		}
		if def.n != 1 || def.isStr != values.isStr {
			return nil, fmt.Errorf("onnx: %v: default_tensor must be one element of the values' type", n)
		}
	} else {
		def.strs = []string{n.attrString("default_string", "_Unused")}
		def.ints = []int64{n.attrInt("default_int64", -1)}
		def.floats = []float64{n.attrFloat("default_float", math.Copysign(0, -1))}
	}
	if values.isStr {
		out := Strings{Shape: shape, Data: make([]string, len(inKeys))}
		for i, k := range inKeys {
			if j, ok := index[k]; ok {
				out.Data[i] = values.strs[j]
			} else {
				out.Data[i] = def.strs[0]
			}
		}
		return one(e.put(out))
	}
	if values.isFloat {
		out := make([]float64, len(inKeys))
		for i, k := range inKeys {
			if j, ok := index[k]; ok {
				out[i] = values.floats[j]
			} else {
				out[i] = def.floats[0]
			}
		}
		return one(tensor.FromSlice(out, shape...).To(values.dtype))
	}
	out := make([]int64, len(inKeys))
	for i, k := range inKeys {
		if j, ok := index[k]; ok {
			out[i] = values.ints[j]
		} else {
			out[i] = def.ints[0]
		}
	}
	return one(tensor.FromSlice(out, shape...).To(values.dtype))
}

// labelEncoderStrings reports whether a LabelEncoder node's outputs are
// strings (its values are).
func (n *node) labelEncoderStrings() bool {
	if n.attrs["values_strings"] != nil {
		return true
	}
	a := n.attrs["values_tensor"]
	return a != nil && a.t != nil && a.t.dataType == dtString
}

// opBinarizer is Binarizer: 1 where x > threshold, else 0, in x's dtype.
func opBinarizer(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	th := n.attrFloat("threshold", 0)
	v := x.Float64s()
	for i, a := range v {
		if a > th {
			v[i] = 1
		} else {
			v[i] = 0
		}
	}
	return one(tensor.FromSlice(v, x.Shape()...).To(x.DType()))
}

// opArrayFeatureExtractor selects the elements of X's last axis that the
// indices Y name: the result has X's shape with the last axis replaced by
// the count of indices ([1, count] for a 1-d X).
func opArrayFeatureExtractor(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	y, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	if y.DType().IsFloat() || x.Dim() == 0 {
		return nil, fmt.Errorf("onnx: %v: X %v and integer indices Y %s %v", n, x.Shape(), y.DType(), y.Shape())
	}
	xs := x.Shape()
	last := xs[len(xs)-1]
	idx := y.Int64s()
	for _, i := range idx {
		if i < 0 || i >= int64(last) {
			return nil, fmt.Errorf("onnx: %v: index %d is outside the last axis of %v", n, i, xs)
		}
	}
	picked := x.IndexSelect(x.Dim()-1, tensor.FromSlice(idx, len(idx)))
	if x.Dim() == 1 {
		return one(picked.Reshape(1, len(idx)))
	}
	return one(picked)
}

// treeNodeModes are TreeEnsemble's comparison modes, by number.
const (
	treeLEQ = iota
	treeLT
	treeGTE
	treeGT
	treeEQ
	treeNEQ
	treeMember
)

// opTreeEnsemble is TreeEnsemble 5: each tree walks from its root, at each
// node comparing feature nodes_featureids of the row with nodes_splits as
// nodes_modes says (BRANCH_MEMBER: whether the value is in the node's set
// of membership_values, sets separated by NaN), until a leaf; every leaf
// adds leaf_weights to target leaf_targetids. Trees aggregate by
// aggregate_function (0 average, 1 sum, 2 min, 3 max) and post_transform
// (0 none, 1 softmax, 2 logistic, 3 softmax with zeros, 4 probit) finishes
// each row.
func opTreeEnsemble(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.needFloat(in, 0)
	if err != nil {
		return nil, err
	}
	if x.Dim() != 2 {
		return nil, fmt.Errorf("onnx: %v: X %v must be [rows, features]", n, x.Shape())
	}
	floatsOf := func(name string) ([]float64, error) {
		a := n.attrs[name]
		if a == nil || a.t == nil {
			return nil, nil
		}
		t, err := a.t.toTensor(n.source())
		if err != nil {
			return nil, fmt.Errorf("onnx: %v: %s: %w", n, name, err)
		}
		return t.Float64s(), nil
	}
	splits, err := floatsOf("nodes_splits")
	if err != nil {
		return nil, err
	}
	modesF, err := floatsOf("nodes_modes")
	if err != nil {
		return nil, err
	}
	weights, err := floatsOf("leaf_weights")
	if err != nil {
		return nil, err
	}
	members, err := floatsOf("membership_values")
	if err != nil {
		return nil, err
	}
	feat := n.attrInts("nodes_featureids")
	trueIDs, falseIDs := n.attrInts("nodes_truenodeids"), n.attrInts("nodes_falsenodeids")
	trueLeaf, falseLeaf := n.attrInts("nodes_trueleafs"), n.attrInts("nodes_falseleafs")
	missingTrue := n.attrInts("nodes_missing_value_tracks_true")
	targets := n.attrInts("leaf_targetids")
	roots := n.attrInts("tree_roots")
	nTargets := int(n.attrInt("n_targets", 0))
	nodes := len(feat)
	if len(splits) != nodes || len(modesF) != nodes || len(trueIDs) != nodes || len(falseIDs) != nodes ||
		len(trueLeaf) != nodes || len(falseLeaf) != nodes || (missingTrue != nil && len(missingTrue) != nodes) ||
		len(targets) != len(weights) || nTargets <= 0 {
		return nil, fmt.Errorf("onnx: %v: the node, leaf and target attributes disagree in length", n)
	}
	// The membership set of each BRANCH_MEMBER node, in node order.
	sets := make([]map[float64]bool, nodes)
	next := 0
	for i, m := range modesF {
		if int(m) != treeMember {
			continue
		}
		set := map[float64]bool{}
		for next < len(members) && !math.IsNaN(members[next]) {
			set[members[next]] = true
			next++
		}
		next++ // the NaN separator
		sets[i] = set
	}
	xs := x.Shape()
	rows, cols := xs[0], xs[1]
	xv := x.Float64s()
	agg := n.attrInt("aggregate_function", 1)
	out := make([]float64, rows*nTargets)
	seen := make([]bool, nTargets)
	for r := range rows {
		row := xv[r*cols : (r+1)*cols]
		acc := out[r*nTargets : (r+1)*nTargets]
		clear(seen)
		for _, root := range roots {
			id := int(root)
			for steps := 0; ; steps++ {
				if id < 0 || id >= nodes || steps > nodes {
					return nil, fmt.Errorf("onnx: %v: tree from root %d leads to node %d or loops", n, root, id)
				}
				f := int(feat[id])
				if f < 0 || f >= cols {
					return nil, fmt.Errorf("onnx: %v: node %d reads feature %d of %d", n, id, f, cols)
				}
				v, s := row[f], splits[id]
				var cond bool
				switch {
				case math.IsNaN(v) && missingTrue != nil && missingTrue[id] != 0:
					cond = true
				default:
					switch int(modesF[id]) {
					case treeLEQ:
						cond = v <= s
					case treeLT:
						cond = v < s
					case treeGTE:
						cond = v >= s
					case treeGT:
						cond = v > s
					case treeEQ:
						cond = v == s
					case treeNEQ:
						cond = v != s
					case treeMember:
						cond = sets[id][v]
					default:
						return nil, fmt.Errorf("onnx: %v: node %d has mode %v", n, id, modesF[id])
					}
				}
				nextID, leaf := falseIDs[id], falseLeaf[id] != 0
				if cond {
					nextID, leaf = trueIDs[id], trueLeaf[id] != 0
				}
				if !leaf {
					id = int(nextID)
					continue
				}
				if nextID < 0 || int(nextID) >= len(weights) || targets[nextID] < 0 || int(targets[nextID]) >= nTargets {
					return nil, fmt.Errorf("onnx: %v: leaf %d is out of range", n, nextID)
				}
				t, w := int(targets[nextID]), weights[nextID]
				switch {
				case !seen[t] && (agg == 2 || agg == 3):
					acc[t] = w
				case agg == 2:
					acc[t] = min(acc[t], w)
				case agg == 3:
					acc[t] = max(acc[t], w)
				default:
					acc[t] += w
				}
				seen[t] = true
				break
			}
		}
		if agg == 0 && len(roots) > 0 {
			for t := range acc {
				acc[t] /= float64(len(roots))
			}
		}
		if err := postTransform(n, acc, n.attrInt("post_transform", 0)); err != nil {
			return nil, err
		}
	}
	return one(tensor.FromSlice(out, rows, nTargets).To(x.DType()))
}

// postTransform applies a tree ensemble's post_transform to one row.
func postTransform(n *node, row []float64, mode int64) error {
	switch mode {
	case 0:
	case 1, 3: // softmax; softmax_zero leaves zeros at zero
		m := math.Inf(-1)
		for _, v := range row {
			m = max(m, v)
		}
		var sum float64
		for i, v := range row {
			if mode == 3 && v == 0 {
				continue
			}
			row[i] = math.Exp(v - m)
			sum += row[i]
		}
		for i, v := range row {
			if mode == 3 && v == 0 {
				continue
			}
			row[i] /= sum
		}
	case 2:
		for i, v := range row {
			row[i] = 1 / (1 + math.Exp(-v))
		}
	case 4:
		for i, v := range row {
			row[i] = math.Sqrt2 * math.Erfinv(2*v-1)
		}
	default:
		return fmt.Errorf("onnx: %v: post_transform %d is not 0 to 4", n, mode)
	}
	return nil
}

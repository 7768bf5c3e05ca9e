package onnx

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"github.com/emberml/ember/internal/safeio"
	"github.com/emberml/ember/tensor"
)

// ONNX TensorProto.DataType values.
const (
	dtUndefined = 0
	dtFloat     = 1
	dtUint8     = 2
	dtInt8      = 3
	dtUint16    = 4
	dtInt16     = 5
	dtInt32     = 6
	dtInt64     = 7
	dtString    = 8
	dtBool      = 9
	dtFloat16   = 10
	dtDouble    = 11
	dtUint32    = 12
	dtUint64    = 13
	dtComplex64 = 14
	dtComplex12 = 15
	dtBFloat16  = 16
)

var onnxTypeNames = map[int64]string{
	0: "UNDEFINED", 1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32",
	7: "INT64", 8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64",
	14: "COMPLEX64", 15: "COMPLEX128", 16: "BFLOAT16", 17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ",
	19: "FLOAT8E5M2", 20: "FLOAT8E5M2FNUZ", 21: "UINT4", 22: "INT4", 23: "FLOAT4E2M1",
	24: "FLOAT8E8M0", 25: "UINT2", 26: "INT2",
}

// typeName returns the ONNX name of data type t.
func typeName(t int64) string {
	if s, ok := onnxTypeNames[t]; ok {
		return s
	}
	return "DataType(" + strconv.FormatInt(t, 10) + ")"
}

// dtypeFromONNX maps an ONNX data type to the tensor dtype holding it.
func dtypeFromONNX(t int64) (tensor.DType, error) {
	switch t {
	case dtFloat:
		return tensor.Float32, nil
	case dtDouble:
		return tensor.Float64, nil
	case dtInt64:
		return tensor.Int64, nil
	case dtInt32:
		return tensor.Int32, nil
	case dtInt16:
		return tensor.Int16, nil
	case dtInt8:
		return tensor.Int8, nil
	case dtUint8:
		return tensor.Uint8, nil
	case dtUint16:
		return tensor.Uint16, nil
	case dtUint32:
		return tensor.Uint32, nil
	case dtUint64:
		return tensor.Uint64, nil
	case dtBool:
		return tensor.Bool, nil
	case dtFloat16:
		return tensor.Float16, nil
	case dtBFloat16:
		return tensor.BFloat16, nil
	}
	if isSmallType(t) {
		return smallHolder(t), nil // see smalltypes.go
	}
	return 0, &DTypeError{Type: typeName(t)}
}

// dtypeToONNX maps a tensor dtype to its ONNX data type.
func dtypeToONNX(d tensor.DType) int64 {
	switch d {
	case tensor.Float32:
		return dtFloat
	case tensor.Float64:
		return dtDouble
	case tensor.Int64:
		return dtInt64
	case tensor.Int32:
		return dtInt32
	case tensor.Int16:
		return dtInt16
	case tensor.Int8:
		return dtInt8
	case tensor.Uint8:
		return dtUint8
	case tensor.Uint16:
		return dtUint16
	case tensor.Uint32:
		return dtUint32
	case tensor.Uint64:
		return dtUint64
	case tensor.Bool:
		return dtBool
	case tensor.Float16:
		return dtFloat16
	case tensor.BFloat16:
		return dtBFloat16
	}
	return dtUndefined
}

// DTypeError reports an ONNX element type that Ember's tensor package cannot
// hold (e.g. STRING, COMPLEX64).
type DTypeError struct {
	Type string
}

// Error names the type and the supported ones.
func (e *DTypeError) Error() string {
	return "onnx: element type " + e.Type + " is not supported by Ember tensors (supported: FLOAT, DOUBLE, INT64, INT32, INT16, UINT16, UINT32, UINT64, INT8, UINT8, BOOL, FLOAT16, BFLOAT16, and the 8-, 4- and 2-bit types held widened)"
}

// maxElements caps the element count of any tensor an ONNX model makes Ember
// allocate from values it declares (shapes given to ConstantOfShape, Expand,
// Tile, Range...), so a hostile model cannot ask for terabytes.
const maxElements = 1 << 31

// numelOf returns the element count of dims, or an error for negative dims
// or a count above maxElements.
//
// The product of the non-zero dims is bounded too, so a shape such as
// [0, 2^40, 2^40] (no elements, but axes no tensor could have once the
// zero is reduced away) is refused like [2^40, 2^40].
func numelOf(dims []int64) (int, error) {
	if len(dims) > maxRank {
		return 0, fmt.Errorf("onnx: shape of rank %d exceeds %d", len(dims), maxRank)
	}
	n, zero := int64(1), false
	for _, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("onnx: negative dimension %d in shape %v", d, dims)
		}
		if d == 0 {
			zero = true
			continue
		}
		if n > maxElements/d {
			return 0, fmt.Errorf("onnx: shape %v has more than %d elements", dims, int64(maxElements))
		}
		n *= d
	}
	if zero {
		return 0, nil
	}
	return int(n), nil
}

// dataSource is what decoding a TensorProto may use: the folder external
// data is read from ("" when the model was not read from a file, in which
// case external data is refused), the byte budget every decoded tensor must
// fit, and the context that bounds reading external data (nil: none).
type dataSource struct {
	dir string
	// maxBytes is what is left of the budget, limit the whole budget (0:
	// maxBytes).
	maxBytes, limit int64
	ctx             context.Context
}

// checkBytes refuses a tensor of need bytes above the budget.
func (src dataSource) checkBytes(what string, need int64) error {
	if need <= src.maxBytes {
		return nil
	}
	if src.limit > src.maxBytes {
		return fmt.Errorf("onnx: %s needs %d bytes, more than the %d bytes left of the limit of %d bytes (LoadOptions.MaxBytes / SessionOptions.MaxBytes)", what, need, max(src.maxBytes, 0), src.limit)
	}
	return fmt.Errorf("onnx: %s needs %d bytes, more than the limit of %d bytes (LoadOptions.MaxBytes / SessionOptions.MaxBytes)", what, need, src.maxBytes)
}

// toTensor converts the TensorProto to a tensor, refusing tensors above
// the byte budget before anything is allocated.
func (tp *tensorProto) toTensor(src dataSource) (*tensor.Tensor, error) {
	if tp.hasSegment {
		return nil, fmt.Errorf("onnx: tensor %s is segmented, which is not supported", short(tp.name))
	}
	dt, err := dtypeFromONNX(tp.dataType)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", short(tp.name), err)
	}
	n, err := numelOf(tp.dims)
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", short(tp.name), err)
	}
	need := int64(n) * int64(dt.Size())
	if err := src.checkBytes(fmt.Sprintf("tensor %s of shape %v and type %s", short(tp.name), tp.dims, typeName(tp.dataType)), need); err != nil {
		return nil, err
	}
	shape := make([]int, len(tp.dims))
	for i, d := range tp.dims {
		shape[i] = int(d)
	}
	if isSmallType(tp.dataType) {
		return tp.smallToTensor(src, n, shape)
	}
	raw := tp.rawData
	if tp.dataLocation == 1 {
		if raw, err = tp.readExternal(src, n*dt.Size()); err != nil {
			return nil, err
		}
	}
	if raw != nil || tp.dataLocation == 1 {
		if len(raw) != n*dt.Size() {
			return nil, fmt.Errorf("onnx: tensor %s of shape %v and type %s needs %d bytes of raw data, has %d", short(tp.name), tp.dims, typeName(tp.dataType), n*dt.Size(), len(raw))
		}
		return tensor.FromLittleEndian(dt, raw, shape...)
	}
	count := func(have int) error {
		if have != n {
			return fmt.Errorf("onnx: tensor %s of shape %v holds %d values, want %d", short(tp.name), tp.dims, have, n)
		}
		return nil
	}
	switch dt {
	case tensor.Float32:
		if err := count(len(tp.floatData)); err != nil {
			return nil, err
		}
		return tensor.FromSlice(tp.floatData, shape...), nil
	case tensor.Float64:
		if err := count(len(tp.doubleData)); err != nil {
			return nil, err
		}
		return tensor.FromSlice(tp.doubleData, shape...), nil
	case tensor.Int64:
		if err := count(len(tp.int64Data)); err != nil {
			return nil, err
		}
		return tensor.FromSlice(tp.int64Data, shape...), nil
	case tensor.Uint32, tensor.Uint64: // both in uint64_data, as ONNX specifies
		if err := count(len(tp.uint64Data)); err != nil {
			return nil, err
		}
		return tensor.FromSlice(tp.uint64Data, shape...).To(dt), nil
	}
	// INT32, INT16, UINT16, INT8, UINT8, BOOL, FLOAT16 and BFLOAT16 live
	// in int32_data, one value per element.
	if err := count(len(tp.int32Data)); err != nil {
		return nil, err
	}
	switch dt {
	case tensor.Int32:
		return tensor.FromSlice(tp.int32Data, shape...), nil
	case tensor.Int16, tensor.Uint16, tensor.Int8, tensor.Uint8:
		return tensor.FromSlice(tp.int32Data, shape...).To(dt), nil
	case tensor.Bool:
		b := make([]bool, n)
		for i, v := range tp.int32Data {
			b[i] = v != 0
		}
		return tensor.FromSlice(b, shape...), nil
	default:
		bits := make([]uint16, n)
		for i, v := range tp.int32Data {
			bits[i] = uint16(v)
		}
		return tensor.FromHalfBits(dt, bits, shape...), nil
	}
}

// externalChunk is how much external data is read between two checks of
// the load's context.
const externalChunk = 16 << 20

// readExternal reads want bytes of external data. The location must be a
// local path inside the model's folder: absolute paths and ".." are
// refused, the file is opened through an os.Root of the folder so that no
// symbolic link (to a file or a folder) can lead outside it, and only a
// regular file is read (a FIFO, device or socket is refused before it is
// opened, and opened without blocking in case it is swapped in between).
func (tp *tensorProto) readExternal(src dataSource, want int) ([]byte, error) {
	loc := tp.externalData["location"]
	if src.dir == "" {
		return nil, fmt.Errorf("onnx: tensor %s has external data %s but the model was not loaded from a file (use onnx.Load)", short(tp.name), short(loc))
	}
	if loc == "" || !filepath.IsLocal(filepath.FromSlash(loc)) {
		return nil, fmt.Errorf("onnx: tensor %s: external data location %s must be a relative path inside the model's folder", short(tp.name), short(loc))
	}
	parse := func(key string) (int64, error) {
		s, ok := tp.externalData[key]
		if !ok {
			return -1, nil
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("onnx: tensor %s: external data %s %s is not a non-negative integer", short(tp.name), key, short(s))
		}
		return v, nil
	}
	off, err := parse("offset")
	if err != nil {
		return nil, err
	}
	off = max(off, 0)
	length, err := parse("length")
	if err != nil {
		return nil, err
	}
	if length >= 0 && length != int64(want) {
		return nil, fmt.Errorf("onnx: tensor %s: external data length %d, want %d bytes", short(tp.name), length, want)
	}
	f, size, err := safeio.OpenIn(src.dir, filepath.FromSlash(loc))
	if err != nil {
		return nil, fmt.Errorf("onnx: tensor %s: external data %s: %w", short(tp.name), short(loc), err)
	}
	defer f.Close()
	if off > size || size-off < int64(want) {
		return nil, fmt.Errorf("onnx: tensor %s: external file %s has %d bytes, need %d at offset %d", short(tp.name), short(loc), size, want, off)
	}
	buf := make([]byte, want)
	for done := 0; done < want; {
		if src.ctx != nil {
			if err := src.ctx.Err(); err != nil {
				return nil, fmt.Errorf("onnx: tensor %s: reading external data: %w", short(tp.name), err)
			}
		}
		part := buf[done:min(done+externalChunk, want)]
		if _, err := f.ReadAt(part, off+int64(done)); err != nil {
			return nil, fmt.Errorf("onnx: tensor %s: reading external data: %w", short(tp.name), err)
		}
		done += len(part)
	}
	return buf, nil
}

// toTensor densifies the sparse tensor: zeros of shape dims with the values
// at their indices.
func (sp *sparseTensorProto) toTensor(src dataSource) (*tensor.Tensor, error) {
	vals, err := sp.values.toTensor(src)
	if err != nil {
		return nil, err
	}
	idx, err := sp.indices.toTensor(src)
	if err != nil {
		return nil, err
	}
	n, err := numelOf(sp.dims)
	if err != nil {
		return nil, err
	}
	if int64(n) > int64(vals.Numel())*1024+1<<20 {
		// The dense form is built from values the file holds; refuse
		// densities that would turn a few bytes into gigabytes.
		return nil, fmt.Errorf("onnx: sparse tensor of shape %v is too large to densify from %d values", sp.dims, vals.Numel())
	}
	// Densifying holds a float64 copy beside the result.
	if err := src.checkBytes(fmt.Sprintf("sparse tensor %s of shape %v (densified)", short(sp.values.name), sp.dims), int64(n)*int64(8+vals.DType().Size())); err != nil {
		return nil, err
	}
	nnz, rank := vals.Numel(), len(sp.dims)
	iv := idx.Int64s()
	var linear []int64
	switch {
	case idx.Dim() == 1 && len(iv) == nnz:
		linear = iv
	case idx.Dim() == 2 && idx.Shape()[0] == nnz && idx.Shape()[1] == rank:
		linear = make([]int64, nnz)
		for i := range nnz {
			var l int64
			for j, d := range sp.dims {
				c := iv[i*rank+j]
				if c < 0 || c >= d {
					return nil, fmt.Errorf("onnx: sparse index %d out of range for shape %v", c, sp.dims)
				}
				l = l*d + c
			}
			linear[i] = l
		}
	default:
		return nil, fmt.Errorf("onnx: sparse indices of shape %v do not fit %d values of rank %d", idx.Shape(), nnz, rank)
	}
	dense := make([]float64, n)
	v := vals.Float64s()
	for i, l := range linear {
		if l < 0 || l >= int64(n) {
			return nil, fmt.Errorf("onnx: sparse index %d out of range for shape %v", l, sp.dims)
		}
		dense[l] = v[i]
	}
	shape := make([]int, rank)
	for i, d := range sp.dims {
		shape[i] = int(d)
	}
	return tensor.FromSlice(dense, shape...).To(vals.DType()), nil
}

// ReadTensor decodes one serialized TensorProto (as in the ONNX test data's
// input_0.pb files) into a tensor. External data is refused.
func ReadTensor(r io.Reader) (*tensor.Tensor, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxModelBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxModelBytes {
		return nil, fmt.Errorf("onnx: serialized tensor is larger than %d bytes", int64(maxModelBytes))
	}
	tp, err := decodeTensor(b)
	if err != nil {
		return nil, err
	}
	t, err := tp.toTensor(dataSource{maxBytes: DefaultMaxBytes()})
	return t, bounded(err)
}

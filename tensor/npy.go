package tensor

import (
	"fmt"
	"io"

	"github.com/emberml/ember/tensor/internal/npy"
)

// ReadNpy reads one array in NumPy's .npy format from r into a new CPU
// tensor. Element types map to dtypes as float16 → Float16, float32 →
// Float32, float64 → Float64, int64 → Int64, int32 → Int32, int16 → Int16,
// uint16 → Uint16, uint32 → Uint32, uint64 → Uint64, int8 → Int8, uint8 →
// Uint8 and bool → Bool.
// Both byte orders, Fortran order and format versions 1.0 to 3.0 are
// accepted. Malformed input gives an error, never a panic.
func ReadNpy(r io.Reader) (*Tensor, error) {
	a, err := npy.Read(r)
	if err != nil {
		return nil, fmt.Errorf("tensor.ReadNpy: %w", err)
	}
	return fromNpy(a)
}

// LoadNpy reads the .npy file at path into a new CPU tensor (see ReadNpy).
// The path must name a regular file (not a FIFO, device or folder), and a
// header declaring more data than the file holds is refused before any
// data is read.
func LoadNpy(path string) (*Tensor, error) {
	a, err := npy.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tensor.LoadNpy %s: %w", path, err)
	}
	t, err := fromNpy(a)
	if err != nil {
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	return t, nil
}

// WriteNpy writes t to w in NumPy's .npy format (version 1.0, C order,
// little-endian), readable by numpy.load. BFloat16 has no .npy type and gives
// an error; convert it with To(Float32) first.
func WriteNpy(w io.Writer, t *Tensor) error {
	a, err := toNpy(t)
	if err != nil {
		return err
	}
	if err := npy.Write(w, a); err != nil {
		return fmt.Errorf("tensor.WriteNpy: %w", err)
	}
	return nil
}

// SaveNpy writes t to the .npy file at path (see WriteNpy), atomically:
// readers, and a program restarted after a crash, find the previous file or
// the complete new one, never a partial save.
func SaveNpy(path string, t *Tensor) error {
	a, err := toNpy(t)
	if err != nil {
		return err
	}
	if err := npy.WriteFile(path, a); err != nil {
		return fmt.Errorf("tensor.SaveNpy %s: %w", path, err)
	}
	return nil
}

// fromNpy converts a decoded array (little-endian, C order) into a tensor.
func fromNpy(a npy.Array) (*Tensor, error) {
	for dt, descr := range npyDescrs {
		if descr == a.Descr {
			return FromLittleEndian(dt, a.Data, a.Shape...)
		}
	}
	return nil, fmt.Errorf("tensor.ReadNpy: npy element type %q has no tensor dtype", a.Descr)
}

// npyDescrs maps each dtype .npy files can hold to its descr.
var npyDescrs = map[DType]string{
	Float32: npy.DescrFloat32, Float64: npy.DescrFloat64, Float16: npy.DescrFloat16,
	Int64: npy.DescrInt64, Int32: npy.DescrInt32, Int16: npy.DescrInt16, Uint16: npy.DescrUint16,
	Uint32: npy.DescrUint32, Uint64: npy.DescrUint64,
	Int8: npy.DescrInt8, Uint8: npy.DescrUint8, Bool: npy.DescrBool,
}

// toNpy encodes t's elements little-endian in row-major order.
func toNpy(t *Tensor) (npy.Array, error) {
	descr, ok := npyDescrs[t.dtype]
	if !ok {
		return npy.Array{}, fmt.Errorf("tensor.WriteNpy: dtype %s has no .npy type (convert with To(tensor.Float32) first)", t.dtype)
	}
	return npy.Array{Shape: t.Shape(), Descr: descr, Data: t.LittleEndianBytes()}, nil
}

package nn

import (
	"bufio"
	"bytes"
	"fmt"
	"io"

	"github.com/emberml/ember/internal/atomicfile"
	"github.com/emberml/ember/internal/safetensors"
	"github.com/emberml/ember/tensor"
)

// pyTorchMetadata is the header metadata Ember writes with a module's
// weights: the "format": "pt" entry that the safetensors library's torch
// helpers write, so tools treat the file as a PyTorch state dict.
var pyTorchMetadata = map[string]string{"format": "pt"}

// EncodeTensors writes tensors and optional string metadata to w in the
// safetensors format (the one PyTorch's safetensors package reads). Float32,
// Float64, Float16, BFloat16, Int64, Int32 and Bool tensors are supported;
// any layout is written row-major.
func EncodeTensors(w io.Writer, tensors map[string]*tensor.Tensor, metadata map[string]string) error {
	raw := make(map[string]safetensors.Tensor, len(tensors))
	for name, t := range tensors {
		if t == nil {
			return fmt.Errorf("nn.EncodeTensors: tensor %q is nil", name)
		}
		r, err := toRaw(t)
		if err != nil {
			return fmt.Errorf("nn.EncodeTensors: tensor %q: %w", name, err)
		}
		raw[name] = r
	}
	return safetensors.Encode(w, raw, metadata)
}

// DecodeTensors parses a safetensors file held in b into CPU tensors (their
// own copies of the data) and the header's metadata. Dtypes Ember lacks
// (the 8-bit floats) are an error.
func DecodeTensors(b []byte) (map[string]*tensor.Tensor, map[string]string, error) {
	raw, meta, err := safetensors.Decode(b)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]*tensor.Tensor, len(raw))
	for name, r := range raw {
		t, err := fromRaw(r)
		if err != nil {
			return nil, nil, fmt.Errorf("nn.DecodeTensors: tensor %q: %w", name, err)
		}
		out[name] = t
	}
	return out, meta, nil
}

// SaveTensors writes tensors and metadata to the safetensors file at path.
// The save is atomic: a reader, or a program restarted after a crash or a
// kill, finds either the previous file or the complete new one.
func SaveTensors(path string, tensors map[string]*tensor.Tensor, metadata map[string]string) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Close() // removes the temporary unless Commit succeeded
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := EncodeTensors(bw, tensors, metadata); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Commit()
}

// LoadTensors reads the safetensors file at path. The path must name a
// regular file (not a FIFO, device or folder), and a header that cannot fit
// the file or exceeds 16 MiB is refused before the rest is read.
func LoadTensors(path string) (map[string]*tensor.Tensor, map[string]string, error) {
	b, err := safetensors.ReadFileBytes(path)
	if err != nil {
		return nil, nil, err
	}
	return DecodeTensors(b)
}

// WriteSafetensors writes the module's state dict to w as safetensors,
// loadable in PyTorch with safetensors.torch.load and load_state_dict.
func WriteSafetensors(w io.Writer, m Module) error {
	return EncodeTensors(w, StateDict(m), pyTorchMetadata)
}

// SaveSafetensors writes the module's state dict to the file at path.
func SaveSafetensors(path string, m Module) error {
	return SaveTensors(path, StateDict(m), pyTorchMetadata)
}

// ReadSafetensors reads a safetensors state dict from r and loads it into
// the module strictly (see LoadStateDict).
func ReadSafetensors(r io.Reader, m Module) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return UnmarshalSafetensors(b, m)
}

// UnmarshalSafetensors loads the safetensors state dict held in b into the
// module strictly (see LoadStateDict).
func UnmarshalSafetensors(b []byte, m Module) error {
	sd, _, err := DecodeTensors(b)
	if err != nil {
		return err
	}
	return LoadStateDict(m, sd, true)
}

// MarshalSafetensors returns the module's state dict as safetensors bytes.
func MarshalSafetensors(m Module) ([]byte, error) {
	var buf bytes.Buffer
	if err := WriteSafetensors(&buf, m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// LoadSafetensors loads the safetensors state dict at path into the module
// strictly (see LoadStateDict). For a partial load, use LoadTensors and
// LoadStateDict with strict false.
func LoadSafetensors(path string, m Module) error {
	b, err := safetensors.ReadFileBytes(path)
	if err != nil {
		return err
	}
	return UnmarshalSafetensors(b, m)
}

// rawNames maps Ember dtypes to safetensors dtype names.
var rawNames = map[tensor.DType]string{
	tensor.Float32:  "F32",
	tensor.Float64:  "F64",
	tensor.Float16:  "F16",
	tensor.BFloat16: "BF16",
	tensor.Int64:    "I64",
	tensor.Int32:    "I32",
	tensor.Int16:    "I16",
	tensor.Uint16:   "U16",
	tensor.Uint32:   "U32",
	tensor.Uint64:   "U64",
	tensor.Int8:     "I8",
	tensor.Uint8:    "U8",
	tensor.Bool:     "BOOL",
}

// toRaw converts t to its row-major little-endian bytes.
func toRaw(t *tensor.Tensor) (safetensors.Tensor, error) {
	name, ok := rawNames[t.DType()]
	if !ok {
		return safetensors.Tensor{}, fmt.Errorf("dtype %s has no safetensors equivalent", t.DType())
	}
	if t.Device() != tensor.CPU {
		c, err := t.ToDevice(tensor.CPU)
		if err != nil {
			return safetensors.Tensor{}, err
		}
		t = c
	}
	return safetensors.Tensor{DType: name, Shape: t.Shape(), Data: t.LittleEndianBytes()}, nil
}

// fromRaw converts a raw safetensors tensor to a CPU tensor.
func fromRaw(r safetensors.Tensor) (*tensor.Tensor, error) {
	for dt, name := range rawNames {
		if name != r.DType {
			continue
		}
		if dt == tensor.Bool {
			// The format stores booleans as 0 or 1; anything else is corrupt.
			for i, b := range r.Data {
				if b > 1 {
					return nil, fmt.Errorf("bool element %d has byte value %d, want 0 or 1", i, b)
				}
			}
		}
		return tensor.FromLittleEndian(dt, r.Data, r.Shape...)
	}
	return nil, fmt.Errorf("safetensors dtype %s is not supported by Ember (supported: F32, F64, F16, BF16, I64, I32, I16, U16, U32, U64, I8, U8, BOOL)", r.DType)
}

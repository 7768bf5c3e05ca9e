package onnx

import (
	"fmt"
	"os"

	"github.com/emberml/ember/tensor"
)

// readValuePB reads a test-data .pb file holding the value vi declares: a
// TensorProto, a SequenceProto or an OptionalProto.
func readValuePB(path string, vi ValueInfo) (any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeValuePB(b, vi.Kind)
}

// decodeValuePB decodes b as a value of kind ("tensor", "sequence" or
// "optional"; "" is a tensor).
func decodeValuePB(b []byte, kind string) (any, error) {
	switch kind {
	case "", "tensor":
		tp, err := decodeTensor(b)
		if err != nil {
			return nil, err
		}
		if tp.dataType == dtString {
			return tp.toStrings()
		}
		return tp.toTensor(dataSource{maxBytes: DefaultMaxBytes()})
	case "sequence":
		// SequenceProto: elem_type (2), tensor_values (3), sequence_values
		// (5); Ember sequences hold tensors only.
		seq := Sequence{}
		d := decoder{b}
		for len(d.b) > 0 {
			num, _, _, p, err := d.next()
			if err != nil {
				return nil, err
			}
			switch num {
			case 3:
				v, err := decodeValuePB(p, "tensor")
				if err != nil {
					return nil, err
				}
				seq = append(seq, v.(*tensor.Tensor))
			case 4, 5, 6, 7:
				return nil, &DTypeError{Type: fmt.Sprintf("SequenceProto field %d (a sequence of non-tensors)", num)}
			}
		}
		return seq, nil
	case "optional":
		// OptionalProto: elem_type (2: 1 tensor, 3 sequence), tensor_value
		// (3), sequence_value (5).
		var opt Optional
		d := decoder{b}
		for len(d.b) > 0 {
			num, _, _, p, err := d.next()
			if err != nil {
				return nil, err
			}
			switch num {
			case 3, 5:
				kind := map[int]string{3: "tensor", 5: "sequence"}[int(num)]
				v, err := decodeValuePB(p, kind)
				if err != nil {
					return nil, err
				}
				opt.Value = v
			case 4, 6, 7:
				return nil, &DTypeError{Type: fmt.Sprintf("OptionalProto field %d", num)}
			}
		}
		return opt, nil
	}
	return nil, &DTypeError{Type: "value kind " + kind}
}

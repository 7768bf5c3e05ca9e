package nn

import (
	"fmt"

	"github.com/emberml/ember/tensor"
)

// ToDevice moves the module m to device d with one call, as PyTorch's
// module.to(device): every parameter (with its gradient, if it has one) and
// every buffer (BatchNorm's running statistics, ...) of m and its
// sub-modules is moved in place. Nothing is replaced: the *autograd.Var
// parameters and the buffer tensors keep their identity, requires-grad flag,
// shape and dtype, and every view of their storage moves with them, so
// references held elsewhere (a layer's fields, an optimizer's parameter
// list) follow.
//
// An optimizer may therefore be built before or after the move, but it
// must not have stepped before it: optimizer state (momentum buffers, Adam
// moments) is created on the parameter's device at the first step and is
// not moved by ToDevice. Build the model, move it, then build and step the
// optimizer, as PyTorch recommends.
//
// ToDevice returns an error, having moved nothing, when d's backend is not
// available (a "cuda" device in a build without -tags cuda, or no GPU).
// Tensors the module creates while running follow their input's device,
// so inputs must be moved to d too.
func ToDevice(m Module, d tensor.Device) error {
	if _, err := tensor.BackendFor(d); err != nil {
		return fmt.Errorf("nn.ToDevice: %w", err)
	}
	var ts []*tensor.Tensor
	for _, p := range m.NamedParameters() {
		ts = append(ts, p.Param.Value())
		if g := p.Param.Grad(); g != nil {
			ts = append(ts, g)
		}
	}
	for _, b := range m.NamedBuffers() {
		ts = append(ts, b.Buffer)
	}
	for _, t := range ts {
		if err := t.MoveStorageTo(d); err != nil {
			return fmt.Errorf("nn.ToDevice: %w", err)
		}
	}
	return nil
}

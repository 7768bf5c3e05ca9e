package nn

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/emberml/ember/tensor"
)

// StateDict returns the module's parameters and buffers by dotted name, as
// torch.nn.Module.state_dict: the tensors are the module's own (not copies),
// so they change when the module trains. Clone them to keep a snapshot.
func StateDict(m Module) map[string]*tensor.Tensor {
	sd := make(map[string]*tensor.Tensor)
	for _, p := range m.NamedParameters() {
		sd[p.Name] = p.Param.Value()
	}
	for _, b := range m.NamedBuffers() {
		sd[b.Name] = b.Buffer
	}
	return sd
}

// StateDictKeys returns the names of the module's state dict in PyTorch's
// order: each module's own parameters, then its own buffers, then its
// children's entries, depth first in registration order. Modules that do
// not expose their children (no Children method) list all parameters, then
// all buffers.
func StateDictKeys(m Module) []string {
	return appendStateKeys(nil, "", m)
}

func appendStateKeys(keys []string, prefix string, m Module) []string {
	parent, ok := m.(interface{ Children() []NamedModule })
	if !ok {
		for _, p := range m.NamedParameters() {
			keys = append(keys, prefix+p.Name)
		}
		for _, b := range m.NamedBuffers() {
			keys = append(keys, prefix+b.Name)
		}
		return keys
	}
	for _, p := range m.NamedParameters() {
		if !strings.Contains(p.Name, ".") {
			keys = append(keys, prefix+p.Name)
		}
	}
	for _, b := range m.NamedBuffers() {
		if !strings.Contains(b.Name, ".") {
			keys = append(keys, prefix+b.Name)
		}
	}
	for _, c := range parent.Children() {
		keys = appendStateKeys(keys, prefix+c.Name+".", c.Module)
	}
	return keys
}

// StateDictError reports why LoadStateDict refused a state dict. Missing
// and Unexpected are only reported (and only fatal) in strict mode; shape
// and dtype mismatches always are.
type StateDictError struct {
	// Missing lists the module's keys that the state dict lacks.
	Missing []string
	// Unexpected lists the state dict's keys that the module lacks.
	Unexpected []string
	// Mismatched describes entries whose shape or dtype differ from the
	// module's.
	Mismatched []string
}

// Error lists every problem found.
func (e *StateDictError) Error() string {
	var parts []string
	if len(e.Missing) > 0 {
		parts = append(parts, fmt.Sprintf("missing keys: %s", strings.Join(quoteAll(e.Missing), ", ")))
	}
	if len(e.Unexpected) > 0 {
		parts = append(parts, fmt.Sprintf("unexpected keys: %s", strings.Join(quoteAll(e.Unexpected), ", ")))
	}
	if len(e.Mismatched) > 0 {
		parts = append(parts, "mismatches: "+strings.Join(e.Mismatched, "; "))
	}
	return "nn.LoadStateDict: " + strings.Join(parts, "; ")
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

// LoadStateDict copies the tensors of sd into the module's parameters and
// buffers of the same name, in place, as torch's load_state_dict. Shapes and
// dtypes must match exactly. With strict, the key sets must also match;
// without it, keys present on only one side are skipped. Everything is
// checked before anything is copied: on error (a *StateDictError) the
// module is unchanged.
func LoadStateDict(m Module, sd map[string]*tensor.Tensor, strict bool) error {
	type target struct {
		name string
		dst  *tensor.Tensor
	}
	var targets []target
	for _, p := range m.NamedParameters() {
		targets = append(targets, target{p.Name, p.Param.Value()})
	}
	for _, b := range m.NamedBuffers() {
		targets = append(targets, target{b.Name, b.Buffer})
	}
	e := &StateDictError{}
	known := make(map[string]bool, len(targets))
	type copyOp struct{ dst, src *tensor.Tensor }
	var copies []copyOp
	for _, t := range targets {
		known[t.name] = true
		src, ok := sd[t.name]
		if !ok {
			e.Missing = append(e.Missing, t.name)
			continue
		}
		switch {
		case src == nil:
			e.Mismatched = append(e.Mismatched, fmt.Sprintf("%q is nil in the state dict", t.name))
			continue
		case !slices.Equal(src.Shape(), t.dst.Shape()):
			e.Mismatched = append(e.Mismatched, fmt.Sprintf("%q has shape %v in the state dict, %v in the module", t.name, src.Shape(), t.dst.Shape()))
			continue
		case src.DType() != t.dst.DType():
			e.Mismatched = append(e.Mismatched, fmt.Sprintf("%q has dtype %s in the state dict, %s in the module", t.name, src.DType(), t.dst.DType()))
			continue
		}
		if src.Device() != t.dst.Device() {
			moved, err := src.ToDevice(t.dst.Device())
			if err != nil {
				e.Mismatched = append(e.Mismatched, fmt.Sprintf("%q: %v", t.name, err))
				continue
			}
			src = moved
		}
		copies = append(copies, copyOp{t.dst, src})
	}
	for name := range sd {
		if !known[name] {
			e.Unexpected = append(e.Unexpected, name)
		}
	}
	sort.Strings(e.Unexpected)
	if !strict {
		e.Missing, e.Unexpected = nil, nil
	}
	if len(e.Missing)+len(e.Unexpected)+len(e.Mismatched) > 0 {
		return e
	}
	for _, c := range copies {
		c.dst.CopyFrom(c.src)
	}
	return nil
}

// AsStateDictError unwraps err to a *StateDictError, if it holds one.
func AsStateDictError(err error) (*StateDictError, bool) {
	var e *StateDictError
	ok := errors.As(err, &e)
	return e, ok
}

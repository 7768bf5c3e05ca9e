package nn

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/emberml/ember/autograd"
)

// Sequential chains modules: Forward feeds each one's output to the next.
// The modules are registered as sub-modules named "0", "1", ..., so their
// parameters are named "0.weight", "2.bias" and so on, as in
// torch.nn.Sequential.
type Sequential struct {
	Base
	layers []Module
}

// NewSequential returns a Sequential of the given modules.
func NewSequential(layers ...Module) *Sequential {
	s := &Sequential{}
	for _, m := range layers {
		s.Append(m)
	}
	return s
}

// Append adds m at the end, named by its index, and returns s.
func (s *Sequential) Append(m Module) *Sequential {
	s.RegisterModule(strconv.Itoa(len(s.layers)), m)
	s.layers = append(s.layers, m)
	return s
}

// Len returns the number of modules.
func (s *Sequential) Len() int { return len(s.layers) }

// At returns the i-th module.
func (s *Sequential) At(i int) Module {
	if i < 0 || i >= len(s.layers) {
		panic(fmt.Sprintf("nn.Sequential.At: index %d out of range for %d modules", i, len(s.layers)))
	}
	return s.layers[i]
}

// Forward applies the modules in order (through Call, so their forward
// hooks run).
func (s *Sequential) Forward(x *autograd.Var) *autograd.Var {
	for _, m := range s.layers {
		x = Call(m, x)
	}
	return x
}

// String lists the modules as PyTorch prints a Sequential.
func (s *Sequential) String() string {
	var b strings.Builder
	b.WriteString("Sequential(\n")
	for i, m := range s.layers {
		desc := fmt.Sprintf("%T", m)
		if st, ok := m.(fmt.Stringer); ok {
			desc = st.String()
		}
		desc = strings.ReplaceAll(desc, "\n", "\n  ")
		fmt.Fprintf(&b, "  (%d): %s\n", i, desc)
	}
	b.WriteString(")")
	return b.String()
}

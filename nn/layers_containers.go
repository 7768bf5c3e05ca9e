package nn

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/emberml/ember/autograd"
)

// ModuleList holds sub-modules in a list, registered as "0", "1", ... so
// their parameters are named "0.weight" (and "layers.0.weight" when the list
// is registered as "layers"), as torch.nn.ModuleList. It has no Forward of
// its own: iterate over it in the parent's Forward.
type ModuleList struct {
	Base
	modules []Module
}

// NewModuleList returns a list of the given modules.
func NewModuleList(modules ...Module) *ModuleList {
	l := &ModuleList{}
	for _, m := range modules {
		l.Append(m)
	}
	return l
}

// Append adds m at the end and returns l.
func (l *ModuleList) Append(m Module) *ModuleList {
	l.RegisterModule(strconv.Itoa(len(l.modules)), m)
	l.modules = append(l.modules, m)
	return l
}

// Len returns the number of modules.
func (l *ModuleList) Len() int { return len(l.modules) }

// At returns the i-th module; negative i counts from the end.
func (l *ModuleList) At(i int) Module {
	j := i
	if j < 0 {
		j += len(l.modules)
	}
	if j < 0 || j >= len(l.modules) {
		panic(fmt.Sprintf("nn.ModuleList.At: index %d out of range for %d modules", i, len(l.modules)))
	}
	return l.modules[j]
}

// Modules returns the modules in order.
func (l *ModuleList) Modules() []Module { return append([]Module(nil), l.modules...) }

// Forward panics: a ModuleList is a container, not a layer.
func (l *ModuleList) Forward(*autograd.Var) *autograd.Var {
	panic("nn.ModuleList.Forward: a ModuleList has no Forward; call its modules from the parent's Forward (or use Sequential)")
}

// String lists the modules as PyTorch prints a ModuleList.
func (l *ModuleList) String() string { return containerString("ModuleList", l.Children()) }

// containerString prints a container's children as PyTorch does.
func containerString(name string, children []NamedModule) string {
	if len(children) == 0 {
		return name + "()"
	}
	var b strings.Builder
	b.WriteString(name + "(\n")
	for _, c := range children {
		desc := fmt.Sprintf("%T", c.Module)
		if st, ok := c.Module.(fmt.Stringer); ok {
			desc = st.String()
		}
		desc = strings.ReplaceAll(desc, "\n", "\n  ")
		fmt.Fprintf(&b, "  (%s): %s\n", c.Name, desc)
	}
	b.WriteString(")")
	return b.String()
}

// ModuleDict holds named sub-modules in insertion order, as
// torch.nn.ModuleDict: a module stored under "enc" has its parameters named
// "enc.weight". It has no Forward of its own.
type ModuleDict struct {
	Base
	index map[string]Module
}

// NewModuleDict returns an empty ModuleDict.
func NewModuleDict() *ModuleDict { return &ModuleDict{index: map[string]Module{}} }

// Set stores m under name (a new name goes last; an existing one is
// replaced in place) and returns d.
func (d *ModuleDict) Set(name string, m Module) *ModuleDict {
	if d.index == nil {
		d.index = map[string]Module{}
	}
	if _, ok := d.index[name]; ok {
		if m == nil {
			panic(fmt.Sprintf("nn.ModuleDict.Set: module %q is nil", name))
		}
		for i, c := range d.children {
			if c.Name == name {
				d.children[i].Module = m
			}
		}
	} else {
		d.RegisterModule(name, m)
	}
	d.index[name] = m
	return d
}

// Get returns the module stored under name and whether there is one.
func (d *ModuleDict) Get(name string) (Module, bool) {
	m, ok := d.index[name]
	return m, ok
}

// Keys returns the names in insertion order.
func (d *ModuleDict) Keys() []string {
	keys := make([]string, len(d.children))
	for i, c := range d.children {
		keys[i] = c.Name
	}
	return keys
}

// Len returns the number of modules.
func (d *ModuleDict) Len() int { return len(d.children) }

// Forward panics: a ModuleDict is a container, not a layer.
func (d *ModuleDict) Forward(*autograd.Var) *autograd.Var {
	panic("nn.ModuleDict.Forward: a ModuleDict has no Forward; call its modules from the parent's Forward")
}

// String lists the modules as PyTorch prints a ModuleDict.
func (d *ModuleDict) String() string { return containerString("ModuleDict", d.Children()) }

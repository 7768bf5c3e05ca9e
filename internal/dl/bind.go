//go:build cuda

package dl

import (
	"fmt"
	"strings"

	"github.com/ebitengine/purego"
)

// Symbol is one C function to bind: Fptr points at a Go func variable that
// Bind fills (with purego.RegisterFunc) with a call of the function Name.
type Symbol struct {
	Name string
	Fptr any
}

// Bind resolves every symbol with lookup and binds it. A symbol lookup
// cannot find (an error or a zero address) is left unbound, and the error
// names every one missing.
func Bind(syms []Symbol, lookup func(name string) (uintptr, error)) error {
	var missing []string
	for _, s := range syms {
		addr, err := lookup(s.Name)
		if err != nil || addr == 0 {
			missing = append(missing, s.Name)
			continue
		}
		purego.RegisterFunc(s.Fptr, addr)
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing symbols %s", strings.Join(missing, ", "))
	}
	return nil
}

// OpenAndBind opens spec as Open does (companions first) and binds syms
// from the library found. A library not found gives Open's *Error; a
// missing symbol gives an error naming the library, the path it was opened
// by and every symbol missing.
func OpenAndBind(o Opener, env Env, spec Spec, syms []Symbol) (Library, error) {
	lib, err := Open(o, env, spec)
	if err != nil {
		return Library{}, err
	}
	if err := Bind(syms, func(name string) (uintptr, error) { return purego.Dlsym(lib.Handle, name) }); err != nil {
		return Library{}, fmt.Errorf("%s at %s: %w", spec.Name, lib.Path, err)
	}
	return lib, nil
}

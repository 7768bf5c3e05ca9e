//go:build cuda && linux

package dl

import (
	"errors"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBind(t *testing.T) {
	var f, g func(x int32) int32
	syms := []Symbol{{Name: "f", Fptr: &f}, {Name: "g", Fptr: &g}}
	tests := []struct {
		name    string
		lookup  func(string) (uintptr, error)
		missing string // "" when every symbol binds
	}{
		{"all found", func(string) (uintptr, error) { return 1, nil }, ""},
		{"lookup error", func(n string) (uintptr, error) {
			if n == "g" {
				return 0, errors.New("undefined symbol")
			}
			return 1, nil
		}, "missing symbols g"},
		{"zero address", func(string) (uintptr, error) { return 0, nil }, "missing symbols f, g"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, g = nil, nil
			err := Bind(syms, tt.lookup)
			if tt.missing == "" {
				require.NoError(t, err)
				assert.NotNil(t, f)
				assert.NotNil(t, g)
				return
			}
			require.EqualError(t, err, tt.missing)
		})
	}
}

// libc is a library every Linux system has, opened by the system loader.
var libc = Spec{Name: "libc", Sonames: []string{"libc.so.6"}}

func dlopenNow() Opener {
	return OpenerFunc(func(p string) (uintptr, error) { return purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL) })
}

func TestOpenAndBind(t *testing.T) {
	env := Env{Root: t.TempDir(), Glob: func(string) ([]string, error) { return nil, nil }}

	var strlen func(s *byte) uintptr
	lib, err := OpenAndBind(dlopenNow(), env, libc, []Symbol{{Name: "strlen", Fptr: &strlen}})
	require.NoError(t, err)
	assert.Equal(t, "libc.so.6", lib.Path)
	s := []byte("ember\x00")
	assert.Equal(t, uintptr(5), strlen(&s[0]))

	var none func()
	_, err = OpenAndBind(dlopenNow(), env, libc, []Symbol{{Name: "strlen", Fptr: &strlen}, {Name: "ember_no_such_symbol", Fptr: &none}})
	require.EqualError(t, err, "libc at libc.so.6: missing symbols ember_no_such_symbol")

	_, err = OpenAndBind(OpenerFunc(func(string) (uintptr, error) { return 0, errors.New("refused") }), env, libc, nil)
	require.ErrorIs(t, err, ErrNotFound)
}

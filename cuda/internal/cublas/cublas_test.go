//go:build cuda

package cublas

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/dl"
)

func opener() dl.Opener {
	return dl.OpenerFunc(func(p string) (uintptr, error) { return purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL) })
}

// TestBindSignatures registers every binding against a dummy address, so
// purego checks each signature (the batched GEMMs use all 15 argument
// slots it has) without calling it.
func TestBindSignatures(t *testing.T) {
	l := &Library{}
	require.NoError(t, dl.Bind(l.symbols(), func(string) (uintptr, error) { return 1, nil }))
	assert.NotNil(t, l.cublasSgemmBatched)
	assert.NotNil(t, l.cublasDgemmBatched)
}

func TestBindMissing(t *testing.T) {
	l := &Library{}
	err := dl.Bind(l.symbols(), func(name string) (uintptr, error) {
		if name == "cublasDgemmBatched" {
			return 0, errors.New("undefined")
		}
		return 1, nil
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cublasDgemmBatched")
}

func TestSpecCompanions(t *testing.T) {
	s := Spec()
	assert.Equal(t, []string{"libcublasLt.so.12"}, s.Companions("libcublas.so.12"))
	assert.Equal(t, "libcublas.so.13", s.Sonames[0])
}

func TestLoadMissing(t *testing.T) {
	o := dl.OpenerFunc(func(p string) (uintptr, error) { return 0, errors.New("refused by the test") })
	env := dl.Env{LDLibraryPath: t.TempDir(), Root: t.TempDir(), Glob: func(string) ([]string, error) { return nil, nil }}
	_, err := Load(o, env)
	require.ErrorIs(t, err, dl.ErrNotFound)
	assert.Contains(t, err.Error(), "libcublas.so.13: refused by the test")
}

// TestRealLibrary loads whatever cuBLAS this machine has and asks its
// version, which needs no device.
func TestRealLibrary(t *testing.T) {
	l, err := Load(opener(), dl.OSEnv())
	if err != nil {
		t.Skipf("no cuBLAS here: %v", err)
	}
	major, minor, patch, err := l.Version()
	require.NoError(t, err)
	t.Logf("cuBLAS %d.%d.%d from %s", major, minor, patch, l.Path)
	assert.Contains(t, []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}, filepath.Base(l.Path))
	assert.GreaterOrEqual(t, major, 11)
}

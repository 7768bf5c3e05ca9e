//go:build cuda

package driver

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/dl"
)

// TestBindSignatures registers every binding against a dummy address:
// purego checks each Go signature (argument kinds, register and stack
// counts) without calling it.
func TestBindSignatures(t *testing.T) {
	d := &Driver{}
	require.NoError(t, bindSymbols(d.symbols(), func(string) (uintptr, error) { return 1, nil }))
	assert.NotNil(t, d.cuLaunchKernel)
	assert.NotNil(t, d.cuEventDestroy)
}

func TestBindFallbackAndMissing(t *testing.T) {
	d := &Driver{}
	seen := map[string]bool{}
	err := bindSymbols(d.symbols(), func(name string) (uintptr, error) {
		seen[name] = true
		if name == "cuEventElapsedTime_v2" || name == "cuLaunchKernel" {
			return 0, errors.New("undefined symbol")
		}
		return 1, nil
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cuLaunchKernel")
	assert.NotContains(t, err.Error(), "cuEventElapsedTime")
	assert.True(t, seen["cuEventElapsedTime"], "falls back to the unversioned symbol")
	assert.NotNil(t, d.cuEventElapsedTime)
}

func TestLoadMissingLibrary(t *testing.T) {
	dir := t.TempDir()
	// An unloadable file where libcuda is expected: the error must list it.
	bogus := filepath.Join(dir, "libcuda.so.1")
	require.NoError(t, os.WriteFile(bogus, []byte("not an ELF file"), 0o644))
	env := dl.Env{LDLibraryPath: dir, Root: t.TempDir(), Glob: func(string) ([]string, error) { return nil, nil }}
	// Refuse the bare sonames so the loader's own search cannot find a
	// libcuda installed on this machine.
	real := Opener()
	o := dl.OpenerFunc(func(p string) (uintptr, error) {
		if filepath.Base(p) == p {
			return 0, errors.New("refused by the test")
		}
		return real.Open(p)
	})
	_, err := load(o, env)
	require.ErrorIs(t, err, ErrNoDevice)
	assert.True(t, IsNoDevice(err))
	assert.Contains(t, err.Error(), bogus)
	assert.Contains(t, err.Error(), "refused by the test")
}

// TestRealDriver runs against whatever libcuda this machine has. Without
// a GPU, cuInit must fail with an error wrapping ErrNoDevice.
func TestRealDriver(t *testing.T) {
	d, err := Load(dl.OSEnv())
	if err != nil {
		require.ErrorIs(t, err, ErrNoDevice)
		t.Skipf("no libcuda here: %v", err)
	}
	v, err := d.Version()
	require.NoError(t, err)
	assert.Greater(t, v, 0)
	t.Logf("libcuda %s, CUDA %d", d.Path, v)
	if err := d.Init(); err != nil {
		t.Logf("cuInit: %v", err)
		require.ErrorIs(t, err, ErrNoDevice)
		var de *Error
		require.ErrorAs(t, err, &de)
		assert.NotEmpty(t, de.Message)
		return
	}
	n, err := d.DeviceCount()
	require.NoError(t, err)
	t.Logf("%d devices", n)
}

func TestCheckUsesBuiltinNamesWithoutLibrary(t *testing.T) {
	d := &Driver{}
	require.NoError(t, d.check("cuInit", Success))
	err := d.check("cuMemAlloc_v2", ErrorOutOfMemory)
	require.ErrorIs(t, err, ErrOutOfMemory)
	assert.Equal(t, "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)", err.Error())
}

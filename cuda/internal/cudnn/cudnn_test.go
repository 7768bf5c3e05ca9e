//go:build cuda

package cudnn

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ebitengine/purego"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/dl"
)

// TestBindSignatures registers every binding against a dummy address, so
// purego checks each signature (at most 15 arguments, supported types)
// without calling it.
func TestBindSignatures(t *testing.T) {
	l := &Library{}
	syms := l.symbols()
	require.NoError(t, dl.Bind(syms, func(string) (uintptr, error) { return 1, nil }))
	for _, s := range syms {
		f := reflect.ValueOf(s.Fptr).Elem()
		assert.False(t, f.IsNil(), s.Name)
		assert.LessOrEqual(t, f.Type().NumIn(), 15, "%s: purego passes at most 15 arguments", s.Name)
	}
	assert.Len(t, syms, reflect.TypeOf(Library{}).NumField()-3, "every function field is bound")
}

// TestArgumentOrder pins the parameter lists of the bindings to the C
// prototypes of cudnn_ops.h and cudnn_cnn.h (kinds in order).
func TestArgumentOrder(t *testing.T) {
	l := &Library{}
	kinds := func(f any) []reflect.Kind {
		typ := reflect.TypeOf(f)
		var ks []reflect.Kind
		for i := range typ.NumIn() {
			ks = append(ks, typ.In(i).Kind())
		}
		return ks
	}
	const (
		u   = reflect.Uintptr
		i32 = reflect.Int32
		u64 = reflect.Uint64
		ptr = reflect.Pointer
		up  = reflect.UnsafePointer
	)
	cases := []struct {
		name string
		f    any
		want []reflect.Kind
	}{
		// (desc, format, dataType, n, c, h, w)
		{"cudnnSetTensor4dDescriptor", l.cudnnSetTensor4dDescriptor, []reflect.Kind{u, i32, i32, i32, i32, i32, i32}},
		// (desc, dataType, format, k, c, h, w)
		{"cudnnSetFilter4dDescriptor", l.cudnnSetFilter4dDescriptor, []reflect.Kind{u, i32, i32, i32, i32, i32, i32}},
		// (desc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode, computeType)
		{"cudnnSetConvolution2dDescriptor", l.cudnnSetConvolution2dDescriptor, []reflect.Kind{u, i32, i32, i32, i32, i32, i32, i32, i32}},
		// (handle, a, b, conv, out, requestedAlgoCount, *returnedAlgoCount, *perfResults)
		{"cudnnGetConvolutionForwardAlgorithm_v7", l.cudnnGetConvolutionForwardAlgorithm_v7, []reflect.Kind{u, u, u, u, u, i32, ptr, ptr}},
		// (handle, a, b, conv, out, algo, *sizeInBytes)
		{"cudnnGetConvolutionBackwardFilterWorkspaceSize", l.cudnnGetConvolutionBackwardFilterWorkspaceSize, []reflect.Kind{u, u, u, u, u, i32, ptr}},
		// (handle, alpha, aDesc, a, bDesc, b, conv, algo, workSpace, workSpaceSizeInBytes, beta, outDesc, out)
		{"cudnnConvolutionForward", l.cudnnConvolutionForward, []reflect.Kind{u, up, u, u64, u, u64, u, i32, u64, u64, up, u, u64}},
		{"cudnnConvolutionBackwardData", l.cudnnConvolutionBackwardData, []reflect.Kind{u, up, u, u64, u, u64, u, i32, u64, u64, up, u, u64}},
		{"cudnnConvolutionBackwardFilter", l.cudnnConvolutionBackwardFilter, []reflect.Kind{u, up, u, u64, u, u64, u, i32, u64, u64, up, u, u64}},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, kinds(c.f), c.name)
	}
	// The query order of each direction: (x, w → y), (w, dy → dx), (x, dy → dw).
	p := &Plan{x: 1, y: 2, w: 3, conv: 4}
	for d, want := range map[Direction][3]uintptr{Forward: {1, 3, 2}, BackwardData: {3, 2, 1}, BackwardFilter: {1, 2, 3}} {
		p.Key.Dir = d
		a, b, out := p.operands()
		assert.Equal(t, want, [3]uintptr{a, b, out}, d.String())
	}
}

func TestBindMissing(t *testing.T) {
	l := &Library{}
	err := dl.Bind(l.symbols(), func(name string) (uintptr, error) {
		if name == "cudnnConvolutionBackwardFilter" {
			return 0, errors.New("undefined")
		}
		return 1, nil
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cudnnConvolutionBackwardFilter")
}

func TestLoadMissing(t *testing.T) {
	o := dl.OpenerFunc(func(p string) (uintptr, error) { return 0, errors.New("refused by the test") })
	env := dl.Env{LDLibraryPath: t.TempDir(), Root: t.TempDir(), Glob: func(string) ([]string, error) { return nil, nil }}
	_, err := Load(o, env)
	require.ErrorIs(t, err, dl.ErrNotFound)
	assert.Contains(t, err.Error(), "libcudnn.so.9: refused by the test")
	assert.Contains(t, err.Error(), "libcudnn.so.8: refused by the test")
}

// TestLoadOpensSubLibrariesFirst lays out a pip wheel's nvidia/cudnn/lib
// folder and checks that the sub-libraries there are opened, by full path
// and in order, before the front library.
func TestLoadOpensSubLibrariesFirst(t *testing.T) {
	root := t.TempDir()
	lib := filepath.Join(root, "usr/local/lib/python3.12/dist-packages/nvidia/cudnn/lib")
	require.NoError(t, os.MkdirAll(lib, 0o755))
	files := append([]string{"libcudnn.so.9"}, Companions("libcudnn.so.9")...)
	for _, f := range files {
		require.NoError(t, os.WriteFile(filepath.Join(lib, f), nil, 0o644))
	}
	var opened []string
	o := dl.OpenerFunc(func(p string) (uintptr, error) {
		opened = append(opened, p)
		return 0, errors.New("refused by the test")
	})
	_, err := Load(o, dl.Env{Root: root})
	require.ErrorIs(t, err, dl.ErrNotFound)
	var want []string
	for _, f := range Companions("libcudnn.so.9") {
		want = append(want, filepath.Join(lib, f))
	}
	want = append(want, filepath.Join(lib, "libcudnn.so.9"))
	require.GreaterOrEqual(t, len(opened), len(want))
	assert.Equal(t, want, opened[:len(want)])
}

// TestRealLibrary loads whatever cuDNN this machine has and asks its
// version, which needs no device.
func TestRealLibrary(t *testing.T) {
	o := dl.OpenerFunc(func(p string) (uintptr, error) { return purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL) })
	l, err := Load(o, dl.OSEnv())
	if err != nil {
		t.Skipf("no cuDNN here: %v", err)
	}
	t.Logf("cuDNN %s (%d) from %s", l.VersionString(), l.Version, l.Path)
	assert.Contains(t, []int{8, 9}, l.Major())
	assert.Equal(t, "CUDNN_STATUS_SUCCESS", l.cudnnGetErrorString(0))
}

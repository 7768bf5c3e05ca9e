package dl

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeOpener succeeds for the paths in ok and records every call.
type fakeOpener struct {
	ok    map[string]bool
	calls []string
}

func (f *fakeOpener) Open(path string) (uintptr, error) {
	f.calls = append(f.calls, path)
	if f.ok[path] {
		return uintptr(len(f.calls)), nil
	}
	return 0, errors.New("cannot open shared object file")
}

// tree creates the files (relative paths) under a fresh temporary folder.
func tree(t *testing.T, files ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range files {
		p := filepath.Join(root, f)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, nil, 0o644))
	}
	return root
}

var cublasSpec = Spec{
	Name:    "cuBLAS",
	Sonames: []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"},
	Companions: func(s string) []string {
		return []string{"libcublasLt" + s[len("libcublas"):]}
	},
}

func TestOpenSearchOrder(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		env   func(root string) Env
		ok    []string // paths (relative to root unless bare) the opener accepts
		want  string   // path expected to be opened (relative to root unless bare)
	}{
		{
			name:  "LD_LIBRARY_PATH first, in its own order",
			files: []string{"a/libcublas.so.12", "b/libcublas.so.13", "usr/local/cuda/lib64/libcublas.so.13"},
			env: func(r string) Env {
				return Env{LDLibraryPath: filepath.Join(r, "a") + ":" + filepath.Join(r, "b"), Root: r}
			},
			ok:   []string{"a/libcublas.so.12", "b/libcublas.so.13", "usr/local/cuda/lib64/libcublas.so.13"},
			want: "a/libcublas.so.12",
		},
		{
			name:  "newest soname first within a folder",
			files: []string{"a/libcublas.so.11", "a/libcublas.so.12"},
			env:   func(r string) Env { return Env{LDLibraryPath: filepath.Join(r, "a"), Root: r} },
			ok:    []string{"a/libcublas.so.11", "a/libcublas.so.12"},
			want:  "a/libcublas.so.12",
		},
		{
			name:  "CUDA_HOME lib64 before lib and before /usr/local/cuda",
			files: []string{"cuda/lib/libcublas.so.13", "cuda/lib64/libcublas.so.13", "usr/local/cuda/lib64/libcublas.so.13"},
			env:   func(r string) Env { return Env{CUDAHome: filepath.Join(r, "cuda"), Root: r} },
			ok:    []string{"cuda/lib/libcublas.so.13", "cuda/lib64/libcublas.so.13", "usr/local/cuda/lib64/libcublas.so.13"},
			want:  "cuda/lib64/libcublas.so.13",
		},
		{
			name:  "failed open falls through to the next folder",
			files: []string{"usr/local/cuda/lib64/libcublas.so.13", "usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13"},
			env:   func(r string) Env { return Env{Root: r} },
			ok:    []string{"usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13"},
			want:  "usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13",
		},
		{
			name:  "pip wheel under dist-packages (CUDA 13 layout)",
			files: []string{"usr/local/lib/python3.12/dist-packages/nvidia/cu13/lib/libcublas.so.13"},
			env:   func(r string) Env { return Env{Root: r} },
			ok:    []string{"usr/local/lib/python3.12/dist-packages/nvidia/cu13/lib/libcublas.so.13"},
			want:  "usr/local/lib/python3.12/dist-packages/nvidia/cu13/lib/libcublas.so.13",
		},
		{
			name:  "pip wheel in an /opt virtual environment",
			files: []string{"opt/torch/.venv/lib/python3.11/site-packages/nvidia/cublas/lib/libcublas.so.12"},
			env:   func(r string) Env { return Env{Root: r} },
			ok:    []string{"opt/torch/.venv/lib/python3.11/site-packages/nvidia/cublas/lib/libcublas.so.12"},
			want:  "opt/torch/.venv/lib/python3.11/site-packages/nvidia/cublas/lib/libcublas.so.12",
		},
		{
			name:  "pip wheel in the user's ~/.local",
			files: []string{"home/u/.local/lib/python3.13/site-packages/nvidia/cublas/lib/libcublas.so.12"},
			env:   func(r string) Env { return Env{Root: r, Home: filepath.Join(r, "home/u")} },
			ok:    []string{"home/u/.local/lib/python3.13/site-packages/nvidia/cublas/lib/libcublas.so.12"},
			want:  "home/u/.local/lib/python3.13/site-packages/nvidia/cublas/lib/libcublas.so.12",
		},
		{
			name:  "pip wheel in /usr/lib/python3/dist-packages",
			files: []string{"usr/lib/python3/dist-packages/nvidia/cublas/lib/libcublas.so.12"},
			env:   func(r string) Env { return Env{Root: r} },
			ok:    []string{"usr/lib/python3/dist-packages/nvidia/cublas/lib/libcublas.so.12"},
			want:  "usr/lib/python3/dist-packages/nvidia/cublas/lib/libcublas.so.12",
		},
		{
			name:  "bare soname last: the system loader's search",
			files: []string{"usr/local/cuda/lib64/libcublas.so.12"},
			env:   func(r string) Env { return Env{Root: r} },
			ok:    []string{"libcublas.so.11"},
			want:  "libcublas.so.11",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tree(t, tt.files...)
			abs := func(p string) string {
				if filepath.Base(p) == p {
					return p
				}
				return filepath.Join(root, p)
			}
			o := &fakeOpener{ok: map[string]bool{}}
			for _, p := range tt.ok {
				o.ok[abs(p)] = true
			}
			lib, err := Open(o, tt.env(root), Spec{Name: "cuBLAS", Sonames: cublasSpec.Sonames})
			require.NoError(t, err)
			assert.Equal(t, abs(tt.want), lib.Path)
			assert.Equal(t, filepath.Base(tt.want), lib.Soname)
			assert.NotZero(t, lib.Handle)
		})
	}
}

func TestOpenCompanionsFirst(t *testing.T) {
	root := tree(t, "w/libcublas.so.13", "w/libcublasLt.so.13")
	dir := filepath.Join(root, "w")
	o := &fakeOpener{ok: map[string]bool{
		filepath.Join(dir, "libcublas.so.13"):   true,
		filepath.Join(dir, "libcublasLt.so.13"): true,
	}}
	lib, err := Open(o, Env{LDLibraryPath: dir, Root: root}, cublasSpec)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "libcublas.so.13"), lib.Path)
	assert.Equal(t, []string{filepath.Join(dir, "libcublasLt.so.13"), filepath.Join(dir, "libcublas.so.13")}, o.calls)
}

func TestOpenCompanionMissingFileSkipped(t *testing.T) {
	root := tree(t, "w/libcublas.so.12")
	dir := filepath.Join(root, "w")
	o := &fakeOpener{ok: map[string]bool{filepath.Join(dir, "libcublas.so.12"): true}}
	_, err := Open(o, Env{LDLibraryPath: dir, Root: root}, cublasSpec)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "libcublas.so.12")}, o.calls)
}

func TestOpenErrorListsEverything(t *testing.T) {
	root := tree(t, "a/libcuda.so.1")
	dir := filepath.Join(root, "a")
	o := &fakeOpener{ok: map[string]bool{}}
	spec := Spec{Name: "libcuda", Sonames: []string{"libcuda.so.1"}}
	_, err := Open(o, Env{LDLibraryPath: dir + ":" + filepath.Join(root, "empty"), Root: root}, spec)
	require.Error(t, err)
	require.ErrorIs(t, err, ErrNotFound)
	var de *Error
	require.ErrorAs(t, err, &de)
	require.Len(t, de.Attempts, 2)
	assert.Equal(t, filepath.Join(dir, "libcuda.so.1"), de.Attempts[0].Path)
	assert.Equal(t, "libcuda.so.1", de.Attempts[1].Path)
	msg := err.Error()
	for _, s := range []string{
		"libcuda", dir, filepath.Join(root, "empty"), filepath.Join(root, "usr/local/cuda/lib64"),
		"cannot open shared object file", filepath.Join(dir, "libcuda.so.1") + ":",
	} {
		assert.Contains(t, msg, s)
	}
}

func TestDirs(t *testing.T) {
	tests := []struct {
		name string
		env  Env
		want []string
	}{
		{
			name: "empty environment: fixed CUDA folders",
			env:  Env{Root: "/r", Glob: func(string) ([]string, error) { return nil, nil }},
			want: []string{"/r/usr/local/cuda/lib64", "/r/usr/local/cuda/targets/x86_64-linux/lib"},
		},
		{
			name: "duplicates and empty entries dropped",
			env: Env{
				LDLibraryPath: "/x::/y/:/x", CUDAHome: "/usr/local/cuda", Glob: func(string) ([]string, error) { return nil, nil },
			},
			want: []string{"/x", "/y", "/usr/local/cuda/lib64", "/usr/local/cuda/lib", "/usr/local/cuda/targets/x86_64-linux/lib"},
		},
		{
			name: "virtual environment wheels",
			env: Env{Root: "/r", VirtualEnv: "/venv", Glob: func(p string) ([]string, error) {
				switch p {
				case "/venv/lib/python3*/site-packages":
					return []string{"/venv/lib/python3.12/site-packages"}, nil
				case "/venv/lib/python3.12/site-packages/nvidia/*/lib":
					return []string{"/venv/lib/python3.12/site-packages/nvidia/cublas/lib", "/venv/lib/python3.12/site-packages/nvidia/cudnn/lib"}, nil
				}
				return nil, nil
			}},
			want: []string{
				"/r/usr/local/cuda/lib64", "/r/usr/local/cuda/targets/x86_64-linux/lib",
				"/venv/lib/python3.12/site-packages/nvidia/cublas/lib", "/venv/lib/python3.12/site-packages/nvidia/cudnn/lib",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.env.Dirs())
		})
	}
}

func TestCandidatesUseExists(t *testing.T) {
	env := Env{
		LDLibraryPath: "/a:/b",
		Root:          "/r",
		Glob:          func(string) ([]string, error) { return nil, nil },
		Exists:        func(p string) bool { return p == "/b/libnccl.so.2" },
	}
	assert.Equal(t, []Candidate{{Dir: "/b", Soname: "libnccl.so.2"}, {Soname: "libnccl.so.2"}}, env.Candidates([]string{"libnccl.so.2"}))
}

func TestOSEnv(t *testing.T) {
	t.Setenv("LD_LIBRARY_PATH", "/l1:/l2")
	t.Setenv("CUDA_HOME", "")
	t.Setenv("CUDA_PATH", "/cp")
	e := OSEnv()
	assert.Equal(t, "/l1:/l2", e.LDLibraryPath)
	assert.Equal(t, "/cp", e.CUDAHome)
}

// Package dl finds and opens NVIDIA's shared libraries (the CUDA driver,
// cuBLAS, cuDNN, NCCL) at run time for the cuda backend and the
// distributed package's NCCL group. It knows where NVIDIA's libraries are
// installed (LD_LIBRARY_PATH, CUDA_HOME, /usr/local/cuda, the lib folders of
// NVIDIA's Python wheels) and falls back to the system loader's own search.
// Opening is delegated to an Opener, so the search is testable without any
// library present.
package dl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Opener opens one shared library by path (or bare soname) and returns its
// handle. The CUDA build implements it with dlopen.
type Opener interface {
	Open(path string) (uintptr, error)
}

// OpenerFunc adapts a function to the Opener interface.
type OpenerFunc func(path string) (uintptr, error)

// Open calls f.
func (f OpenerFunc) Open(path string) (uintptr, error) { return f(path) }

// Env is the part of the process environment the search depends on. Fields
// left empty are skipped; Glob and Exists default to the real file system.
type Env struct {
	LDLibraryPath string // colon-separated, as $LD_LIBRARY_PATH
	CUDAHome      string // $CUDA_HOME (or $CUDA_PATH)
	VirtualEnv    string // $VIRTUAL_ENV
	Home          string // the user's home directory
	// Root is prefixed to the fixed system locations (/usr/local/cuda, the
	// Python folders); empty means "/". Tests point it at a temporary tree.
	Root string
	// Glob expands a filepath.Glob pattern; nil means filepath.Glob.
	Glob func(pattern string) ([]string, error)
	// Exists reports whether a regular file (or a link to one) is at path;
	// nil means os.Stat succeeding on a non-directory.
	Exists func(path string) bool
}

// OSEnv returns the environment of the running process.
func OSEnv() Env {
	home, _ := os.UserHomeDir()
	cudaHome := os.Getenv("CUDA_HOME")
	if cudaHome == "" {
		cudaHome = os.Getenv("CUDA_PATH")
	}
	return Env{
		LDLibraryPath: os.Getenv("LD_LIBRARY_PATH"),
		CUDAHome:      cudaHome,
		VirtualEnv:    os.Getenv("VIRTUAL_ENV"),
		Home:          home,
	}
}

func (e Env) glob(pattern string) []string {
	g := e.Glob
	if g == nil {
		g = filepath.Glob
	}
	m, err := g(pattern)
	if err != nil {
		return nil
	}
	return m
}

func (e Env) exists(path string) bool {
	if e.Exists != nil {
		return e.Exists(path)
	}
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}

func (e Env) sys(p string) string {
	if e.Root == "" {
		return p
	}
	return filepath.Join(e.Root, p)
}

// Dirs returns the folders searched, in order: each entry of
// LD_LIBRARY_PATH, $CUDA_HOME/lib64 and $CUDA_HOME/lib, /usr/local/cuda/lib64,
// /usr/local/cuda/targets/x86_64-linux/lib, then the lib folders of NVIDIA's
// pip wheels (site-packages/nvidia/*/lib) under the Python package folders of
// the system, /opt/*/.venv, $VIRTUAL_ENV and ~/.local. Duplicates are dropped.
func (e Env) Dirs() []string {
	var dirs []string
	seen := map[string]bool{}
	add := func(d string) {
		if d == "" {
			return
		}
		d = filepath.Clean(d)
		if !seen[d] {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	for d := range strings.SplitSeq(e.LDLibraryPath, ":") {
		add(d)
	}
	if e.CUDAHome != "" {
		add(filepath.Join(e.CUDAHome, "lib64"))
		add(filepath.Join(e.CUDAHome, "lib"))
	}
	add(e.sys("/usr/local/cuda/lib64"))
	add(e.sys("/usr/local/cuda/targets/x86_64-linux/lib"))
	var sitePatterns []string
	for _, p := range []string{
		"/usr/lib/python3*/site-packages",
		"/usr/local/lib/python3*/dist-packages",
		"/usr/local/lib/python3*/site-packages",
		"/usr/lib/python3/dist-packages",
		"/opt/*/.venv/lib/python3*/site-packages",
	} {
		sitePatterns = append(sitePatterns, e.sys(p))
	}
	if e.VirtualEnv != "" {
		sitePatterns = append(sitePatterns, filepath.Join(e.VirtualEnv, "lib/python3*/site-packages"))
	}
	if e.Home != "" {
		sitePatterns = append(sitePatterns, filepath.Join(e.Home, ".local/lib/python3*/site-packages"))
	}
	for _, p := range sitePatterns {
		for _, site := range e.glob(p) {
			for _, lib := range e.glob(filepath.Join(site, "nvidia/*/lib")) {
				add(lib)
			}
		}
	}
	return dirs
}

// Spec names a library to open.
type Spec struct {
	// Name is the library's name in messages ("libcuda", "cuBLAS").
	Name string
	// Sonames are the file names to look for, preferred first
	// (libcublas.so.13, libcublas.so.12, ...).
	Sonames []string
	// Companions, if set, lists for a soname the libraries it depends on
	// that should be opened first from the same folder (libcublasLt.so.13
	// for libcublas.so.13), so the loader finds them even when that folder
	// is not on its search path. Failures to open a companion are ignored.
	Companions func(soname string) []string
}

// Attempt records one path tried and why it failed.
type Attempt struct {
	Path string
	Err  error
}

// Error reports that no candidate of a library could be opened. It lists
// every folder searched and every open error.
type Error struct {
	Spec     Spec
	Dirs     []string
	Attempts []Attempt
}

// ErrNotFound is wrapped by every *Error.
var ErrNotFound = errors.New("shared library not found")

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dl: cannot open %s (%s)", e.Spec.Name, strings.Join(e.Spec.Sonames, ", "))
	if len(e.Dirs) > 0 {
		fmt.Fprintf(&b, "; searched %s", strings.Join(e.Dirs, ", "))
	}
	for _, a := range e.Attempts {
		fmt.Fprintf(&b, "; %s: %v", a.Path, a.Err)
	}
	return b.String()
}

// Unwrap returns ErrNotFound.
func (e *Error) Unwrap() error { return ErrNotFound }

// Library is an opened shared library.
type Library struct {
	Handle uintptr
	// Path is the path (or bare soname) it was opened by.
	Path string
	// Soname is the candidate soname that matched.
	Soname string
}

// Candidate is one way to open a library: a file found in a search folder,
// or a bare soname left to the system loader (Dir empty).
type Candidate struct {
	Dir, Soname string
}

// Path is the argument given to the opener.
func (c Candidate) Path() string {
	if c.Dir == "" {
		return c.Soname
	}
	return filepath.Join(c.Dir, c.Soname)
}

// Candidates lists, in the order they are tried, the existing files named
// by one of the sonames in the search folders (folder by folder, each in
// soname preference order), then each bare soname (the loader's own search:
// the ldconfig cache and the default folders).
func (e Env) Candidates(sonames []string) []Candidate {
	var out []Candidate
	for _, d := range e.Dirs() {
		for _, s := range sonames {
			if e.exists(filepath.Join(d, s)) {
				out = append(out, Candidate{Dir: d, Soname: s})
			}
		}
	}
	for _, s := range sonames {
		out = append(out, Candidate{Soname: s})
	}
	return out
}

// Open opens the first candidate of spec that o can open. On failure the
// *Error lists the folders searched and every open error.
func Open(o Opener, env Env, spec Spec) (Library, error) {
	var attempts []Attempt
	for _, c := range env.Candidates(spec.Sonames) {
		if spec.Companions != nil {
			for _, dep := range spec.Companions(c.Soname) {
				dc := Candidate{Dir: c.Dir, Soname: dep}
				if c.Dir != "" && !env.exists(dc.Path()) {
					continue
				}
				_, _ = o.Open(dc.Path()) // best effort: the main open reports real failures
			}
		}
		h, err := o.Open(c.Path())
		if err == nil {
			return Library{Handle: h, Path: c.Path(), Soname: c.Soname}, nil
		}
		attempts = append(attempts, Attempt{Path: c.Path(), Err: err})
	}
	return Library{}, &Error{Spec: spec, Dirs: env.Dirs(), Attempts: attempts}
}

// Package isa decides, in one place, which instruction-set path Ember's CPU
// kernels take. Every kernel family (vec, gemm and its packing routines,
// the convolution, pooling and Winograd kernels of tensor/internal/cpu)
// asks Has before it runs an assembly routine, so one setting moves all of
// them together.
//
// The path is the highest one this CPU and build support, unless the
// EMBER_CPU environment variable asks for a lower one:
//
//	EMBER_CPU=avx512   AVX-512 (F, BW, DQ, VL) kernels where they exist
//	EMBER_CPU=avx2     the AVX2+FMA kernels, never AVX-512
//	EMBER_CPU=neon     the arm64 NEON kernels
//	EMBER_CPU=generic  the pure-Go twins only
//
// EMBER_CPU is read once, the first time a kernel asks (in practice while
// the process starts, as the kernel packages set up their tables), so it
// must be set in the environment of the process, not with os.Setenv later.
// A request above what the machine supports (avx512 on an AVX2 CPU, neon
// on amd64) or a value that names no path is not an error: the path is
// clamped to the best one the machine has, and Note says so. Tools that
// time or test a path print Describe or Note, so a clamped request is seen.
package isa

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

// Path is an instruction-set path of the CPU kernels.
type Path int

// The paths, in the order x86 CPUs add them: a higher x86 path includes the
// lower ones. NEON is the arm64 path and sits beside them, not above.
const (
	// Generic runs only the pure-Go twins.
	Generic Path = iota
	// AVX2 runs the AVX2+FMA kernels (x86-64-v3).
	AVX2
	// AVX512 runs the AVX-512 kernels (F, BW, DQ and VL: x86-64-v4) and,
	// where a family has no AVX-512 kernel, the AVX2 one.
	AVX512
	// NEON runs the arm64 Advanced SIMD kernels.
	NEON
)

// EnvVar is the environment variable that forces a path.
const EnvVar = "EMBER_CPU"

// String returns the path's name as EMBER_CPU spells it.
func (p Path) String() string {
	switch p {
	case Generic:
		return "generic"
	case AVX2:
		return "avx2"
	case AVX512:
		return "avx512"
	case NEON:
		return "neon"
	}
	return fmt.Sprintf("isa.Path(%d)", int(p))
}

// Parse returns the path named s (as String spells it, any case, spaces
// trimmed).
func Parse(s string) (Path, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "generic":
		return Generic, nil
	case "avx2":
		return AVX2, nil
	case "avx512":
		return AVX512, nil
	case "neon":
		return NEON, nil
	}
	return Generic, fmt.Errorf("isa: %s=%q names no path (want avx512, avx2, neon or generic)", EnvVar, s)
}

// Best returns the highest path this CPU and build support, whatever
// EMBER_CPU says. Builds with the purego tag, and architectures without
// assembly kernels, support only Generic.
func Best() Path { return best }

// Supports reports whether this CPU and build can run path p when asked
// to: p is within Best and, where p is not Best, the kernels of this
// architecture honour a forced path.
func Supports(p Path) bool { return p == best || forceable && within(p, best) }

// Supported lists the paths this CPU and build can run when asked to,
// highest first: Best, then the lower paths that can be forced (Generic
// last where it can).
func Supported() []Path {
	var s []Path
	for _, p := range []Path{AVX512, NEON, AVX2, Generic} {
		if Supports(p) {
			s = append(s, p)
		}
	}
	return s
}

// within reports whether path p may run where limit is the path in force:
// p is Generic, p is limit, or both are x86 paths and p is the lower.
func within(p, limit Path) bool {
	switch {
	case p == Generic || p == limit:
		return true
	case p == NEON || limit == NEON:
		return false
	}
	return p < limit
}

// selection is the path in force and what was asked for.
type selection struct {
	path      Path
	requested string // EMBER_CPU as set, "" when unset
	note      string // why the request was not followed, or ""
}

// choose applies an EMBER_CPU value (set reports whether it was set at
// all) to the best path the machine has.
func choose(value string, set bool, best Path, forceable bool) selection {
	if !set || strings.TrimSpace(value) == "" {
		return selection{path: best, requested: value}
	}
	p, err := Parse(value)
	if err != nil {
		return selection{path: best, requested: value, note: err.Error() + "; using " + best.String()}
	}
	if p != best && !(forceable && within(p, best)) {
		return selection{path: best, requested: value,
			note: fmt.Sprintf("isa: %s=%s is not supported by this CPU or build (best: %s); using %s", EnvVar, p, best, best)}
	}
	return selection{path: p, requested: value}
}

// current is the selection, made on first use.
var current = sync.OnceValue(func() selection {
	v, ok := os.LookupEnv(EnvVar)
	return choose(v, ok, best, forceable)
})

// Current returns the path the kernels take: Best, or the lower path
// EMBER_CPU asks for.
func Current() Path { return current().path }

// Has reports whether kernels of path p may run: the current path is p, or
// p is Generic, or both are x86 paths and p is lower than the current one
// (so Has(AVX2) is true on the AVX-512 path).
func Has(p Path) bool { return within(p, current().path) }

// Note explains why EMBER_CPU was not followed (a value that names no path,
// or a path above this CPU's), or is "" when it was followed or unset.
func Note() string { return current().note }

// Requested returns EMBER_CPU as the process had it when the path was
// chosen, or "" when it was unset.
func Requested() string { return current().requested }

// Describe is a one-line account of the path, for benchmark headers:
// "avx2 (EMBER_CPU=avx2; best avx512)", or just "avx512" when nothing was
// forced.
func Describe() string {
	s := current()
	d := s.path.String()
	switch {
	case s.note != "":
		d += " (" + s.note + ")"
	case s.requested != "":
		d += fmt.Sprintf(" (%s=%s; best %s)", EnvVar, s.requested, best)
	}
	return d
}

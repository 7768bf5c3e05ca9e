package tensor

import (
	"fmt"
	"strings"

	"github.com/emberml/ember/tensor/internal/isa"
)

// CPUInfo describes the CPU the process runs on and the instruction path
// the CPU backend's kernels take on it. Benchmarks print it next to their
// figures, so that a reading names the machine and the kernels it measured.
type CPUInfo struct {
	// Model is the CPU's brand string ("AMD EPYC 7763 64-Core Processor"),
	// or "" when the machine does not say.
	Model string
	// Vendor is the x86 CPUID vendor ("GenuineIntel", "AuthenticAMD"), or
	// "" elsewhere.
	Vendor string
	// Path is the instruction path the kernels take: "avx512", "avx2",
	// "neon" or "generic" (the pure-Go twins).
	Path string
	// Best is the highest path this CPU and build support; Path is lower
	// when the EMBER_CPU environment variable asked for a lower one.
	Best string
	// Requested is EMBER_CPU as the process had it, or "" when unset.
	Requested string
	// Note explains why EMBER_CPU was not followed (a value naming no path,
	// or a path the CPU lacks, which is clamped to Best), or is "".
	Note string
	// L1D, L2 and L3 are the cache sizes in bytes (L1D and L2 of one core,
	// L3 as a whole), 0 when unknown.
	L1D, L2, L3 int
}

// HostCPU returns the description of this CPU and of the kernels' path.
// The path is chosen once per process, from the CPU's features and the
// EMBER_CPU environment variable (avx512, avx2, neon or generic), which
// forces a lower path than the best, for tests and timing; it is read when
// the kernels are first set up, so set it in the process's environment.
func HostCPU() CPUInfo {
	info := isa.CPU()
	return CPUInfo{
		Model:     info.Model,
		Vendor:    info.Vendor,
		Path:      isa.Current().String(),
		Best:      isa.Best().String(),
		Requested: isa.Requested(),
		Note:      isa.Note(),
		L1D:       info.Caches.L1D,
		L2:        info.Caches.L2,
		L3:        info.Caches.L3,
	}
}

// String is a one-line account for benchmark headers, such as
// "AMD EPYC 7763 64-Core Processor; kernels avx2 (EMBER_CPU=avx2, best
// avx512); L1d 32 KiB, L2 512 KiB, L3 32 MiB".
func (c CPUInfo) String() string {
	var b strings.Builder
	model := c.Model
	if model == "" {
		model = "unknown CPU"
	}
	fmt.Fprintf(&b, "%s; kernels %s", model, c.Path)
	switch {
	case c.Note != "":
		fmt.Fprintf(&b, " (%s)", c.Note)
	case c.Requested != "":
		fmt.Fprintf(&b, " (EMBER_CPU=%s, best %s)", c.Requested, c.Best)
	}
	var caches []string
	for _, lv := range []struct {
		name string
		size int
	}{{"L1d", c.L1D}, {"L2", c.L2}, {"L3", c.L3}} {
		if lv.size > 0 {
			caches = append(caches, lv.name+" "+byteSize(lv.size))
		}
	}
	if len(caches) > 0 {
		b.WriteString("; " + strings.Join(caches, ", "))
	}
	return b.String()
}

// byteSize writes n bytes in KiB or MiB when it is a whole number of them.
func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

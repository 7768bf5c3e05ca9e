package isa

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Caches holds the data cache sizes of one core, in bytes; a size the
// machine did not report is 0.
type Caches struct {
	L1D int // level-1 data cache of a core
	L2  int // level-2 cache of a core
	L3  int // last-level cache, as a whole
	// L3Sharing is how many logical processors share the L3 (CPUID's
	// count), or 0 when unknown.
	L3Sharing int
	// Source is where the sizes came from: "cpuid", "sysfs" or "" (none).
	Source string
}

// Info describes the CPU the process runs on.
type Info struct {
	Model  string // brand string, such as "AMD EPYC 7763 64-Core Processor"; "" when unknown
	Vendor string // CPUID vendor ("GenuineIntel", "AuthenticAMD"), "" off x86
	Caches Caches
}

// CPU returns the description of this CPU, read once (CPUID on amd64,
// /proc and /sys on Linux elsewhere or for what CPUID lacks).
func CPU() Info { return cpuInfo() }

var cpuInfo = sync.OnceValue(readCPU)

// cleanBrand trims the NUL padding and runs of spaces CPUID brand strings
// carry.
func cleanBrand(b []byte) string {
	b = bytes.TrimRight(b, "\x00")
	return strings.Join(strings.Fields(string(b)), " ")
}

// fillFromOS completes info from Linux's /proc/cpuinfo and
// /sys/devices/system/cpu (a missing file leaves the field as it was).
func fillFromOS(info Info) Info {
	if info.Model == "" {
		info.Model = procModel("/proc/cpuinfo")
	}
	if info.Caches == (Caches{}) {
		info.Caches = sysfsCaches("/sys/devices/system/cpu/cpu0/cache")
	}
	return info
}

// procModel returns the first "model name" (x86) or "Model" (arm64
// boards) line of a /proc/cpuinfo file, or "".
func procModel(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "model name", "Model":
			return strings.TrimSpace(value)
		}
	}
	return ""
}

// sysfsCaches reads the caches of one CPU from its sysfs cache directory
// (index*/level, type and size such as "32K").
func sysfsCaches(dir string) Caches {
	var cs Caches
	entries, _ := filepath.Glob(filepath.Join(dir, "index*"))
	for _, e := range entries {
		read := func(name string) string {
			b, err := os.ReadFile(filepath.Join(e, name))
			if err != nil {
				return ""
			}
			return strings.TrimSpace(string(b))
		}
		kind := read("type")
		if kind != "Data" && kind != "Unified" {
			continue
		}
		size := parseSize(read("size"))
		switch read("level") {
		case "1":
			cs.L1D = size
		case "2":
			cs.L2 = size
		case "3":
			cs.L3 = size
		}
	}
	if cs != (Caches{}) {
		cs.Source = "sysfs"
	}
	return cs
}

// parseSize reads a sysfs cache size ("48K", "2048K", "32M"), or 0.
func parseSize(s string) int {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return n * mult
}

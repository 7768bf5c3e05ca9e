//go:build amd64 && !purego

package isa

import "golang.org/x/sys/cpu"

// forceable is true: the amd64 kernels ask Has before they run, so any
// path up to best can be forced.
const forceable = true

// best is the highest path of this CPU: AVX-512 needs the x86-64-v4 set
// (F, BW, DQ, VL) that every AVX-512 kernel may use, AVX2 needs FMA too.
// golang.org/x/sys/cpu reports a feature only when the OS saves its
// registers.
var best = detect(cpu.X86.HasAVX2 && cpu.X86.HasFMA,
	cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL)

// detect is the best x86 path given the feature sets.
func detect(avx2, avx512 bool) Path {
	switch {
	case avx512 && avx2:
		return AVX512
	case avx2:
		return AVX2
	}
	return Generic
}

// cpuid executes CPUID with EAX = leaf and ECX = subleaf (cpuid_amd64.s).
//
//go:noescape
func cpuid(leaf, subleaf uint32) (eax, ebx, ecx, edx uint32)

// readCPU reads the brand string, vendor and caches with CPUID, falling
// back to the operating system for what CPUID does not give.
func readCPU() Info {
	maxLeaf, b, c, d := cpuid(0, 0)
	info := Info{Vendor: string(regBytes(b, d, c))}
	maxExt, _, _, _ := cpuid(0x80000000, 0)
	if maxExt >= 0x80000004 {
		var brand []byte
		for leaf := uint32(0x80000002); leaf <= 0x80000004; leaf++ {
			a, b, c, d := cpuid(leaf, 0)
			brand = append(brand, regBytes(a, b, c, d)...)
		}
		info.Model = cleanBrand(brand)
	}
	switch {
	case info.Vendor == "GenuineIntel" && maxLeaf >= 4:
		info.Caches = cacheLeaf(4)
	case info.Vendor == "AuthenticAMD" || info.Vendor == "HygonGenuine":
		_, _, extFeatures, _ := cpuid(0x80000001, 0)
		const topologyExtensions = 1 << 22
		if maxExt >= 0x8000001D && extFeatures&topologyExtensions != 0 {
			info.Caches = cacheLeaf(0x8000001D)
		}
		if info.Caches == (Caches{}) && maxExt >= 0x80000006 {
			info.Caches = amdLegacyCaches()
		}
	}
	if info.Caches != (Caches{}) {
		info.Caches.Source = "cpuid"
	}
	return fillFromOS(info)
}

// cacheLeaf walks the deterministic cache parameters of CPUID leaf 4
// (Intel) or 0x8000001D (AMD, same layout): one subleaf per cache until a
// null one.
func cacheLeaf(leaf uint32) Caches {
	var cs Caches
	for sub := uint32(0); sub < 32; sub++ {
		a, b, c, _ := cpuid(leaf, sub)
		kind := a & 0x1f // 0 none, 1 data, 2 instruction, 3 unified
		if kind == 0 {
			break
		}
		if kind == 2 {
			continue
		}
		level := (a >> 5) & 7
		ways := int(b>>22) + 1
		partitions := int((b>>12)&0x3ff) + 1
		line := int(b&0xfff) + 1
		sets := int(c) + 1
		size := ways * partitions * line * sets
		sharing := int((a>>14)&0xfff) + 1
		switch level {
		case 1:
			cs.L1D = size
		case 2:
			cs.L2 = size
		case 3:
			cs.L3, cs.L3Sharing = size, sharing
		}
	}
	return cs
}

// amdLegacyCaches reads the L1d, L2 and L3 sizes from AMD's older leaves
// 0x80000005 and 0x80000006.
func amdLegacyCaches() Caches {
	_, _, l1, _ := cpuid(0x80000005, 0)
	_, _, l2, l3 := cpuid(0x80000006, 0)
	return Caches{
		L1D: int(l1>>24) << 10,
		L2:  int(l2>>16) << 10,
		L3:  int(l3>>18) << 19,
	}
}

// regBytes is the registers' bytes in order, little-endian, as CPUID lays
// out strings.
func regBytes(regs ...uint32) []byte {
	out := make([]byte, 0, 4*len(regs))
	for _, r := range regs {
		out = append(out, byte(r), byte(r>>8), byte(r>>16), byte(r>>24))
	}
	return out
}

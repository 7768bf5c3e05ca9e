package isa

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChoose(t *testing.T) {
	cases := []struct {
		name      string
		value     string
		set       bool
		best      Path
		forceable bool
		want      Path
		noted     bool
	}{
		{"unset", "", false, AVX512, true, AVX512, false},
		{"empty", " ", true, AVX2, true, AVX2, false},
		{"lower", "avx2", true, AVX512, true, AVX2, false},
		{"generic", "generic", true, AVX512, true, Generic, false},
		{"same", "AVX512", true, AVX512, true, AVX512, false},
		{"case and spaces", " Avx2 ", true, AVX512, true, AVX2, false},
		{"above the CPU", "avx512", true, AVX2, true, AVX2, true},
		{"other architecture", "neon", true, AVX512, true, AVX512, true},
		{"x86 on arm64", "avx2", true, NEON, false, NEON, true},
		{"generic not forceable", "generic", true, NEON, false, NEON, true},
		{"unknown name", "sse4", true, AVX2, true, AVX2, true},
		{"generic machine", "avx2", true, Generic, true, Generic, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := choose(c.value, c.set, c.best, c.forceable)
			assert.Equal(t, c.want, s.path)
			assert.Equal(t, c.value, s.requested)
			if c.noted {
				assert.Contains(t, s.note, EnvVar)
				assert.Contains(t, s.note, "using "+c.best.String())
			} else {
				assert.Empty(t, s.note)
			}
		})
	}
}

func TestWithin(t *testing.T) {
	assert.True(t, within(Generic, AVX512))
	assert.True(t, within(AVX2, AVX512))
	assert.True(t, within(AVX512, AVX512))
	assert.False(t, within(AVX512, AVX2))
	assert.False(t, within(AVX2, Generic))
	assert.False(t, within(NEON, AVX512))
	assert.False(t, within(AVX2, NEON))
	assert.True(t, within(Generic, NEON))
}

func TestParseRoundTrips(t *testing.T) {
	for _, p := range []Path{Generic, AVX2, AVX512, NEON} {
		got, err := Parse(p.String())
		require.NoError(t, err)
		assert.Equal(t, p, got)
	}
	_, err := Parse("avx-2")
	assert.ErrorContains(t, err, `"avx-2"`)
	assert.Equal(t, "isa.Path(9)", Path(9).String())
}

func TestPathInForceIsSupported(t *testing.T) {
	assert.True(t, Supports(Current()))
	assert.True(t, Has(Current()))
	assert.True(t, Has(Generic))
	s := Supported()
	require.NotEmpty(t, s)
	assert.Equal(t, Best(), s[0])
	for _, p := range s {
		assert.True(t, Supports(p), "%s listed but not supported", p)
	}
	if forceable {
		assert.Equal(t, Generic, s[len(s)-1])
	} else {
		assert.Equal(t, []Path{Best()}, s)
	}
	if os.Getenv(EnvVar) == "" {
		assert.Equal(t, Best(), Current())
		assert.Equal(t, Best().String(), Describe())
	}
}

func TestCPUInfo(t *testing.T) {
	info := CPU()
	if runtime.GOARCH == "amd64" && Best() != Generic {
		// CPUID leaf 0 always answers on amd64.
		assert.Contains(t, []string{"GenuineIntel", "AuthenticAMD", "HygonGenuine"}, info.Vendor)
	}
	cs := info.Caches
	if cs.Source == "" {
		t.Skip("this machine reports no cache sizes")
	}
	assert.GreaterOrEqual(t, cs.L1D, 8<<10)
	assert.LessOrEqual(t, cs.L1D, 1<<20)
	if cs.L2 != 0 {
		assert.Greater(t, cs.L2, cs.L1D)
	}
	if cs.L3 != 0 {
		assert.Greater(t, cs.L3, cs.L2)
	}
	// Where Linux also describes the caches, CPUID must agree with it.
	sys := sysfsCaches("/sys/devices/system/cpu/cpu0/cache")
	if cs.Source == "cpuid" && sys.L1D != 0 {
		assert.Equal(t, sys.L1D, cs.L1D, "L1d: CPUID against sysfs")
		assert.Equal(t, sys.L2, cs.L2, "L2: CPUID against sysfs")
	}
}

func TestSysfsCaches(t *testing.T) {
	dir := t.TempDir()
	write := func(index, level, kind, size string) {
		d := filepath.Join(dir, index)
		require.NoError(t, os.MkdirAll(d, 0o755))
		for name, v := range map[string]string{"level": level, "type": kind, "size": size} {
			require.NoError(t, os.WriteFile(filepath.Join(d, name), []byte(v+"\n"), 0o644))
		}
	}
	write("index0", "1", "Data", "48K")
	write("index1", "1", "Instruction", "32K")
	write("index2", "2", "Unified", "2048K")
	write("index3", "3", "Unified", "105M")
	assert.Equal(t, Caches{L1D: 48 << 10, L2: 2 << 20, L3: 105 << 20, Source: "sysfs"}, sysfsCaches(dir))
	assert.Equal(t, Caches{}, sysfsCaches(filepath.Join(dir, "missing")))
	assert.Equal(t, 0, parseSize("lots"))
	assert.Equal(t, 512, parseSize("512"))
}

func TestProcModel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpuinfo")
	require.NoError(t, os.WriteFile(path, []byte("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nflags\t: fpu\n"), 0o644))
	assert.Equal(t, "Intel(R) Xeon(R) Platinum 8480+", procModel(path))
	assert.Equal(t, "", procModel(filepath.Join(t.TempDir(), "none")))
	assert.Equal(t, "AMD EPYC 7763", cleanBrand([]byte("AMD EPYC  7763  \x00\x00\x00")))
}

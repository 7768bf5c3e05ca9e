package distributed

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHugeTrackerCollapsesTensorsSeenBefore(t *testing.T) {
	mem := make([]byte, 2*hugeMinBytes)
	tensorAt := func(i int) []byte { return mem[i : i+hugeMinBytes] } // distinct tensors by address
	type call struct {
		b    []byte
		err  error // what the collapse returns, if called
		want bool  // whether it is called
	}
	a, b := tensorAt(0), tensorAt(8)
	cases := []struct {
		name  string
		calls []call
	}{
		{"second sighting on", []call{{a, nil, false}, {a, nil, true}, {a, nil, true}, {b, nil, false}, {a, nil, true}, {b, nil, true}}},
		{"small tensors never", []call{{a[:hugeMinBytes-1], nil, false}, {a[:hugeMinBytes-1], nil, false}}},
		{"same address, other length", []call{{a, nil, false}, {mem[:hugeMinBytes+8], nil, false}, {mem[:hugeMinBytes+8], nil, true}}},
		{"failure not retried", []call{{a, nil, false}, {a, syscall.EAGAIN, true}, {a, nil, false}, {b, nil, false}, {b, nil, true}}},
		{"kernel without the advice", []call{{a, nil, false}, {a, fmt.Errorf("%w: %w", errNoHugePages, syscall.EINVAL), true}, {a, nil, false}, {b, nil, false}, {b, nil, false}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h hugeTracker
			for i, call := range c.calls {
				called := false
				h.prepare(call.b, func(got []byte) error {
					called = true
					assert.Equal(t, addrOf(call.b), addrOf(got))
					assert.Len(t, got, len(call.b))
					return call.err
				})
				assert.Equal(t, call.want, called, "call %d", i)
			}
		})
	}
	t.Run("forgets after hugeRemember others", func(t *testing.T) {
		var h hugeTracker
		never := func([]byte) error { return errors.New("collapse called") }
		h.prepare(a, never)
		for i := range hugeRemember {
			assert.NoError(t, callPrepare(&h, tensorAt(16+i), never))
		}
		assert.LessOrEqual(t, len(h.seen), hugeRemember)
		assert.NotContains(t, h.seen, [2]uintptr{addrOf(a), uintptr(len(a))})
		called := false
		h.prepare(a, func([]byte) error { called = true; return nil })
		assert.False(t, called, "a forgotten tensor is new again")
	})
}

// callPrepare runs h.prepare and reports an error if collapse was called.
func callPrepare(h *hugeTracker, b []byte, collapse func([]byte) error) (err error) {
	h.prepare(b, func(b []byte) error {
		err = collapse(b)
		return nil
	})
	return err
}

func TestHugeInterior(t *testing.T) {
	const p = hugePageBytes
	for _, c := range []struct {
		addr   uintptr
		n      int
		lo, hi int
	}{
		{p, 2 * p, 0, 2 * p},
		{p - 1, 2*p + 1, 1, 2*p + 1},
		{p + 1, 2 * p, p - 1, p - 1 + p},
		{p + 1, p, 0, 0},
		{3*p - 8, 2 * p, 8, p + 8},
		{p, p - 1, 0, 0},
	} {
		lo, hi := hugeInterior(c.addr, c.n)
		if c.lo >= c.hi {
			assert.GreaterOrEqual(t, lo, hi, "%#x+%d", c.addr, c.n)
			continue
		}
		assert.Equal(t, [2]int{c.lo, c.hi}, [2]int{lo, hi}, "%#x+%d", c.addr, c.n)
	}
}

func TestCollapseHugePagesKeepsContents(t *testing.T) {
	b := make([]byte, 3*hugePageBytes+12345)
	for i := range b {
		b[i] = byte(i*7 + i>>13)
	}
	want := bytes.Clone(b)
	before, err := anonHugeKB(addrOf(b), len(b))
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	err = collapseHugePages(b)
	if errors.Is(err, errNoHugePages) || errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.ENOMEM) {
		t.Skipf("no huge pages here: %v", err)
	}
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, b), "contents changed")
	after, err := anonHugeKB(addrOf(b), len(b))
	require.NoError(t, err)
	lo, hi := hugeInterior(addrOf(b), len(b))
	assert.GreaterOrEqual(t, after-before, (hi-lo)>>10, "huge pages of the mapping, kB")
}

// anonHugeKB sums AnonHugePages over the mappings of this process that
// overlap the n bytes at addr, from /proc/self/smaps.
func anonHugeKB(addr uintptr, n int) (int, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	in, found, kb := false, false, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && !strings.HasSuffix(fields[0], ":") {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			e, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(addr) < e && uint64(addr)+uint64(n) > a
			found = found || in
			continue
		}
		if in && fields[0] == "AnonHugePages:" && len(fields) >= 2 {
			k, err := strconv.Atoi(fields[1])
			if err != nil {
				return 0, err
			}
			kb += k
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("no mapping holds %#x", addr)
	}
	return kb, nil
}

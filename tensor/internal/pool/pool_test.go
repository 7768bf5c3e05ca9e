package pool

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClass(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{0, -1}, {-3, -1}, {1, 6}, {64, 6}, {65, 7}, {128, 7}, {129, 8}, {1000, 10}, {1 << 20, 20}, {1<<20 + 1, 21}, {1 << 30, 30}, {1<<30 + 1, -1},
	} {
		assert.Equal(t, tc.want, class(tc.n), "n=%d", tc.n)
	}
}

func TestGetPut(t *testing.T) {
	var p Pool[float32]
	for _, n := range []int{1, 7, 64, 100, 4096, 5000} {
		s := p.Get(n)
		require.Len(t, *s, n)
		c := class(n)
		assert.Equal(t, 1<<c, cap(*s), "n=%d", n)
		for i := range *s {
			(*s)[i] = float32(i)
		}
		p.Put(s)
		// A later Get of the same class reuses the slice put back.
		s2 := p.Get(n)
		require.Len(t, *s2, n)
		assert.Same(t, s, s2)
		p.Put(s2)
	}
	// Zero-length and oversized requests are served but not pooled.
	z := p.Get(0)
	assert.Empty(t, *z)
	p.Put(z)
	// Slices not from Get are dropped, not pooled under a wrong class.
	odd := make([]float32, 100)
	p.Put(&odd)
	small := make([]float32, 8)
	p.Put(&small)
	p.Put(nil)
	s := p.Get(100)
	assert.Equal(t, 128, cap(*s))
	assert.NotSame(t, &odd, s)
}

func TestPerClassBound(t *testing.T) {
	var p Pool[float64]
	var got []*[]float64
	for range perClass + 3 {
		got = append(got, p.Get(1000))
	}
	for _, s := range got {
		p.Put(s)
	}
	assert.Len(t, p.free[class(1000)], perClass)
}

func BenchmarkGetPut(b *testing.B) {
	var p Pool[float32]
	b.ReportAllocs()
	for b.Loop() {
		a, c := p.Get(3000), p.Get(70000)
		p.Put(a)
		p.Put(c)
	}
}

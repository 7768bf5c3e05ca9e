package alloc

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPacer(t *testing.T) {
	live, used := int64(0), int64(0)
	collections := 0
	p := NewPacer(100, 50, func() { collections++; used = live }, func() int64 { return used })
	assert.Equal(t, int64(100), p.Goal(), "the floor holds while little is live")

	steps := []struct {
		alloc, keep int64 // bytes allocated by this step; how many of them stay live
		collect     bool
		goal        int64
	}{
		{60, 60, false, 100},
		{39, 0, false, 100},
		{1, 1, true, 100},    // 100 in use, 61 live: goal max(100, 91.5)
		{50, 50, true, 166},  // 111 in use, all live: 166.5
		{10, 10, false, 166}, // below the goal
		{100, 0, true, 181},  // 221 in use, 121 live: 181.5
	}
	for i, s := range steps {
		used += s.alloc
		live += s.keep
		before := collections
		got := p.Observe(used)
		assert.Equal(t, s.collect, got, "step %d", i)
		assert.Equal(t, s.collect, collections > before, "step %d", i)
		if got {
			assert.Equal(t, live, used, "step %d: the collection freed the garbage", i)
		}
		assert.Equal(t, s.goal, p.Goal(), "step %d", i)
	}
}

func TestPacerDisabled(t *testing.T) {
	collections := 0
	p := NewPacer(10, -1, func() { collections++ }, func() int64 { return 0 })
	assert.Equal(t, int64(math.MaxInt64), p.Goal())
	assert.False(t, p.Observe(1<<62))
	p.SetPercent(0)
	assert.Equal(t, int64(10), p.Goal())
	assert.True(t, p.Observe(11))
	assert.Equal(t, 1, collections)
	assert.Equal(t, 0, p.Percent())
}

func TestPacerOneCollectionAtATime(t *testing.T) {
	var p *Pacer
	nested := true
	p = NewPacer(1, 0, func() { nested = p.Observe(1 << 40) }, func() int64 { return 0 })
	assert.True(t, p.Observe(5))
	assert.False(t, nested, "an Observe during a collection returns at once")
}

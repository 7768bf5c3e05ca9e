package distributed

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckSubgroupRanks(t *testing.T) {
	tests := []struct {
		name  string
		world bool
		ranks []int
		panic string // "" when the ranks are accepted
	}{
		{"valid, any order", true, []int{3, 0, 2}, ""},
		{"every rank", true, []int{0, 1, 2, 3}, ""},
		{"on a subgroup", false, []int{0}, "distributed.NewSubgroup: called on a subgroup; call it on the world group"},
		{"no ranks", true, nil, "distributed.NewSubgroup: no ranks"},
		{"negative", true, []int{0, -1}, "distributed.NewSubgroup: member rank -1 outside [0, 4)"},
		{"too large", true, []int{4}, "distributed.NewSubgroup: member rank 4 outside [0, 4)"},
		{"listed twice", true, []int{1, 2, 1}, "distributed.NewSubgroup: rank 1 listed twice in [1 2 1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := func() { checkSubgroupRanks(tt.world, 4, tt.ranks) }
			if tt.panic == "" {
				assert.NotPanics(t, f)
				return
			}
			assert.PanicsWithValue(t, tt.panic, f)
		})
	}
}

func TestCheckRankRange(t *testing.T) {
	assert.NotPanics(t, func() { checkRankRange("Send", "destination", 2, 3) })
	assert.PanicsWithValue(t, "distributed.Send: destination rank 3 outside [0, 3)", func() { checkRankRange("Send", "destination", 3, 3) })
}

func TestWaitDone(t *testing.T) {
	opErr := errors.New("peer 3 hung up")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	closed := make(chan struct{})
	close(closed)
	tests := []struct {
		name      string
		ctx       context.Context
		done      chan struct{}
		err       error
		want      error // errors.Is target
		abandoned bool
	}{
		{"finished with an error", context.Background(), closed, opErr, opErr, false},
		{"finished cleanly", context.Background(), closed, nil, nil, false},
		{"finished wins over an ended context", cancelled, closed, opErr, opErr, false},
		{"context ends first", cancelled, make(chan struct{}), nil, context.Canceled, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gave error
			err := waitDone(tt.ctx, tt.done, &tt.err, func(e error) { gave = e })
			if tt.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tt.want)
			}
			if tt.abandoned {
				assert.EqualError(t, err, "distributed: wait abandoned: context canceled")
				assert.Equal(t, err, gave)
			} else {
				assert.NoError(t, gave)
			}
		})
	}
}

func TestOpQueue(t *testing.T) {
	var q opQueue[int]
	require.True(t, q.push(1))
	require.True(t, q.push(2))
	w, closed, ok := q.pop()
	assert.Equal(t, []any{1, false, true}, []any{w, closed, ok})

	// A pop waiting on an empty queue gets the next push.
	got := make(chan int)
	go func() {
		_, _, _ = q.pop() // 2, already queued
		w, _, _ := q.pop()
		got <- w
	}()
	require.True(t, q.push(3))
	assert.Equal(t, 3, <-got)

	// Operations queued before close come out marked closed, then the
	// queue reports it is drained; pushes after close are refused.
	require.True(t, q.push(4))
	q.close()
	assert.False(t, q.push(5))
	w, closed, ok = q.pop()
	assert.Equal(t, []any{4, true, true}, []any{w, closed, ok})
	w, closed, ok = q.pop()
	assert.Equal(t, []any{0, true, false}, []any{w, closed, ok})
}

package distributed

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSinkPlace(t *testing.T) {
	a, b, c := make([]byte, 8), make([]byte, 0), make([]byte, 4)
	s := &sink{regions: [][]byte{a, b, c}, armed: 3}
	for _, tc := range []struct {
		name      string
		pos, n    int
		want      []byte // the region the bytes land in, nil when none
		wantStart int
	}{
		{"start of the first region", 0, 8, a, 0},
		{"inside the first region", 2, 3, a, 2},
		{"across two regions", 6, 4, nil, 0},
		{"the third region, past the empty one", 8, 4, c, 0},
		{"end of the last region", 10, 2, c, 2},
		{"past the end", 12, 1, nil, 0},
		{"before the regions (still skipped)", -1, 1, nil, 0},
		{"empty payload", 3, 0, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := s.place(tc.pos, tc.n)
			if tc.want == nil {
				assert.Nil(t, got)
				return
			}
			require.Len(t, got, tc.n)
			assert.Equal(t, tc.n, cap(got), "capacity limited to the payload")
			assert.Same(t, &tc.want[tc.wantStart], &got[0])
		})
	}
	// Regions not yet armed take nothing.
	s.armed = 1
	assert.Nil(t, s.place(8, 4))
	assert.NotNil(t, s.place(0, 4))
}

func TestSinkCountsFramesAlreadyReceived(t *testing.T) {
	l := &link{boxes: map[byte]*inbox{}}
	// Two frames of the operation are queued, one is being read into an
	// ordinary buffer, and one frame of another operation is queued.
	l.deliver(frame{frameHeader: frameHeader{kind: frameData, op: opAllReduce, seq: 7, group: 2}, payload: make([]byte, 4)})
	l.deliver(frame{frameHeader: frameHeader{kind: frameData, op: opAllReduce, seq: 7, group: 2}, payload: make([]byte, 4)})
	l.deliver(frame{frameHeader: frameHeader{kind: frameData, op: opAllReduce, seq: 6, group: 2}, payload: make([]byte, 100)})
	assert.Nil(t, l.land(frameHeader{kind: frameData, op: opAllReduce, seq: 7, group: 2, n: 4}))

	dst := make([]byte, 8)
	l.openSink(2, &sink{op: opAllReduce, seq: 7, skip: 8, regions: [][]byte{dst}, armed: 1})
	l.deliver(frame{frameHeader: frameHeader{kind: frameData, op: opAllReduce, seq: 7, group: 2}, payload: make([]byte, 4)})
	// 12 bytes are accounted for: the next 4 land at dst[4:8].
	got := l.land(frameHeader{kind: frameData, op: opAllReduce, seq: 7, group: 2, n: 4})
	require.NotNil(t, got)
	assert.Same(t, &dst[4], &got[0])
	// Frames of other groups and operations, and abort frames, do not.
	assert.Nil(t, l.land(frameHeader{kind: frameData, op: opAllReduce, seq: 7, group: 3, n: 4}))
	assert.Nil(t, l.land(frameHeader{kind: frameAbort, op: opAllReduce, seq: 7, group: 2, n: 4}))
	l.deliver(frame{frameHeader: frameHeader{kind: frameData, op: opAllReduce, seq: 7, group: 2}, payload: got, inPlace: true})
	l.closeSink(2)
	assert.Empty(t, l.sinks)
}

func TestReduceInto(t *testing.T) {
	nan := math.NaN()
	for _, n := range []int{0, 1, 7, 8, 9, 16, 23} {
		dst := make([]float64, n)
		src := make([]float64, n+3) // src may be longer than dst
		for i := range src {
			src[i] = float64(i%5) - 2
		}
		for i := range dst {
			dst[i] = float64(i%3) - 1
		}
		if n > 5 {
			src[5] = nan
		}
		for _, op := range []ReduceOp{Sum, Avg, Prod, Max, Min} {
			want := make([]float64, n)
			for i := range want {
				switch op {
				case Sum, Avg:
					want[i] = dst[i] + src[i]
				case Prod:
					want[i] = dst[i] * src[i]
				case Max:
					want[i] = math.Max(dst[i], src[i])
				case Min:
					want[i] = math.Min(dst[i], src[i])
				}
			}
			got := append([]float64(nil), dst...)
			reduceInto(got, src, op)
			for i := range want {
				if math.IsNaN(want[i]) {
					assert.True(t, math.IsNaN(got[i]), "%s n=%d element %d: NaN wins", op, n, i)
				} else {
					assert.Equal(t, want[i], got[i], "%s n=%d element %d", op, n, i)
				}
			}
			gi := make([]int32, n)
			si := make([]int32, n)
			for i := range gi {
				gi[i], si[i] = int32(i-4), int32(3-i)
			}
			wi := append(make([]int32, 0, n), gi...)
			for i := range wi {
				switch op {
				case Sum, Avg:
					wi[i] += si[i]
				case Prod:
					wi[i] *= si[i]
				case Max:
					wi[i] = max(wi[i], si[i])
				case Min:
					wi[i] = min(wi[i], si[i])
				}
			}
			reduceInto(gi, si, op)
			assert.Equal(t, wi, gi, "int32 %s n=%d", op, n)
		}
	}
}

func TestAddFloat32s(t *testing.T) {
	for _, n := range []int{0, 1, 15, 16, 17, 33, 100} {
		dst, src := make([]float32, n), make([]float32, n+1)
		want := make([]float32, n)
		for i := range dst {
			dst[i], src[i] = float32(i)*0.25-3, float32(n-i)*0.5
			want[i] = dst[i] + src[i]
		}
		reduceInto(dst, src, Sum)
		assert.Equal(t, want, dst, "n=%d", n)
	}
}

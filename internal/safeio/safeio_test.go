package safeio_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/safeio"
)

// pattern returns n bytes that differ from position to position.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func TestReadFull(t *testing.T) {
	tests := []struct {
		name    string
		have    int // bytes available
		n       int // bytes asked for
		wantErr error
		wantLen int
	}{
		{"zero", 0, 0, nil, 0},
		{"small exact", 10, 10, nil, 10},
		{"leaves the rest", 10, 4, nil, 4},
		{"past first chunk", 3<<20 + 17, 3<<20 + 17, nil, 3<<20 + 17},
		{"empty source", 0, 5, io.EOF, 0},
		{"short small", 3, 5, io.ErrUnexpectedEOF, 3},
		{"short after growth", 2<<20 + 5, 1 << 30, io.ErrUnexpectedEOF, 2<<20 + 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := pattern(tc.have)
			// HalfReader makes every underlying read short, as a pipe or
			// gzip stream may.
			got, err := safeio.ReadFull(iotest.HalfReader(bytes.NewReader(src)), tc.n)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			require.Len(t, got, tc.wantLen)
			assert.True(t, bytes.Equal(src[:tc.wantLen], got), "bytes differ from the source")
		})
	}
}

func TestReadFullHugeLengthAllocatesLittle(t *testing.T) {
	// A header claiming 1 TiB over a 10-byte stream must fail with a buffer
	// no larger than the first chunk, not one of the claimed size.
	got, err := safeio.ReadFull(bytes.NewReader(pattern(10)), 1<<40)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, pattern(10), got)
	assert.LessOrEqual(t, cap(got), 1<<20)
}

func TestReadFullReaderError(t *testing.T) {
	boom := errors.New("boom")
	got, err := safeio.ReadFull(io.MultiReader(bytes.NewReader([]byte{1, 2}), iotest.ErrReader(boom)), 8)
	require.ErrorIs(t, err, boom)
	assert.Equal(t, []byte{1, 2}, got)
}

func TestTruncated(t *testing.T) {
	other := errors.New("disk on fire")
	tests := []struct {
		name string
		in   error
		want string
	}{
		{"eof", io.EOF, "unexpected end of file"},
		{"unexpected eof", io.ErrUnexpectedEOF, "unexpected end of file"},
		{"wrapped", fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), "unexpected end of file"},
		{"other", other, "disk on fire"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.EqualError(t, safeio.Truncated(tc.in), tc.want)
		})
	}
	assert.Same(t, other, safeio.Truncated(other))
	assert.NoError(t, safeio.Truncated(nil))
}

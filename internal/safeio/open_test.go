package safeio_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/safeio"
)

func TestShapeBytes(t *testing.T) {
	tests := []struct {
		shape    []int
		elemSize int
		want     int
		err      string
	}{
		{nil, 4, 4, ""},
		{[]int{2, 3}, 8, 48, ""},
		{[]int{0, 5}, 4, 0, ""},
		{[]int{5, 0}, 4, 0, ""},
		{[]int{1 << 62, 1 << 62, 0}, 1, 0, "overflows"},
		{[]int{0, 1 << 62, 1 << 62}, 1, 0, "overflows"},
		{[]int{0, 1 << 61}, 8, 0, "overflows"},
		{[]int{math.MaxInt}, 1, math.MaxInt, ""},
		{[]int{3, -1}, 1, 0, "negative dimension -1"},
		{make([]int, safeio.MaxRank+1), 1, 0, "65 dimensions exceed the limit of 64"},
		{make([]int, safeio.MaxRank), 1, 0, ""},
		{[]int{2}, 0, 0, "invalid element size"},
	}
	for _, tt := range tests {
		got, err := safeio.ShapeBytes(tt.shape, tt.elemSize)
		if tt.err != "" {
			require.ErrorContains(t, err, tt.err, "%v", tt.shape)
			continue
		}
		require.NoError(t, err, "%v", tt.shape)
		assert.Equal(t, tt.want, got, "%v", tt.shape)
	}
}

func TestOpenAndReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "weights.bin")
	require.NoError(t, os.WriteFile(path, []byte("0123456789"), 0o600))

	f, size, err := safeio.Open(path)
	require.NoError(t, err)
	assert.EqualValues(t, 10, size)
	require.NoError(t, f.Close())

	got, err := safeio.ReadFile(path, 10)
	require.NoError(t, err)
	assert.Equal(t, "0123456789", string(got))

	_, err = safeio.ReadFile(path, 9)
	require.ErrorContains(t, err, "file of 10 bytes exceeds the limit of 9 bytes")

	_, err = safeio.ReadFile(dir, 1<<20)
	require.ErrorContains(t, err, "is a folder, not a regular file")

	_, err = safeio.ReadFile(filepath.Join(dir, "missing"), 1<<20)
	require.ErrorIs(t, err, os.ErrNotExist)

	link := filepath.Join(dir, "link.bin")
	require.NoError(t, os.Symlink(path, link))
	got, err = safeio.ReadFile(link, 10)
	require.NoError(t, err, "a link to a regular file is followed")
	assert.Equal(t, "0123456789", string(got))
}

func TestQuote(t *testing.T) {
	assert.Equal(t, `"short"`, safeio.Quote("short"))
	long := strings.Repeat("x", 20<<20)
	q := safeio.Quote(long)
	assert.Less(t, len(q), 100)
	assert.True(t, strings.HasPrefix(q, `"`+strings.Repeat("x", 64)+`"`), q)
	assert.Contains(t, q, "(20971520 bytes)")
}

// TestOpenInStaysInside checks that OpenIn reads a regular file of the
// folder and refuses names and links that lead out of it, and folders.
func TestOpenInStaysInside(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("outside"), 0o644))
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.bin"), []byte("12345"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))

	f, size, err := safeio.OpenIn(dir, "w.bin")
	require.NoError(t, err)
	assert.Equal(t, int64(5), size)
	require.NoError(t, f.Close())

	_, _, err = safeio.OpenIn(dir, "sub")
	require.ErrorContains(t, err, "is a folder, not a regular file")
	_, _, err = safeio.OpenIn(dir, filepath.Join("..", filepath.Base(outside), "secret"))
	require.Error(t, err)
	if os.Symlink(secret, filepath.Join(dir, "link")) == nil {
		_, _, err = safeio.OpenIn(dir, "link")
		require.ErrorContains(t, err, "escapes")
	}
}

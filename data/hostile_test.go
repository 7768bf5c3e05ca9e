package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// zeroBomb returns a gzip file (several concatenated members, which gzip
// readers decode as one stream) that decompresses to an idx header for dims
// followed by about 1 MiB of zeros per member: files of a few hundred
// kilobytes that expand to hundreds of megabytes, as in the probes of issue
// 26. It is built without compressing the whole payload.
func zeroBomb(t testing.TB, typ byte, dims []uint32, members int) []byte {
	t.Helper()
	member := func(prefix []byte) []byte {
		var buf bytes.Buffer
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		require.NoError(t, err)
		_, err = zw.Write(prefix)
		require.NoError(t, err)
		_, err = zw.Write(make([]byte, 1<<20))
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		return buf.Bytes()
	}
	header := []byte{0, 0, typ, byte(len(dims))}
	for _, d := range dims {
		header = binary.BigEndian.AppendUint32(header, d)
	}
	out := member(header)
	zeros := member(nil)
	for range members - 1 {
		out = append(out, zeros...)
	}
	return out
}

// probe runs load, which must fail with an error containing want, and checks
// that it allocated less than twice the input's size plus 64 MiB (the
// budget of issue 26). It logs the time taken and the bytes allocated.
func probe(t *testing.T, name string, inputSize int, want string, load func() error) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	err := load()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%s: %d-byte input refused in %v after allocating %d bytes: %v", name, inputSize, elapsed, allocated, err)
	require.Error(t, err, name)
	assert.Contains(t, err.Error(), want, name)
	assert.Less(t, len(err.Error()), 1000, "%s: the error is too long", name)
	assert.Less(t, allocated, uint64(2*inputSize+64<<20), "%s allocated too much", name)
}

// TestHostileIDXFiles replays issue 26's hostile idx and MNIST files: each
// must be refused with an error, never a crash or a multi-gigabyte
// allocation.
func TestHostileIDXFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, b, 0o644))
		return path
	}

	// A 4.2 MB gzip idx declaring 4.2 GB of zeros (it reached 4.2 GB in
	// safeio.ReadFull before the limits).
	big := zeroBomb(t, IDXUbyte, []uint32{4200, 1_000_000}, 4005)
	bigPath := write("big-idx2-ubyte.gz", big)
	probe(t, "4.2 MB gzip, ReadIDXFile", len(big), "more than 64 times the 4225288-byte gzip file", func() error {
		_, err := ReadIDXFile(bigPath)
		return err
	})
	probe(t, "4.2 MB gzip, ReadIDX stream", len(big), "more than the limit of 2147483648 bytes", func() error {
		_, err := ReadIDX(bytes.NewReader(big))
		return err
	})

	// 381 KB gzip files declaring 381 M labels and 381 M 1x1 images (they
	// drove LoadMNIST to 3.72 GB before the limits).
	const n = 381 << 20
	labels := zeroBomb(t, IDXUbyte, []uint32{n}, 381)
	images := zeroBomb(t, IDXUbyte, []uint32{n, 1, 1}, 381)
	labelsPath := write("bomb/train-labels-idx1-ubyte.gz", labels)
	write("bomb/train-images-idx3-ubyte.gz", images)
	probe(t, "381 KB gzip, LoadMNIST", len(labels)+len(images), "times the", func() error {
		_, err := LoadMNIST(filepath.Join(dir, "bomb"), true)
		return err
	})
	probe(t, "381 KB gzip, ReadIDXFile", len(labels), "more than 64 times the", func() error {
		_, err := ReadIDXFile(labelsPath)
		return err
	})
	probe(t, "381 KB gzip, ReadIDX stream", len(labels), "gzip stream expands more than 64 times", func() error {
		_, err := ReadIDX(bytes.NewReader(labels))
		return err
	})

	// Labels 200 and 255 (accepted before, and training panicked later).
	writeFile := func(name string, x *IDX) {
		var buf bytes.Buffer
		require.NoError(t, WriteIDX(&buf, x))
		write(name, buf.Bytes())
	}
	writeFile("labels/train-images-idx3-ubyte", &IDX{IDXUbyte, []int{2, 1, 1}, []byte{0, 0}})
	writeFile("labels/train-labels-idx1-ubyte", &IDX{IDXUbyte, []int{2}, []byte{200, 255}})
	probe(t, "labels 200 and 255", 18, "label 0 is 200, outside 0-9", func() error {
		_, err := LoadMNIST(filepath.Join(dir, "labels"), true)
		return err
	})

	// A zero dimension does not hide an overflowing product.
	zero := idxFile(IDXUbyte, []uint32{0, 1 << 31, 1 << 31, 1 << 31}, nil)
	probe(t, "dims [0 2^31 2^31 2^31]", len(zero), "overflows", func() error {
		_, err := ReadIDX(bytes.NewReader(zero))
		return err
	})
}

package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeIDX writes an idx file of unsigned bytes with the given dimensions.
func writeIDX(t *testing.T, path string, dims []int, values []byte) {
	t.Helper()
	var buf bytes.Buffer
	buf.Write([]byte{0, 0, 0x08, byte(len(dims))})
	for _, d := range dims {
		require.NoError(t, binary.Write(&buf, binary.BigEndian, uint32(d)))
	}
	buf.Write(values)
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

// fakeFashion writes a small Fashion-MNIST-shaped data set to a temporary
// directory: images whose mean brightness tells their class.
func fakeFashion(t *testing.T, nTrain, nTest int) string {
	dir := t.TempDir()
	write := func(set string, n int) {
		pix := make([]byte, n*28*28)
		labels := make([]byte, n)
		for i := range n {
			labels[i] = byte(i % 10)
			for j := range 28 * 28 {
				pix[i*784+j] = byte((int(labels[i])*25 + (i*31+j*7)%20) % 256)
			}
		}
		writeIDX(t, filepath.Join(dir, set+"-images-idx3-ubyte"), []int{n, 28, 28}, pix)
		writeIDX(t, filepath.Join(dir, set+"-labels-idx1-ubyte"), []int{n}, labels)
	}
	write("train", nTrain)
	write("t10k", nTest)
	return dir
}

func quick(dataDir, runDir string) config {
	var out bytes.Buffer
	return config{Data: dataDir, Dir: runDir, Epochs: 3, BatchSize: 32, LR: 3e-3, WeightDecay: 1e-2,
		Warmup: 5, Patience: 3, Accumulate: 1, Workers: 2, Seed: 4, Out: &out, Progress: &out}
}

func TestMissingDataNamesTheDebianPackage(t *testing.T) {
	c := quick(filepath.Join(t.TempDir(), "absent"), t.TempDir())
	_, err := run(c)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "apt-get install -y dataset-fashion-mnist")
}

func TestStopAndResumeIsBitIdentical(t *testing.T) {
	t.Run("plain", func(t *testing.T) { testStopAndResume(t, func(*config) {}) })
	t.Run("accumulation and clipping", func(t *testing.T) {
		testStopAndResume(t, func(c *config) { c.Accumulate, c.ClipNorm = 3, 0.5 })
	})
}

func testStopAndResume(t *testing.T, adjust func(*config)) {
	dataDir := fakeFashion(t, 240, 40)
	quick := func(dataDir, runDir string) config {
		c := quick(dataDir, runDir)
		adjust(&c)
		return c
	}
	whole, err := run(quick(dataDir, t.TempDir()))
	require.NoError(t, err)
	assert.False(t, whole.Stopped)

	dir := t.TempDir()
	first := quick(dataDir, dir)
	first.StopAfter = 1
	stopped, err := run(first)
	require.NoError(t, err)
	require.True(t, stopped.Stopped)
	assert.NotEqual(t, whole.Checksum, stopped.Checksum, "one epoch in, the weights differ from the end's")

	second := quick(dataDir, dir)
	second.Resume = true
	resumed, err := run(second)
	require.NoError(t, err)
	assert.Equal(t, whole.Checksum, resumed.Checksum, "final weights bit-identical")
	assert.Equal(t, whole.TestAccuracy, resumed.TestAccuracy)
	assert.Contains(t, second.Out.(*bytes.Buffer).String(), "resumed from")
}

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTrainOneProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for a few seconds")
	}
	for _, model := range []string{"mlp", "cnn"} {
		t.Run(model, func(t *testing.T) {
			acc, err := trainModel(options{digits: "../quickstart/digits.csv.gz", epochs: 5, batch: 64, lr: 1e-3, seed: 1, model: model, zero: true})
			require.NoError(t, err)
			assert.Greater(t, acc, 0.7)
		})
	}
}

func TestStepLog(t *testing.T) {
	// The digits set's 1,437 training samples make 22 full batches of 64:
	// a header and one line of five phase times per step.
	prefix := filepath.Join(t.TempDir(), "steps")
	_, err := trainModel(options{digits: "../quickstart/digits.csv.gz", epochs: 1, batch: 64, lr: 1e-3, seed: 1, model: "mlp", steplog: prefix})
	require.NoError(t, err)
	b, err := os.ReadFile(prefix + ".rank0")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	require.Len(t, lines, 1+22)
	assert.Equal(t, "gather\tforward\tbackward\tsync\tstep", lines[0])
	for _, l := range lines[1:] {
		fields := strings.Split(l, "\t")
		require.Len(t, fields, 5, l)
		for _, f := range fields {
			v, err := strconv.ParseInt(f, 10, 64)
			require.NoError(t, err, l)
			assert.GreaterOrEqual(t, v, int64(0), l)
		}
	}
}

func TestUnknownModel(t *testing.T) {
	_, err := trainModel(options{digits: "../quickstart/digits.csv.gz", epochs: 1, batch: 64, model: "rnn"})
	assert.EqualError(t, err, `-model "rnn": want mlp or cnn`)
}

func TestLoadDigitsErrors(t *testing.T) {
	_, _, err := loadDigits("does-not-exist.csv.gz")
	assert.ErrorContains(t, err, "pass -digits")
	_, _, err = loadDigits("main.go")
	assert.Error(t, err, "not gzip")
}

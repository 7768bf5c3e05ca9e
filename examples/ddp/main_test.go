package main

import (
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

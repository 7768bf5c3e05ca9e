package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/examples/internal/runlog"
	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/tensorboard"
)

// TestRunLogWritesWhatTheIssueAsks checks the run a -logdir training
// writes: the graph, an image grid, the per-epoch scalars, a histogram per
// parameter and the hparams.
func TestRunLogWritesWhatTheIssueAsks(t *testing.T) {
	dir := t.TempDir()
	model := newModel(tensor.NewGenerator(1))
	images := tensor.Zeros([]int{4, 1, 8, 8})
	l, err := runlog.New(dir, model, images.Narrow(0, 0, 1), images)
	require.NoError(t, err)
	l.Epoch(model, 0, 2.5, 0.5)
	l.Epoch(model, 1, 1.5, 0.75)
	require.NoError(t, l.Close(map[string]any{"lr": learningRate}, 0.75))

	scalars, err := tensorboard.ReadScalars(dir)
	require.NoError(t, err)
	loss := scalars["."]["train/loss"]
	require.Len(t, loss, 2)
	assert.Equal(t, 1.5, loss[1].Value)
	assert.Equal(t, int64(2), loss[1].Step)
	assert.Equal(t, 0.75, scalars["."]["test/accuracy"][1].Value)

	files, err := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	f, err := os.Open(files[0])
	require.NoError(t, err)
	defer f.Close()
	plugins := map[string]int{}
	histTags := map[string]bool{}
	graphs := 0
	r := tensorboard.NewReader(f)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if len(ev.GraphDef) > 0 {
			graphs++
		}
		for _, v := range ev.Values {
			plugins[v.Plugin]++
			if v.Histogram != nil {
				histTags[v.Tag] = true
			}
		}
	}
	assert.Equal(t, 1, graphs)
	assert.Equal(t, 1, plugins["images"])
	assert.Equal(t, 3, plugins["hparams"])
	assert.Len(t, histTags, len(model.NamedParameters()))
	assert.True(t, histTags["params/0.weight"])
}

func TestRunLogWithoutLogdirDoesNothing(t *testing.T) {
	l, err := runlog.New("", nil, nil, nil)
	require.NoError(t, err)
	l.Epoch(nil, 0, 1, 1)
	require.NoError(t, l.Close(nil, 1))
}

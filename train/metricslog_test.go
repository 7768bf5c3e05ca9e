package train_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/train"
)

func TestMetricsLog(t *testing.T) {
	var buf bytes.Buffer
	l := train.NewMetricsLog(&buf)
	require.NoError(t, l.Log(train.Metric{"epoch", 1}, train.Metric{"loss", 0.5}, train.Metric{"acc", 0.1}))
	assert.Equal(t, "epoch,loss,acc\n1,0.5,0.1\n", buf.String(), "flushed after each row")
	require.NoError(t, l.Log(train.Metric{"acc", 0.25}, train.Metric{"epoch", 2})) // any order, loss missing
	assert.ErrorContains(t, l.Log(train.Metric{"lr", 1}), `"lr" is not a column`)
	assert.ErrorContains(t, l.Log(train.Metric{"acc", 1}, train.Metric{"acc", 2}), "twice")
	require.NoError(t, l.Close())
	assert.Equal(t, "epoch,loss,acc\n1,0.5,0.1\n2,,0.25\n", buf.String())
	assert.Equal(t, []string{"epoch", "loss", "acc"}, l.Columns())

	assert.Error(t, train.NewMetricsLog(&buf).Log(), "the first row makes the header")
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestMetricsLogWriteError(t *testing.T) {
	assert.ErrorContains(t, train.NewMetricsLog(failingWriter{}).Log(train.Metric{"a", 1}), "disk full")
}

func TestOpenMetricsLogAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.csv")
	l, err := train.OpenMetricsLog(path)
	require.NoError(t, err)
	require.NoError(t, l.Log(train.Metric{"epoch", 1}, train.Metric{"loss", 0.75}))
	require.NoError(t, l.Close())

	l, err = train.OpenMetricsLog(path) // a resumed run
	require.NoError(t, err)
	assert.Equal(t, []string{"epoch", "loss"}, l.Columns())
	require.NoError(t, l.Log(train.Metric{"loss", 0.5}, train.Metric{"epoch", 2}))
	require.NoError(t, l.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "epoch,loss\n1,0.75\n2,0.5\n", string(b))

	bad := filepath.Join(t.TempDir(), "bad.csv")
	require.NoError(t, os.WriteFile(bad, []byte("a,\"b\n"), 0o644))
	_, err = train.OpenMetricsLog(bad)
	assert.ErrorContains(t, err, "header")
	_, err = train.OpenMetricsLog(filepath.Join(t.TempDir(), "no", "such", "dir", "m.csv"))
	assert.Error(t, err)
}

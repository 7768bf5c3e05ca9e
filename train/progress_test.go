package train_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/train"
)

// fakeClock is a clock that tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestProgressPlainLines(t *testing.T) {
	var buf bytes.Buffer
	clock := &fakeClock{t: time.Unix(1000, 0)}
	p := train.NewProgress(&buf, 200, train.ProgressOptions{Label: "epoch 1/3", Interval: 5 * time.Second, Now: clock.now})

	clock.advance(2 * time.Second)
	require.NoError(t, p.Update(10, train.Metric{"loss", 2.3025851}))
	clock.advance(time.Second)
	require.NoError(t, p.Update(15, train.Metric{"loss", 2.1})) // within the interval: not shown
	clock.advance(5 * time.Second)
	require.NoError(t, p.Update(50, train.Metric{"loss", 1.5}, train.Metric{"acc", 0.61234}))
	clock.advance(24 * time.Second)
	require.NoError(t, p.Update(200, train.Metric{"loss", 0.5})) // the last step is always shown
	require.NoError(t, p.Finish(train.Metric{"loss", 0.5}, train.Metric{"val_acc", 0.9}))
	require.NoError(t, p.Finish()) // once only

	assert.Equal(t, "epoch 1/3  10/200  5%  5.00 it/s  ETA 38s  loss 2.303\n"+
		"epoch 1/3  50/200  25%  6.25 it/s  ETA 24s  loss 1.5  acc 0.6123\n"+
		"epoch 1/3  200/200  100%  6.25 it/s  32s  loss 0.5\n"+
		"epoch 1/3  200/200  100%  6.25 it/s  32s  loss 0.5  val_acc 0.9\n", buf.String())
}

func TestProgressLine(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	p := train.NewProgress(&bytes.Buffer{}, 0, train.ProgressOptions{Now: clock.now})
	assert.Equal(t, "0", p.Line(0, clock.t), "unknown total, nothing done")
	assert.Equal(t, "1200  400 it/s  3.0s", p.Line(1200, clock.t.Add(3*time.Second)))

	q := train.NewProgress(&bytes.Buffer{}, 100000, train.ProgressOptions{Now: clock.now})
	assert.Equal(t, "1000/100000  1%  10.0 it/s  ETA 2h45m00s", q.Line(1000, clock.t.Add(100*time.Second)))
	assert.Equal(t, "99000/100000  99%  990 it/s  ETA 1.0s", q.Line(99000, clock.t.Add(100*time.Second)))
	assert.Equal(t, "50000/100000  50%  200 it/s  ETA 4m10s", q.Line(50000, clock.t.Add(250*time.Second)))
}

func TestIsTerminal(t *testing.T) {
	assert.False(t, train.IsTerminal(&bytes.Buffer{}))
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, train.IsTerminal(f), "a regular file")
	if dev, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
		defer dev.Close()
		assert.True(t, train.IsTerminal(dev), "a character device")
	}
	var nilFile *os.File
	assert.False(t, train.IsTerminal(nilFile))
}

func TestProgressInPlace(t *testing.T) {
	var buf bytes.Buffer
	clock := &fakeClock{t: time.Unix(0, 0)}
	p := train.NewProgress(&buf, 4, train.ProgressOptions{Style: train.InPlace, Interval: time.Second, Now: clock.now})
	clock.advance(time.Second)
	require.NoError(t, p.Update(1, train.Metric{"loss", 0.25}))
	clock.advance(time.Second)
	require.NoError(t, p.Update(2))
	clock.advance(2 * time.Second)
	require.NoError(t, p.Finish(train.Metric{"loss", 0.125}))
	assert.Equal(t, "\r1/4  25%  1.00 it/s  ETA 3.0s  loss 0.25"+
		"\r2/4  50%  1.00 it/s  ETA 2.0s           "+ // blanks rub out the longer line
		"\r2/4  50%  0.50 it/s  ETA 4.0s  loss 0.125\n", buf.String())
}

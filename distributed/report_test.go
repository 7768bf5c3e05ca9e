package distributed

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

func TestFailureReportsBlameTheSilentRank(t *testing.T) {
	// Rank 1 never joins the all-reduce: ranks 0 and 2 time out or hear of
	// it, and every report names rank 1, however the ranks learned it.
	gs, err := newLocalGroups(context.Background(), 3, Config{Timeout: 20 * time.Second, DisableSharedMemory: true})
	require.NoError(t, err)
	dir := t.TempDir()
	file := func(r int) string { return filepath.Join(dir, "rank-"+strconv.Itoa(r)+".json") }
	for r, g := range gs {
		g.cfg.FailureFile = file(r)
		g.SetTimeout(500 * time.Millisecond)
		t.Cleanup(func() { g.Close() })
	}
	errs := onAll([]*TCPGroup{gs[0], gs[2]}, func(g *TCPGroup) error {
		return g.AllReduce(tensor.Ones([]int{16}), Sum)
	})
	for i, r := range []int{0, 2} {
		require.Error(t, errs[i], "rank %d", r)
		rep, err := ReadFailureReport(file(r))
		require.NoError(t, err, "rank %d", r)
		assert.Equal(t, r, rep.Rank)
		assert.Equal(t, 1, rep.FailedRank, "rank %d: %s", r, rep.Error)
		assert.Equal(t, errs[i].Error(), rep.Error, "rank %d reports the error it returned", r)
		assert.WithinDuration(t, time.Now(), rep.Time, time.Minute)
	}
}

func TestFailureReportNamesAuthenticationFailure(t *testing.T) {
	dir := t.TempDir()
	job := newRendezvousJob(t, 3, 2*time.Minute, func(r int) string {
		if r == 1 {
			return "wrong"
		}
		return "right"
	})
	job.failureFile = func(r int) string { return filepath.Join(dir, strconv.Itoa(r)) }
	for r := range 3 {
		job.start(r)
	}
	job.wg.Wait()
	for r := range 3 {
		rep, err := ReadFailureReport(job.failureFile(r))
		require.NoError(t, err, "rank %d", r)
		assert.Equal(t, FailureReport{Rank: r, FailedRank: 1, Reporter: map[int]int{0: -1, 1: -1, 2: 0}[r], Time: rep.Time, Error: job.errs[r].Error()}, rep)
	}
}

func TestClosedGroupWritesNoReport(t *testing.T) {
	gs, err := newLocalGroups(context.Background(), 2, Config{Timeout: 20 * time.Second})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "report")
	gs[0].cfg.FailureFile = path
	requireAll(t, gs, func(g *TCPGroup) error { return g.Barrier() })
	for _, g := range gs {
		require.NoError(t, g.Close())
	}
	_, err = ReadFailureReport(path)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestReadFailureReportRejectsOtherFiles(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"empty":    "",
		"not json": "rank 1 failed",
		"no time":  `{"rank":0,"failed_rank":1,"reporter":-1,"error":"x"}`,
		"negative": `{"rank":0,"failed_rank":-3,"reporter":-1,"time":"2026-01-02T03:04:05Z","error":"x"}`,
		"too long": `{"rank":0,"failed_rank":1,"reporter":-1,"time":"2026-01-02T03:04:05Z","error":"` + string(make([]byte, maxFailureReportBytes)) + `"}`,
	} {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
		_, err := ReadFailureReport(path)
		assert.Error(t, err, name)
	}
	path := filepath.Join(dir, "good")
	require.NoError(t, os.WriteFile(path, []byte(`{"rank":2,"failed_rank":1,"reporter":0,"time":"2026-01-02T03:04:05Z","error":"x"}`), 0o600))
	rep, err := ReadFailureReport(path)
	require.NoError(t, err)
	assert.Equal(t, FailureReport{Rank: 2, FailedRank: 1, Reporter: 0, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Error: "x"}, rep)
}

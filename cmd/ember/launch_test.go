package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/distributed"
	"github.com/emberml/ember/internal/netlab"
	"github.com/emberml/ember/tensor"
)

func TestLaunchSetsEnvironmentAndPrefixesOutput(t *testing.T) {
	var out, errb bytes.Buffer
	code := runLaunch([]string{"-nproc", "3", "sh", "-c", `echo "$RANK $LOCAL_RANK $WORLD_SIZE $MASTER_ADDR ${#EMBER_DIST_TOKEN}"`}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	sort.Strings(lines)
	assert.Equal(t, []string{
		"[rank 0] 0 0 3 127.0.0.1 32",
		"[rank 1] 1 1 3 127.0.0.1 32",
		"[rank 2] 2 2 3 127.0.0.1 32",
	}, lines)
}

func TestLaunchStopsEveryRankWhenOneFails(t *testing.T) {
	var out, errb bytes.Buffer
	code := runLaunch([]string{"-nproc", "3", "sh", "-c", `if [ "$RANK" = 1 ]; then echo boom >&2; exit 3; fi; exec sleep 30`}, &out, &errb)
	assert.Equal(t, 1, code)
	assert.Contains(t, errb.String(), "[rank 1] boom")
	assert.Contains(t, errb.String(), "rank 1 failed (exit status 3); stopped the other ranks")
}

// launchRankMode, when set in the environment, makes this test binary a
// rank of the jobs the launch tests start (TestLaunchHelperRank).
const launchRankMode = "EMBER_LAUNCH_TEST_RANK"

// TestLaunchHelperRank is a rank of the jobs that the launch tests start
// (the test binary runs itself under launch); in a plain test run it is
// skipped. Every rank joins the group and all-reduces once, except rank 1:
// with mode "hang" it joins but never all-reduces, with mode
// "wrong-token" it holds another token.
func TestLaunchHelperRank(t *testing.T) {
	mode := os.Getenv(launchRankMode)
	if mode == "" {
		t.Skip("a rank of the launch tests' jobs")
	}
	os.Exit(launchTestRank(mode))
}

// launchTestRank runs a rank of a launch test's job and returns its exit
// code.
func launchTestRank(mode string) int {
	cfg, err := distributed.ConfigFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if mode == "wrong-token" && cfg.Rank == 1 {
		cfg.Token = "not the job's token"
	}
	g, err := distributed.NewTCPGroup(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer g.Close()
	g.SetTimeout(time.Second)
	if mode == "hang" && cfg.Rank == 1 {
		time.Sleep(time.Minute) // launch kills it
		return 0
	}
	if err := g.AllReduce(tensor.Ones([]int{8}), distributed.Sum); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// runLaunchedRanks runs "ember launch -nproc 3" on this test binary as
// TestLaunchHelperRank in mode, and returns launch's exit code and stderr.
func runLaunchedRanks(t *testing.T, mode string) (int, string) {
	t.Setenv(launchRankMode, mode)
	t.Setenv("EMBER_DIST_TIMEOUT", "60s") // the rendezvous of 3 processes on a loaded machine
	var out, errb bytes.Buffer
	code := runLaunch([]string{"-nproc", "3", os.Args[0], "-test.run=^TestLaunchHelperRank$"}, &out, &errb)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	return code, errb.String()
}

func TestLaunchNamesHungRank(t *testing.T) {
	// Rank 1 hangs: ranks 0 and 2 give up on it and exit, and launch names
	// rank 1 (the rank they blame), not the rank that exited first.
	code, stderr := runLaunchedRanks(t, "hang")
	assert.Equal(t, 1, code)
	assert.Regexp(t, `(?m)^ember launch: rank 1 failed first \(rank [02] reported: distributed: .*rank 1.*\); rank [02] exited \(exit status 1\); stopped the other ranks$`, stderr)
}

func TestLaunchNamesRankWithWrongToken(t *testing.T) {
	code, stderr := runLaunchedRanks(t, "wrong-token")
	assert.Equal(t, 1, code)
	assert.Regexp(t, `(?m)^ember launch: rank 1 failed.*authentication failed between rank 1 and rank 0`, stderr)
}

func TestFirstFailure(t *testing.T) {
	exit := errors.New("exit status 1")
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		name  string
		first *distributed.FailureReport
		want  string
	}{
		{"no report", nil, "rank 2 failed (exit status 1); stopped the other ranks"},
		{"its own failure", &distributed.FailureReport{Rank: 2, FailedRank: 2, Reporter: -1, Time: at, Error: "disk full"},
			"rank 2 failed (exit status 1): disk full; stopped the other ranks"},
		{"a peer it blames", &distributed.FailureReport{Rank: 2, FailedRank: 1, Reporter: -1, Time: at, Error: "timed out"},
			"rank 1 failed first (rank 2 reported: timed out); rank 2 exited (exit status 1); stopped the other ranks"},
		{"another rank's report", &distributed.FailureReport{Rank: 0, FailedRank: 2, Reporter: -1, Time: at, Error: "connection closed"},
			"rank 2 failed first (rank 0 reported: connection closed); rank 2 exited (exit status 1); stopped the other ranks"},
		{"long reason", &distributed.FailureReport{Rank: 0, FailedRank: 1, Reporter: -1, Time: at, Error: strings.Repeat("x", 5000)},
			"rank 1 failed first (rank 0 reported: " + strings.Repeat("x", maxReasonLen) + "...); rank 2 exited (exit status 1); stopped the other ranks"},
	} {
		assert.EqualError(t, firstFailure(2, exit, c.first), c.want, c.name)
	}
}

func TestEarliestReport(t *testing.T) {
	dir := t.TempDir()
	file := func(r int) string { return filepath.Join(dir, strconv.Itoa(r)) }
	assert.Nil(t, earliestReport(file, 4, 3), "no reports")
	write := func(r int, body string) { require.NoError(t, os.WriteFile(file(r), []byte(body), 0o600)) }
	write(4, `{"rank":4,"failed_rank":5,"reporter":-1,"time":"2026-01-02T03:04:06Z","error":"later"}`)
	write(5, `{"rank":5,"failed_rank":5,"reporter":-1,"time":"2026-01-02T03:04:05Z","error":"earliest"}`)
	write(6, `not a report`)
	write(3, `{"rank":3,"failed_rank":3,"reporter":-1,"time":"2026-01-01T00:00:00Z","error":"not a local rank"}`)
	got := earliestReport(file, 4, 3)
	require.NotNil(t, got)
	assert.Equal(t, "earliest", got.Error)
	write(6, `{"rank":1,"failed_rank":1,"reporter":-1,"time":"2026-01-01T00:00:00Z","error":"another rank's name"}`)
	assert.Equal(t, "earliest", earliestReport(file, 4, 3).Error, "a file of rank 6 written by rank 1 is ignored")
}

func TestLaunchRejectsBadFlags(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 2, runLaunch(nil, &out, &errb))
	assert.Equal(t, 1, runLaunch([]string{"-nnodes", "2", "true"}, &out, &errb))
	assert.Contains(t, errb.String(), "-master ADDR:PORT is required")
}

// TestLaunchAcrossMachines runs examples/ddp as one job of 4 ranks on two
// hosts (network namespaces on a bridge, internal/netlab), each host
// starting its 2 ranks with "ember launch -nnodes 2 -node-rank R -master
// ADDR:PORT", as on two machines. It needs root, iproute2 and the go tool.
func TestLaunchAcrossMachines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts processes")
	}
	lab := netlab.New(t, 2, "")
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go tool to build the programs")
	}
	dir := t.TempDir()
	ember, ddp := filepath.Join(dir, "ember"), filepath.Join(dir, "ddp")
	for _, b := range [][2]string{{ember, "."}, {ddp, "../../examples/ddp"}} {
		out, err := exec.Command(goTool, "build", "-o", b[0], b[1]).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	digits, err := filepath.Abs("../../examples/quickstart/digits.csv.gz")
	require.NoError(t, err)
	outs := make([][]byte, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for h := range 2 {
		argv := append(lab.On(h), ember, "launch", "-nnodes", "2", "-node-rank", strconv.Itoa(h),
			"-master", net.JoinHostPort(lab.Addrs[0], "29531"), "-nproc", "2",
			ddp, "-epochs", "20", "-phases", "-digits", digits)
		c := exec.Command(argv[0], argv[1:]...)
		c.Env = append(os.Environ(), "EMBER_DIST_TOKEN=launch-across-machines", "EMBER_DIST_TIMEOUT=60s")
		wg.Go(func() { outs[h], errs[h] = c.CombinedOutput() })
	}
	wg.Wait()
	for h := range 2 {
		require.NoError(t, errs[h], "host %d:\n%s", h, outs[h])
	}
	first, second := string(outs[0]), string(outs[1])
	t.Logf("host 0:\n%s\nhost 1:\n%s", first, second)
	assert.Contains(t, first, "[rank 0] 4 process(es)")
	for _, r := range []string{"[rank 2]", "[rank 3]"} {
		assert.Contains(t, second, r+" rank", "host 1 runs ranks 2 and 3:\n%s", second)
	}
	// The same global batch on one process trains the same model.
	alone, err := exec.Command(ddp, "-nproc", "1", "-epochs", "20", "-digits", digits).CombinedOutput()
	require.NoError(t, err, "%s", alone)
	accuracy := regexp.MustCompile(`test accuracy: ([0-9.]+)`)
	want, got := accuracy.FindStringSubmatch(string(alone)), accuracy.FindStringSubmatch(first)
	require.NotNil(t, want, "one process reports the accuracy:\n%s", alone)
	require.NotNil(t, got, "rank 0 reports the accuracy:\n%s", first)
	assert.Equal(t, want[1], got[1], "4 ranks on two hosts and one process reach the same accuracy")
}

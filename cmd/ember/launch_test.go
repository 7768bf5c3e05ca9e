package main

import (
	"bytes"
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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/netlab"
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

package main

import (
	"bytes"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

package main

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryProbeIsRefused writes the hostile files and checks that each
// probe's load ends in an error (run fails when a load succeeds).
func TestEveryProbeIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 115 MB of hostile files")
	}
	if runtime.GOOS == "windows" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("the probes include named pipes")
	}
	dir := t.TempDir()
	require.NoError(t, run(dir, true, "", false))
	for _, p := range allProbes() {
		require.NoError(t, run(dir, false, p.name, false), p.name)
	}
	require.ErrorContains(t, run(dir, false, "no-such-probe", false), `no probe named "no-such-probe"`)
}

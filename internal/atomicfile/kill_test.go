//go:build unix

package atomicfile

import (
	"bufio"
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// killChildEnv names the file the re-executed test binary saves in a loop.
const killChildEnv = "EMBER_ATOMICFILE_KILL_CHILD"

// killStartEnv holds the number of the child's first save.
const killStartEnv = "EMBER_ATOMICFILE_KILL_START"

// killFileSize is the size of every version the child saves.
const killFileSize = 8 << 20

// version returns the content of save number n: killFileSize copies of one byte.
func version(n int) []byte { return bytes.Repeat([]byte{byte(n%255 + 1)}, killFileSize) }

// TestKilledSaveChild is the child of TestKillDuringSave: it saves versions of
// the file in a loop, alternating WriteFile and streamed Create, until killed.
func TestKilledSaveChild(t *testing.T) {
	path := os.Getenv(killChildEnv)
	if path == "" {
		t.Skip("run by TestKillDuringSave")
	}
	start, err := strconv.Atoi(os.Getenv(killStartEnv))
	require.NoError(t, err)
	os.Stdout.WriteString("saving\n")
	for n := start; ; n++ {
		data := version(n)
		if n%2 == 0 {
			require.NoError(t, WriteFile(path, data, 0o644))
			continue
		}
		f, err := Create(path, 0o644)
		require.NoError(t, err)
		for chunk := range slices.Chunk(data, 1<<20) {
			_, err := f.Write(chunk)
			require.NoError(t, err)
		}
		require.NoError(t, f.Commit())
	}
}

// TestKillDuringSave kills a process that saves 8 MiB files in a loop at
// random moments, 10 times: the file must always be one complete version, and
// the next save must leave no temporaries.
func TestKillDuringSave(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	require.NoError(t, WriteFile(path, version(0), 0o644))
	rng := rand.New(rand.NewPCG(1, 2))
	leftBehind := 0
	childCommitted := 0
	for kill := range 10 {
		child := exec.Command(exe, "-test.run=^TestKilledSaveChild$")
		child.Env = append(os.Environ(), killChildEnv+"="+path, killStartEnv+"="+strconv.Itoa(1+25*kill))
		stdout, err := child.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, child.Start())
		line, err := bufio.NewReader(stdout).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "saving\n", line)
		time.Sleep(time.Duration(rng.IntN(100_000)) * time.Microsecond)
		require.NoError(t, child.Process.Signal(syscall.SIGKILL))
		child.Wait()

		got, err := os.ReadFile(path)
		require.NoError(t, err, "kill %d", kill)
		require.Len(t, got, killFileSize, "kill %d left a truncated file", kill)
		require.Equal(t, bytes.Repeat(got[:1], killFileSize), got, "kill %d left a mixed file", kill)
		if saved := int(got[0]) - 1; saved >= 1+25*kill {
			childCommitted++
		}
		leftBehind += len(temporaries(t, dir, "model.safetensors"))
	}
	t.Logf("10 kills left %d temporaries before the next save; %d children had committed at least one save", leftBehind, childCommitted)
	require.NoError(t, WriteFile(path, version(7), 0o644))
	assert.Empty(t, temporaries(t, dir, "model.safetensors"))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, version(7), got)
}

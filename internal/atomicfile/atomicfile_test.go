package atomicfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// temporaries lists the names in dir that are temporaries of base.
func temporaries(t *testing.T, dir, base string) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "."+base+".tmp-*"))
	require.NoError(t, err)
	return matches
}

func TestWriteFileReplacesContentAndMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "weights.bin")
	require.NoError(t, WriteFile(path, []byte("old"), 0o600))
	require.NoError(t, WriteFile(path, []byte("new content"), 0o640))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "new content", string(got))
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640)&^umask(t), info.Mode().Perm())
	assert.Empty(t, temporaries(t, dir, "weights.bin"))
}

// umask returns the process's umask as the mode bits it clears, by creating a
// file with mode 0o777.
func umask(t *testing.T) os.FileMode {
	path := filepath.Join(t.TempDir(), "probe")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o777)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	info, err := os.Stat(path)
	require.NoError(t, err)
	return 0o777 &^ info.Mode().Perm()
}

func TestWriteFileMissingFolderFails(t *testing.T) {
	dir := t.TempDir()
	err := WriteFile(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing")
}

func TestCreateRejectsFolderPath(t *testing.T) {
	_, err := Create(t.TempDir()+string(filepath.Separator), 0o600)
	require.ErrorContains(t, err, "names a folder")
}

func TestCommitPublishesOnlyAtTheEnd(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.onnx")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	f, err := Create(path, 0o644)
	require.NoError(t, err)
	defer f.Close()
	assert.Equal(t, path, f.Name())
	_, err = f.Write([]byte("part one, "))
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "old", string(got), "the destination changed before Commit")
	require.Len(t, temporaries(t, dir, "model.onnx"), 1)
	_, err = f.Write([]byte("part two"))
	require.NoError(t, err)
	require.NoError(t, f.Commit())
	got, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "part one, part two", string(got))
	assert.Empty(t, temporaries(t, dir, "model.onnx"))
	require.NoError(t, f.Close(), "Close after Commit must do nothing")
	_, err = f.Write([]byte("late"))
	require.Error(t, err)
	require.Error(t, f.Commit(), "a second Commit must fail")
}

func TestAbortAndCloseDiscard(t *testing.T) {
	for _, discard := range []string{"Abort", "Close"} {
		t.Run(discard, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "x.npy")
			require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
			f, err := Create(path, 0o644)
			require.NoError(t, err)
			_, err = f.Write([]byte("new"))
			require.NoError(t, err)
			if discard == "Abort" {
				require.NoError(t, f.Abort())
			} else {
				require.NoError(t, f.Close())
			}
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, "old", string(got))
			assert.Empty(t, temporaries(t, dir, "x.npy"))
			require.Error(t, f.Commit())
		})
	}
}

func TestStaleTemporariesRemovedLiveOnesKept(t *testing.T) {
	dir := t.TempDir()
	base := "ckpt.safetensors"
	host := hostTag()
	write := func(name string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("partial"), 0o600))
		return p
	}
	dead := write(fmt.Sprintf(".%s.tmp-%s-%d-%s", base, host, deadPID(t), "0123456789abcdef"))
	live := write(fmt.Sprintf(".%s.tmp-%s-%d-%s", base, host, os.Getpid(), processToken+"89abcdef"))
	// Our process id with another token: a killed earlier process that had
	// our id (the first process of a restarted container).
	earlierIncarnation := write(fmt.Sprintf(".%s.tmp-%s-%d-%s", base, host, os.Getpid(), otherToken()+"89abcdef"))
	otherHostFresh := write(fmt.Sprintf(".%s.tmp-%s-%d-%s", base, "ffffffff", deadPID(t), "0123456789abcdef"))
	otherHostOld := write(fmt.Sprintf(".%s.tmp-%s-%d-%s", base, "fffffffe", deadPID(t), "0123456789abcdef"))
	legacyOld := write("." + base + ".tmp-123456789")
	legacyFresh := write("." + base + ".tmp-987654321")
	otherFile := write(fmt.Sprintf(".other.tmp-%s-%d-%s", host, deadPID(t), "0123456789abcdef"))
	old := time.Now().Add(-StaleAge - time.Hour)
	require.NoError(t, os.Chtimes(otherHostOld, old, old))
	require.NoError(t, os.Chtimes(legacyOld, old, old))

	require.NoError(t, WriteFile(filepath.Join(dir, base), []byte("new"), 0o644))
	for _, p := range []string{dead, earlierIncarnation, otherHostOld, legacyOld} {
		assert.NoFileExists(t, p)
	}
	for _, p := range []string{live, otherHostFresh, legacyFresh, otherFile} {
		assert.FileExists(t, p)
	}
}

// otherToken returns a process token that is not this process's.
func otherToken() string {
	if processToken == "00000000" {
		return "00000001"
	}
	return "00000000"
}

// deadPID returns the id of a process that has exited and been waited for.
func deadPID(t *testing.T) int {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	p, err := os.StartProcess(exe, []string{exe, "-test.run=^$"}, &os.ProcAttr{})
	require.NoError(t, err)
	_, err = p.Wait()
	require.NoError(t, err)
	return p.Pid
}

func TestParseTemp(t *testing.T) {
	tag, pid, token, ok := parseTemp("0a1b2c3d-4242-0123456789abcdef")
	require.True(t, ok)
	assert.Equal(t, "0a1b2c3d", tag)
	assert.Equal(t, 4242, pid)
	assert.Equal(t, "01234567", token)
	for _, bad := range []string{"", "123456", "0a1b2c3d-x-0123456789abcdef", "0a1b2c3d-0-0123456789abcdef", "0a1b2c3d-12-short"} {
		_, _, _, ok := parseTemp(bad)
		assert.False(t, ok, bad)
	}
}

func TestTempNameIsRecognised(t *testing.T) {
	name := tempName("w.bin")
	rest, ok := strings.CutPrefix(name, ".w.bin.tmp-")
	require.True(t, ok, name)
	tag, pid, token, ok := parseTemp(rest)
	require.True(t, ok, name)
	assert.Equal(t, hostTag(), tag)
	assert.Equal(t, os.Getpid(), pid)
	assert.Equal(t, processToken, token)
}

// TestConcurrentSaves runs saves of one file from several goroutines: each
// must succeed (no save removes another's temporary), the file must end as
// one complete version, and no temporary may remain.
func TestConcurrentSaves(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "shared.bin")
	const writers, saves = 8, 20
	errs := make(chan error, writers*saves)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			content := bytes.Repeat([]byte{byte('a' + w)}, 64<<10)
			for range saves {
				errs <- WriteFile(path, content, 0o644)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Len(t, got, 64<<10)
	assert.Equal(t, bytes.Repeat(got[:1], 64<<10), got)
	assert.Empty(t, temporaries(t, dir, "shared.bin"))
}

// Package atomicfile writes files so that a reader, or a process that
// restarts after a crash, sees either the old complete file or the new
// complete file, never a truncated one.
//
// Every write goes to a temporary file in the destination's folder, named
// ".NAME.tmp-HOST-PID-RANDOM"; the temporary is flushed to stable storage,
// renamed over NAME, and the folder itself is synced so the rename survives a
// power loss. A save that is killed part way leaves its temporary behind; the
// next save of NAME removes every such temporary whose writer process is known
// to be dead, and every temporary not modified for StaleAge, but never the
// temporary of a concurrent save that is still running. RANDOM starts with a
// token drawn once per process, so a restarted program that got its
// predecessor's process id (as the first process of a container does)
// still knows the predecessor's temporaries for dead.
//
// The rename replaces NAME itself: when NAME is a symbolic link, the link is
// replaced by a regular file and its target is left untouched.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// StaleAge is how long a temporary may go unmodified before a later save of
// the same file removes it even when its writer cannot be proven dead (the
// writer ran on another host sharing the folder, the platform cannot query
// processes, or its process id has been reused).
const StaleAge = 24 * time.Hour

// WriteFile writes data to path atomically: a temporary file in the same
// folder receives the data and is synced, then renamed over path, then the
// folder is synced. Before writing it removes stale temporaries that killed
// earlier saves of path left. perm (before the umask) is the mode of the new
// file, whether or not path existed. On error path is unchanged and no
// temporary remains.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// File is an atomic file being written: the bytes written go to a temporary
// file, and only Commit makes them visible under the destination's name.
// A File is not safe for concurrent use by several goroutines.
type File struct {
	path string
	tmp  string
	file *os.File
	done bool
}

// Create removes stale temporaries of earlier saves of path and returns a
// File whose writes go to a new temporary file next to path. Call Commit to
// replace path with what was written, or Abort (or Close) to discard it; a
// deferred Close after Commit does nothing, so
//
//	f, err := atomicfile.Create(path, 0o644)
//	if err != nil { return err }
//	defer f.Close()
//	... write ...
//	return f.Commit()
//
// saves path only when every step succeeded.
func Create(path string, perm os.FileMode) (*File, error) {
	dir, base := filepath.Split(path)
	if base == "" {
		return nil, fmt.Errorf("atomicfile: %q names a folder, not a file", path)
	}
	if dir == "" {
		dir = "."
	}
	removeStale(dir, base, time.Now())
	for range 10 {
		tmp := filepath.Join(dir, tempName(base))
		file, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("atomicfile: creating a temporary for %s: %w", path, err)
		}
		return &File{path: path, tmp: tmp, file: file}, nil
	}
	return nil, fmt.Errorf("atomicfile: creating a temporary for %s: 10 random names were all taken", path)
}

// Name returns the path the File will replace when committed.
func (f *File) Name() string { return f.path }

// Write writes p to the temporary file.
func (f *File) Write(p []byte) (int, error) {
	if f.done {
		return 0, fmt.Errorf("atomicfile: write to %s after Commit, Abort or Close", f.path)
	}
	return f.file.Write(p)
}

// Commit syncs the temporary file, renames it over the destination and syncs
// the destination's folder. After a failed Commit the destination is
// unchanged and the temporary is removed. Commit may be called once.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("atomicfile: Commit of %s after Commit, Abort or Close", f.path)
	}
	f.done = true
	err := f.file.Sync()
	if closeErr := f.file.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(f.tmp, f.path)
	}
	if err != nil {
		os.Remove(f.tmp)
		return fmt.Errorf("atomicfile: saving %s: %w", f.path, err)
	}
	syncDir(filepath.Dir(f.path))
	return nil
}

// Abort discards what was written and removes the temporary file. It does
// nothing after Commit or an earlier Abort.
func (f *File) Abort() error {
	if f.done {
		return nil
	}
	f.done = true
	f.file.Close()
	if err := os.Remove(f.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("atomicfile: removing temporary of %s: %w", f.path, err)
	}
	return nil
}

// Close is Abort: it discards the written bytes unless Commit came first.
// It lets a File be closed by a deferred call on every path.
func (f *File) Close() error { return f.Abort() }

// syncDir flushes a folder's entries (the rename) to stable storage. It is
// best effort: not every platform can open or sync a folder.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// tempPrefix is the start of every temporary's name for the file base.
func tempPrefix(base string) string { return "." + base + ".tmp-" }

// processToken tells this process's temporaries from those of an earlier
// process that had the same id. It is drawn once and never changes.
var processToken = func() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}()

// tempName returns a fresh temporary's name for base: the prefix, this
// host's tag, this process's id, the process token and 4 random bytes.
func tempName(base string) string {
	var random [4]byte
	rand.Read(random[:])
	return tempPrefix(base) + hostTag() + "-" + strconv.Itoa(os.Getpid()) + "-" + processToken + hex.EncodeToString(random[:])
}

// hostTag identifies this host in temporary names, so that a process id is
// only ever checked on the host where it was issued.
func hostTag() string {
	name, err := os.Hostname()
	if err != nil {
		name = "unknown"
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("%08x", h.Sum32())
}

// removeStale removes the temporaries of base in dir that no running save
// owns: those whose writer ran on this host and is dead, and those not
// modified for StaleAge. Failures are ignored: cleaning up is best effort and
// must not stop the save.
func removeStale(dir, base string, now time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	prefix := tempPrefix(base)
	host := hostTag()
	for _, entry := range entries {
		name := entry.Name()
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok || !entry.Type().IsRegular() {
			continue
		}
		stale := false
		if tag, pid, token, ok := parseTemp(rest); ok && tag == host {
			if pid == os.Getpid() {
				stale = token != processToken // an earlier process with our id
			} else {
				stale = processDead(pid)
			}
		}
		if info, err := entry.Info(); !stale && err == nil && now.Sub(info.ModTime()) > StaleAge {
			stale = true
		}
		if stale {
			os.Remove(filepath.Join(dir, name))
		}
	}
}

// parseTemp splits the part of a temporary's name after its prefix into the
// host tag, the writer's process id and its process token.
func parseTemp(rest string) (tag string, pid int, token string, ok bool) {
	parts := strings.Split(rest, "-")
	if len(parts) != 3 || len(parts[0]) != 8 || len(parts[2]) != 16 {
		return "", 0, "", false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return "", 0, "", false
	}
	return parts[0], pid, parts[2][:8], true
}

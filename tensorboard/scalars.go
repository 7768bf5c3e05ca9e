package tensorboard

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ScalarPoint is one logged value of a scalar series.
type ScalarPoint struct {
	WallTime time.Time
	Step     int64
	Value    float64
}

// ReadScalars reads every event file under logdir and returns the scalars
// by run and tag. A run is a folder holding event files, named by its path
// relative to logdir ("." for logdir itself); its files are read in name
// order (their names start with the creation time) and its points kept in
// that order. Symbolic links are not followed and only regular files are
// read. A record with a bad CRC or that is not an Event is an error naming
// the file and the offset; a file that ends inside its last record (as one
// still being written may) is read up to that record.
func ReadScalars(logdir string) (map[string]map[string][]ScalarPoint, error) {
	files := map[string][]string{}
	err := filepath.WalkDir(logdir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && strings.Contains(d.Name(), "tfevents") {
			run, err := filepath.Rel(logdir, filepath.Dir(path))
			if err != nil {
				return err
			}
			files[filepath.ToSlash(run)] = append(files[filepath.ToSlash(run)], path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	out := map[string]map[string][]ScalarPoint{}
	for run, paths := range files {
		sort.Strings(paths)
		tags := map[string][]ScalarPoint{}
		for _, p := range paths {
			if err := readFileScalars(p, tags); err != nil {
				return nil, err
			}
		}
		if len(tags) > 0 {
			out[run] = tags
		}
	}
	return out, nil
}

// readFileScalars appends the scalars of one event file to tags.
func readFileScalars(path string, tags map[string][]ScalarPoint) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("tensorboard: %w", err)
	}
	defer f.Close()
	r := NewReader(f)
	// A tensor summary carries its plugin's metadata the first time its
	// tag is written only: remember which tags are scalars.
	scalarTag := map[string]bool{}
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		var ce *CorruptionError
		if errors.As(err, &ce) && ce.Truncated {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for _, v := range ev.Values {
			if v.Plugin == "scalars" {
				scalarTag[v.Tag] = true
			}
			if scalarTag[v.Tag] && v.Histogram == nil && v.Image == nil && v.Audio == nil && v.Text == nil {
				tags[v.Tag] = append(tags[v.Tag], ScalarPoint{WallTime: ev.WallTime, Step: ev.Step, Value: v.Scalar})
			}
		}
	}
}

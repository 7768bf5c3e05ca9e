package distributed

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/emberml/ember/internal/atomicfile"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// Stateful is state that round-trips through a tensor map, such as an
// optim.Optimizer's StateDict and LoadStateDict.
type Stateful interface {
	// StateDict returns the state as tensors.
	StateDict() map[string]*tensor.Tensor
	// LoadStateDict restores the state.
	LoadStateDict(sd map[string]*tensor.Tensor) error
}

// Key prefixes of a checkpoint file.
const (
	checkpointModel = "model."
	checkpointState = "optim."
)

// WriteFileAtomic writes data to path so that a reader sees either the old
// file or the complete new one, even if the process dies midway: it writes
// a temporary file in the same directory, syncs it to disk, renames it over
// path and syncs the directory. The next save of path removes the temporary
// files that killed earlier saves left behind.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return atomicfile.WriteFile(path, data, perm)
}

// SaveCheckpoint writes the module's state dict and, when opt is not nil,
// the optimizer's state to one safetensors file at path, atomically (see
// WriteFileAtomic), with the given metadata. In data-parallel training call
// it on rank 0 only: the replicas are identical.
func SaveCheckpoint(path string, model nn.Module, opt Stateful, metadata map[string]string) error {
	all := map[string]*tensor.Tensor{}
	for k, t := range nn.StateDict(model) {
		all[checkpointModel+k] = t
	}
	if opt != nil {
		for k, t := range opt.StateDict() {
			all[checkpointState+k] = t
		}
	}
	var buf bytes.Buffer
	if err := nn.EncodeTensors(&buf, all, metadata); err != nil {
		return fmt.Errorf("distributed.SaveCheckpoint: %w", err)
	}
	if err := WriteFileAtomic(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("distributed.SaveCheckpoint: %w", err)
	}
	return nil
}

// LoadCheckpoint restores a file written by SaveCheckpoint into model
// (strictly: every key must match) and, when opt is not nil, the optimizer,
// and returns the file's metadata.
func LoadCheckpoint(path string, model nn.Module, opt Stateful) (map[string]string, error) {
	all, meta, err := nn.LoadTensors(path)
	if err != nil {
		return nil, fmt.Errorf("distributed.LoadCheckpoint: %w", err)
	}
	msd, osd := map[string]*tensor.Tensor{}, map[string]*tensor.Tensor{}
	for k, t := range all {
		switch {
		case strings.HasPrefix(k, checkpointModel):
			msd[strings.TrimPrefix(k, checkpointModel)] = t
		case strings.HasPrefix(k, checkpointState):
			osd[strings.TrimPrefix(k, checkpointState)] = t
		default:
			return nil, fmt.Errorf("distributed.LoadCheckpoint: %s: unexpected key %q", path, k)
		}
	}
	if err := nn.LoadStateDict(model, msd, true); err != nil {
		return nil, fmt.Errorf("distributed.LoadCheckpoint: %s: %w", path, err)
	}
	if opt != nil {
		if err := opt.LoadStateDict(osd); err != nil {
			return nil, fmt.Errorf("distributed.LoadCheckpoint: %s: %w", path, err)
		}
	}
	return meta, nil
}

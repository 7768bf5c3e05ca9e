package distributed

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/emberml/ember/internal/atomicfile"
	"github.com/emberml/ember/internal/safetensors"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/train"
)

// Stateful is state that round-trips through a tensor map, such as an
// optim.Optimizer's StateDict and LoadStateDict. It is train.Stateful.
type Stateful = train.Stateful

// Key prefixes of the checkpoint files that SaveCheckpoint wrote before it
// used package train's layout; LoadCheckpoint still reads them.
const (
	checkpointModel = "model."
	checkpointState = "optim."
)

// checkpointOptimizer names the optimizer in the train.Checkpoint that
// SaveCheckpoint writes.
const checkpointOptimizer = "optimizer"

// WriteFileAtomic writes data to path so that a reader sees either the old
// file or the complete new one, even if the process dies midway: it writes
// a temporary file in the same directory, syncs it to disk, renames it over
// path and syncs the directory. The next save of path removes the temporary
// files that killed earlier saves left behind.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return atomicfile.WriteFile(path, data, perm)
}

// SaveCheckpoint writes the module's state dict and, when opt is not nil,
// the optimizer's state to one safetensors file at path, atomically, with
// the given metadata: it is train.SaveCheckpoint of a train.Checkpoint with
// the model, the optimizer under the name "optimizer" and the metadata. In
// data-parallel training call it on rank 0 only: the replicas are
// identical.
//
// Deprecated: use train.SaveCheckpoint, which also saves schedulers,
// loaders, generators, step and epoch, and typed metadata.
func SaveCheckpoint(path string, model nn.Module, opt Stateful, metadata map[string]string) error {
	if err := train.SaveCheckpoint(path, distributedCheckpoint(model, opt, metadata)); err != nil {
		return fmt.Errorf("distributed.SaveCheckpoint: %w", err)
	}
	return nil
}

// distributedCheckpoint is the train.Checkpoint of SaveCheckpoint's
// arguments; meta is the value metadata is saved from or loaded into.
func distributedCheckpoint(model nn.Module, opt Stateful, meta any) *train.Checkpoint {
	c := &train.Checkpoint{Model: model, Metadata: meta}
	if opt != nil {
		c.Optimizers = map[string]train.Stateful{checkpointOptimizer: opt}
	}
	return c
}

// LoadCheckpoint restores a file written by SaveCheckpoint into model
// (strictly: every key must match) and, when opt is not nil, the optimizer,
// and returns the file's metadata. It also reads the files SaveCheckpoint
// wrote before it used package train's layout.
//
// Deprecated: use train.LoadCheckpoint.
func LoadCheckpoint(path string, model nn.Module, opt Stateful) (map[string]string, error) {
	b, err := safetensors.ReadFileBytes(path) // regular files only, header checked before reading
	if err != nil {
		return nil, fmt.Errorf("distributed.LoadCheckpoint: %w", err)
	}
	all, meta, err := nn.DecodeTensors(b)
	if err != nil {
		return nil, fmt.Errorf("distributed.LoadCheckpoint: %s: %w", path, err)
	}
	if _, ok := meta[train.CheckpointMetadataKey]; ok {
		var metadata map[string]string
		if err := train.ReadCheckpoint(bytes.NewReader(b), distributedCheckpoint(model, opt, &metadata)); err != nil {
			return nil, fmt.Errorf("distributed.LoadCheckpoint: %s: %w", path, err)
		}
		return metadata, nil
	}
	return loadLegacyCheckpoint(path, all, meta, model, opt)
}

// loadLegacyCheckpoint restores the tensors of a checkpoint in the layout
// SaveCheckpoint wrote before package train: the model under "model.", the
// optimizer under "optim.", the metadata as the header's strings.
func loadLegacyCheckpoint(path string, all map[string]*tensor.Tensor, meta map[string]string, model nn.Module, opt Stateful) (map[string]string, error) {
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

package train

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/emberml/ember/internal/atomicfile"
	"github.com/emberml/ember/internal/safetensors"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// Checkpoint names everything a training run needs to continue exactly
// where it stopped. SaveCheckpoint writes it to one file and LoadCheckpoint
// restores a file into it; to resume, build the model, optimizers,
// schedulers, loaders and generators as the interrupted run did (same code,
// same configuration) and load the checkpoint into them.
//
// The file is a safetensors file that PyTorch's safetensors package reads.
// Its tensors are the model's state dict under "model." and the state dicts
// of the other parts under "optimizers.<name>.", "schedulers.<name>.",
// "loaders.<name>." and "extra.<name>."; the rest (step, epoch, generator
// states, the names of the parts and the user's metadata) is one JSON
// document in the header's metadata under CheckpointMetadataKey.
//
// Names of optimizers, schedulers, loaders, extra parts and generators must
// be non-empty and contain no dot. Loading is strict: the checkpoint and
// the Checkpoint value must name the same parts, and the model must have
// exactly the checkpoint's keys, shapes and dtypes.
type Checkpoint struct {
	// Model is the network whose parameters and buffers are saved (nil for
	// none). The generators its modules draw from (see nn.Generators) are
	// saved with it, so dropout resumes exactly.
	Model nn.Module
	// Optimizers are saved and restored through their state dicts
	// (optim.Optimizer implements Stateful).
	Optimizers map[string]Stateful
	// Schedulers are the learning-rate schedulers (optim.Scheduler and
	// optim.ReduceLROnPlateau implement Stateful).
	Schedulers map[string]Stateful
	// Loaders are the data loaders and samplers whose position in the data
	// must survive (data.Loader, data.DistributedSampler).
	Loaders map[string]Stateful
	// Extra holds any other part of the loop with a state dict (early
	// stopping, a custom sampler, ...).
	Extra map[string]Stateful
	// Generators are random generators used outside the model (data
	// augmentation, sampling); their states are saved and restored in
	// place.
	Generators map[string]*tensor.Generator
	// Step and Epoch are the loop's counters, restored by LoadCheckpoint.
	Step, Epoch int
	// Metadata is any value encoding/json can marshal (a struct with the
	// best score, the configuration, ...). SaveCheckpoint stores it as
	// JSON; LoadCheckpoint unmarshals the stored JSON into it, so there it
	// must be a non-nil pointer (or nil to ignore the stored metadata).
	Metadata any
}

// CheckpointMetadataKey is the key of the safetensors header metadata that
// holds the JSON part of a checkpoint (step, epoch, generator states, the
// names of the parts and the user's metadata). A safetensors file without
// it is not a checkpoint.
const CheckpointMetadataKey = "ember.train.checkpoint"

// checkpointVersion is the version of the layout written.
const checkpointVersion = 1

// header is the JSON part of a checkpoint.
type header struct {
	Version    int      `json:"version"`
	Step       int      `json:"step"`
	Epoch      int      `json:"epoch"`
	Model      bool     `json:"model"`
	Optimizers []string `json:"optimizers"`
	Schedulers []string `json:"schedulers"`
	Loaders    []string `json:"loaders"`
	Extra      []string `json:"extra,omitempty"`
	// Generators and ModelGenerators hold MarshalBinary states (base64 in
	// JSON); ModelGenerators are keyed by the module name nn.Generators
	// gives.
	Generators      map[string][]byte `json:"generators"`
	ModelGenerators map[string][]byte `json:"model_generators"`
	Metadata        json.RawMessage   `json:"metadata,omitempty"`
}

// Tensor key prefixes.
const (
	modelPrefix     = "model."
	optimizerKind   = "optimizers"
	schedulerKind   = "schedulers"
	loaderKind      = "loaders"
	extraKind       = "extra"
	generatorKind   = "generators"
	modelGenerators = "model generators"
)

// part is one Stateful of a checkpoint with its kind and name.
type part struct {
	kind, name string
	s          Stateful
}

func (p part) prefix() string { return p.kind + "." + p.name + "." }

func (p part) String() string { return fmt.Sprintf("%s[%q]", p.kind, p.name) }

// parts lists the Stateful parts of c in a fixed order (loaders,
// optimizers, schedulers, extra; by name within a kind), checking their
// names.
func (c *Checkpoint) parts() ([]part, error) {
	var out []part
	for _, kind := range []struct {
		name string
		m    map[string]Stateful
	}{{loaderKind, c.Loaders}, {optimizerKind, c.Optimizers}, {schedulerKind, c.Schedulers}, {extraKind, c.Extra}} {
		for _, name := range slices.Sorted(maps.Keys(kind.m)) {
			if err := checkName(kind.name, name); err != nil {
				return nil, err
			}
			s := kind.m[name]
			if s == nil || (reflect.ValueOf(s).Kind() == reflect.Pointer && reflect.ValueOf(s).IsNil()) {
				return nil, fmt.Errorf("%s[%q] is nil", kind.name, name)
			}
			out = append(out, part{kind.name, name, s})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Generators)) {
		if err := checkName(generatorKind, name); err != nil {
			return nil, err
		}
		if c.Generators[name] == nil {
			return nil, fmt.Errorf("%s[%q] is nil", generatorKind, name)
		}
	}
	return out, nil
}

// names returns the names of the parts of one kind, sorted.
func names(parts []part, kind string) []string {
	out := []string{}
	for _, p := range parts {
		if p.kind == kind {
			out = append(out, p.name)
		}
	}
	return out
}

// generatorStates returns the MarshalBinary states of gens.
func generatorStates(gens map[string]*tensor.Generator) (map[string][]byte, error) {
	out := make(map[string][]byte, len(gens))
	for name, g := range gens {
		b, err := g.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("generator %q: %w", name, err)
		}
		out[name] = b
	}
	return out, nil
}

// SaveCheckpoint writes c to the file at path atomically: a reader, or a
// run restarted after a crash or a kill, finds either the previous file or
// the complete new one (see internal/atomicfile). In data-parallel training
// call it on one rank: the replicas are identical.
func SaveCheckpoint(path string, c *Checkpoint) error {
	tensors, meta, err := c.encode()
	if err != nil {
		return fmt.Errorf("train.SaveCheckpoint: %s: %w", path, err)
	}
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return fmt.Errorf("train.SaveCheckpoint: %w", err)
	}
	defer f.Close() // removes the temporary file unless Commit succeeded
	w := bufio.NewWriterSize(f, 1<<20)
	if err := nn.EncodeTensors(w, tensors, meta); err != nil {
		return fmt.Errorf("train.SaveCheckpoint: %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("train.SaveCheckpoint: %w", err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("train.SaveCheckpoint: %w", err)
	}
	return nil
}

// WriteCheckpoint writes c to w in the layout SaveCheckpoint writes to a
// file (not atomically: w receives the bytes as they come).
func WriteCheckpoint(w io.Writer, c *Checkpoint) error {
	tensors, meta, err := c.encode()
	if err != nil {
		return fmt.Errorf("train.WriteCheckpoint: %w", err)
	}
	if err := nn.EncodeTensors(w, tensors, meta); err != nil {
		return fmt.Errorf("train.WriteCheckpoint: %w", err)
	}
	return nil
}

// encode returns the tensors and header metadata of c.
func (c *Checkpoint) encode() (map[string]*tensor.Tensor, map[string]string, error) {
	if c == nil {
		return nil, nil, errors.New("nil *Checkpoint")
	}
	parts, err := c.parts()
	if err != nil {
		return nil, nil, err
	}
	h := header{
		Version: checkpointVersion, Step: c.Step, Epoch: c.Epoch, Model: c.Model != nil,
		Optimizers: names(parts, optimizerKind), Schedulers: names(parts, schedulerKind), Loaders: names(parts, loaderKind),
		Extra: names(parts, extraKind),
	}
	tensors := map[string]*tensor.Tensor{}
	if c.Model != nil {
		for k, t := range nn.StateDict(c.Model) {
			tensors[modelPrefix+k] = t
		}
		if h.ModelGenerators, err = generatorStates(nn.Generators(c.Model)); err != nil {
			return nil, nil, fmt.Errorf("model: %w", err)
		}
	}
	for _, p := range parts {
		for k, t := range p.s.StateDict() {
			if t == nil {
				return nil, nil, fmt.Errorf("%s: state dict entry %q is nil", p, k)
			}
			tensors[p.prefix()+k] = t
		}
	}
	if h.Generators, err = generatorStates(c.Generators); err != nil {
		return nil, nil, err
	}
	if c.Metadata != nil {
		if h.Metadata, err = json.Marshal(c.Metadata); err != nil {
			return nil, nil, fmt.Errorf("metadata: %w", err)
		}
	}
	js, err := json.Marshal(h)
	if err != nil {
		return nil, nil, err
	}
	return tensors, map[string]string{CheckpointMetadataKey: string(js)}, nil
}

// LoadCheckpoint restores the checkpoint file at path into c: the model's
// parameters and buffers, the state of every optimizer, scheduler, loader,
// extra part and generator c names (in place), Step, Epoch and Metadata. A
// malformed or truncated file, or one whose parts, keys, shapes or dtypes
// differ from c's, returns an error naming the first difference.
// Everything is checked before anything is changed, so on error c and the
// values it names are as they were, except in one case that the error then
// states: a part refused its state after others took theirs, and one of
// those could not be rolled back (its StateDict failed, as a sharded
// optimizer's does before Consolidate).
func LoadCheckpoint(path string, c *Checkpoint) error {
	b, err := safetensors.ReadFileBytes(path) // regular files only, header checked before reading
	if err != nil {
		return fmt.Errorf("train.LoadCheckpoint: %w", err)
	}
	if err := c.decode(b); err != nil {
		return fmt.Errorf("train.LoadCheckpoint: %s: %w", path, err)
	}
	return nil
}

// ReadCheckpoint restores a checkpoint written by WriteCheckpoint (or a
// file written by SaveCheckpoint) from r into c, as LoadCheckpoint does.
func ReadCheckpoint(r io.Reader, c *Checkpoint) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("train.ReadCheckpoint: %w", err)
	}
	if err := c.decode(b); err != nil {
		return fmt.Errorf("train.ReadCheckpoint: %w", err)
	}
	return nil
}

// decode checks the checkpoint bytes b against c and then restores them.
func (c *Checkpoint) decode(b []byte) error {
	if c == nil {
		return errors.New("nil *Checkpoint")
	}
	parts, err := c.parts()
	if err != nil {
		return err
	}
	tensors, meta, err := nn.DecodeTensors(b)
	if err != nil {
		return fmt.Errorf("not a readable checkpoint: %w", err)
	}
	js, ok := meta[CheckpointMetadataKey]
	if !ok {
		return fmt.Errorf("not a training checkpoint: the safetensors header has no %q metadata", CheckpointMetadataKey)
	}
	var h header
	if err := json.Unmarshal([]byte(js), &h); err != nil {
		return fmt.Errorf("malformed %q metadata: %w", CheckpointMetadataKey, err)
	}
	if h.Version != checkpointVersion {
		return fmt.Errorf("checkpoint layout version %d, this Ember reads version %d", h.Version, checkpointVersion)
	}

	// The parts must match.
	if err := sameNames(optimizerKind, h.Optimizers, names(parts, optimizerKind)); err != nil {
		return err
	}
	if err := sameNames(schedulerKind, h.Schedulers, names(parts, schedulerKind)); err != nil {
		return err
	}
	if err := sameNames(loaderKind, h.Loaders, names(parts, loaderKind)); err != nil {
		return err
	}
	if err := sameNames(extraKind, h.Extra, names(parts, extraKind)); err != nil {
		return err
	}
	if err := sameNames(generatorKind, slices.Sorted(maps.Keys(h.Generators)), slices.Sorted(maps.Keys(c.Generators))); err != nil {
		return err
	}
	switch {
	case h.Model && c.Model == nil:
		return errors.New("the checkpoint holds a model but Checkpoint.Model is nil")
	case !h.Model && c.Model != nil:
		return errors.New("the checkpoint holds no model but Checkpoint.Model is set")
	}

	// Sort the tensors into their parts.
	states := map[string]map[string]*tensor.Tensor{}
	for _, p := range parts {
		states[p.prefix()] = map[string]*tensor.Tensor{}
	}
	modelState := map[string]*tensor.Tensor{}
	for _, k := range slices.Sorted(maps.Keys(tensors)) {
		if rest, ok := strings.CutPrefix(k, modelPrefix); ok && h.Model {
			modelState[rest] = tensors[k]
			continue
		}
		kind, tail, _ := strings.Cut(k, ".")
		name, key, ok := strings.Cut(tail, ".")
		sd := states[kind+"."+name+"."]
		if !ok || sd == nil {
			return fmt.Errorf("tensor %q belongs to no part of the checkpoint", k)
		}
		sd[key] = tensors[k]
	}

	// Check the model and the generators before changing anything.
	var modelGens map[string]*tensor.Generator
	if c.Model != nil {
		if err := matchModel(c.Model, modelState); err != nil {
			return err
		}
		modelGens = nn.Generators(c.Model)
		if err := sameNames(modelGenerators, slices.Sorted(maps.Keys(h.ModelGenerators)), slices.Sorted(maps.Keys(modelGens))); err != nil {
			return err
		}
	}
	for name, state := range h.Generators {
		if err := new(tensor.Generator).UnmarshalBinary(state); err != nil {
			return fmt.Errorf("generator %q: %w", name, err)
		}
	}
	for name, state := range h.ModelGenerators {
		if err := new(tensor.Generator).UnmarshalBinary(state); err != nil {
			return fmt.Errorf("model generator %q: %w", name, err)
		}
	}
	if err := c.checkMetadata(h.Metadata); err != nil {
		return err
	}

	// Restore the parts, rolling back on a refusal.
	type undo struct {
		p  part
		sd map[string]*tensor.Tensor
		ok bool
	}
	var done []undo
	for _, p := range parts {
		before, ok := snapshot(p.s)
		if err := p.s.LoadStateDict(states[p.prefix()]); err != nil {
			partial := false
			for _, u := range done {
				if !u.ok || u.p.s.LoadStateDict(u.sd) != nil {
					partial = true
				}
			}
			if partial {
				return fmt.Errorf("%s: %w (parts loaded before it could not all be restored: the checkpoint is partly loaded)", p, err)
			}
			return fmt.Errorf("%s: %w", p, err)
		}
		done = append(done, undo{p, before, ok})
	}
	if c.Model != nil {
		if err := nn.LoadStateDict(c.Model, modelState, true); err != nil {
			return fmt.Errorf("model: %w (optimizers, schedulers, loaders and extra parts were loaded)", err)
		}
		for name, g := range modelGens {
			_ = g.UnmarshalBinary(h.ModelGenerators[name]) // checked above
		}
	}
	for name, g := range c.Generators {
		_ = g.UnmarshalBinary(h.Generators[name]) // checked above
	}
	c.Step, c.Epoch = h.Step, h.Epoch
	if c.Metadata != nil && h.Metadata != nil {
		_ = json.Unmarshal(h.Metadata, c.Metadata) // checked above
	}
	return nil
}

// sameNames reports the first name only one of the sorted lists has.
func sameNames(kind string, inFile, inValue []string) error {
	for _, n := range inFile {
		if !slices.Contains(inValue, n) {
			return fmt.Errorf("the checkpoint holds %s[%q], which the Checkpoint value does not name (it names %q)", kind, n, inValue)
		}
	}
	for _, n := range inValue {
		if !slices.Contains(inFile, n) {
			return fmt.Errorf("the Checkpoint value names %s[%q], which the checkpoint does not hold (it holds %q)", kind, n, inFile)
		}
	}
	return nil
}

// matchModel checks that sd has exactly m's state dict keys with the same
// shapes and dtypes, and names the first key (in the model's order, then
// the checkpoint's extra keys sorted) that differs.
func matchModel(m nn.Module, sd map[string]*tensor.Tensor) error {
	own := nn.StateDict(m)
	var diffs []string
	for _, k := range nn.StateDictKeys(m) {
		want, got := own[k], sd[k]
		switch {
		case got == nil:
			diffs = append(diffs, fmt.Sprintf("%q is missing from the checkpoint", k))
		case !slices.Equal(got.Shape(), want.Shape()):
			diffs = append(diffs, fmt.Sprintf("%q has shape %v in the checkpoint, %v in the model", k, got.Shape(), want.Shape()))
		case got.DType() != want.DType():
			diffs = append(diffs, fmt.Sprintf("%q has dtype %s in the checkpoint, %s in the model", k, got.DType(), want.DType()))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(sd)) {
		if _, ok := own[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%q is in the checkpoint but not in the model", k))
		}
	}
	switch len(diffs) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("the model does not match the checkpoint: %s", diffs[0])
	}
	return fmt.Errorf("the model does not match the checkpoint: %s (and %d more differences)", diffs[0], len(diffs)-1)
}

// checkMetadata checks that the stored metadata js unmarshals into
// c.Metadata's type, without touching c.Metadata.
func (c *Checkpoint) checkMetadata(js json.RawMessage) error {
	if c.Metadata == nil || js == nil {
		return nil
	}
	v := reflect.ValueOf(c.Metadata)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("Checkpoint.Metadata must be a non-nil pointer to load the stored metadata into, got %T", c.Metadata)
	}
	trial := reflect.New(v.Type().Elem())
	if err := json.Unmarshal(js, trial.Interface()); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	return nil
}

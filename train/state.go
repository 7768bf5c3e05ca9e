package train

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/emberml/ember/tensor"
)

// Stateful is anything whose state round-trips through a map of tensors,
// by the convention of PyTorch's state_dict: optimizers (optim.Optimizer),
// learning-rate schedulers (optim.Scheduler, optim.ReduceLROnPlateau), data
// loaders and samplers. A Checkpoint saves and restores Stateful values.
type Stateful interface {
	// StateDict returns the state as tensors.
	StateDict() map[string]*tensor.Tensor
	// LoadStateDict restores a state dict that StateDict returned; on
	// error the value should be left unchanged.
	LoadStateDict(sd map[string]*tensor.Tensor) error
}

// maxNameLen bounds the names of a checkpoint's parts.
const maxNameLen = 256

// checkName reports whether name can name a part of a checkpoint: tensor
// keys are "<kind>.<name>.<key>", so a name is non-empty UTF-8 without a
// dot.
func checkName(kind, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s has an empty name", kind)
	case len(name) > maxNameLen:
		return fmt.Errorf("%s name %.20q... is longer than %d bytes", kind, name, maxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%s name %q is not valid UTF-8", kind, name)
	case strings.Contains(name, "."):
		return fmt.Errorf("%s name %q contains a dot", kind, name)
	}
	return nil
}

// snapshot returns a copy of s's state to roll back to, or false when s
// cannot give one now (a sharded optimizer panics until consolidated).
func snapshot(s Stateful) (sd map[string]*tensor.Tensor, ok bool) {
	defer func() {
		if recover() != nil {
			sd, ok = nil, false
		}
	}()
	sd = map[string]*tensor.Tensor{}
	for k, t := range s.StateDict() {
		if t != nil {
			t = t.Clone()
		}
		sd[k] = t
	}
	return sd, true
}

package nn_test

import (
	"testing"

	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// layerFromCaseMore builds the non-normalization layers of the golden cases.
func layerFromCaseMore(t *testing.T, c golden.Case, g *tensor.Generator) nn.Module {
	t.Fatalf("unknown op %q", c.Op)
	return nil
}

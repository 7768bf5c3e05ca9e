//go:build !cuda

package cuda

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStubSaysHowToBuild(t *testing.T) {
	_, err := Device(0)
	require.ErrorIs(t, err, ErrNoDevice)
	assert.Contains(t, err.Error(), "-tags cuda")
}

//go:build !cuda

package cuda

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStubCuDNN(t *testing.T) {
	_, err := CuDNN(0)
	require.ErrorIs(t, err, ErrNoDevice)
}

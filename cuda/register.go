//go:build cuda

package cuda

import "github.com/emberml/ember/tensor"

func init() { tensor.RegisterBackend("cuda", open) }

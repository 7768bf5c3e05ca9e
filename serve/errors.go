package serve

import (
	"errors"
	"fmt"
	"time"
)

// ErrOverloaded is matched (with errors.Is) by every *OverloadError.
var ErrOverloaded = errors.New("serve: overloaded")

// ErrClosed is returned by Predict and Load once the Server is closed.
var ErrClosed = errors.New("serve: server closed")

// ErrUnknownModel is wrapped by the error of a request naming a model that
// is not loaded.
var ErrUnknownModel = errors.New("serve: unknown model")

// OverloadError reports a request refused by admission control: the
// model's queue was full, or the server's memory budget stayed exhausted
// for longer than the request could wait.
type OverloadError struct {
	// Model is the model the request was for ("" for Server.Reserve).
	Model string
	// Reason says which limit was reached.
	Reason string
	// RetryAfter is how long the caller should wait before trying again
	// (an HTTP server sends it as the Retry-After header).
	RetryAfter time.Duration
}

// Error describes the refusal.
func (e *OverloadError) Error() string {
	if e.Model == "" {
		return fmt.Sprintf("serve: overloaded: %s", e.Reason)
	}
	return fmt.Sprintf("serve: model %q overloaded: %s", e.Model, e.Reason)
}

// Is reports whether target is ErrOverloaded.
func (e *OverloadError) Is(target error) bool { return target == ErrOverloaded }

package train_test

import (
	"bytes"
	"testing"

	"github.com/emberml/ember/train"
)

// FuzzReadCheckpoint feeds arbitrary bytes to ReadCheckpoint: it may refuse
// them, never panic or hang.
func FuzzReadCheckpoint(f *testing.F) {
	s := newSetup(1, 4)
	var buf bytes.Buffer
	if err := train.WriteCheckpoint(&buf, s.checkpoint(3, 1)); err != nil {
		f.Fatal(err)
	}
	valid := buf.Bytes()
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add([]byte{})
	f.Add([]byte("\x02\x00\x00\x00\x00\x00\x00\x00{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := newSetup(2, 4)
		_ = train.ReadCheckpoint(bytes.NewReader(b), s.checkpoint(0, 0))
	})
}

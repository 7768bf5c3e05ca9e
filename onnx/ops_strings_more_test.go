package onnx

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStringConcatSplitAndRegex(t *testing.T) {
	model := mkModel(20, graphParts{
		nodes: [][]byte{
			mkNode("StringConcat", []string{"x", "suffix"}, []string{"joined"}),
			mkNode("StringSplit", []string{"joined"}, []string{"pieces", "counts"}, mkAttrString("delimiter", "-"), mkAttrInt("maxsplit", 1)),
			mkNode("RegexFullMatch", []string{"joined"}, []string{"match"}, mkAttrString("pattern", `[a-z]+-[a-z]+-end`)),
		},
		inputs: [][]byte{mkValueInfo("x", dtString, 2), mkValueInfo("suffix", dtString)},
		outputs: [][]byte{mkValueInfoAnyShape("pieces", dtString), mkValueInfoAnyShape("counts", dtInt64),
			mkValueInfoAnyShape("match", dtBool), mkValueInfoAnyShape("joined", dtString)},
	})
	s := newSession(t, model)
	out, err := s.RunValues(context.Background(), map[string]any{
		"x":      Strings{Shape: []int{2}, Data: []string{"ab-cd", "x"}},
		"suffix": Strings{Shape: []int{}, Data: []string{"-end"}},
	})
	require.NoError(t, err)
	assert.Equal(t, Strings{Shape: []int{2}, Data: []string{"ab-cd-end", "x-end"}}, out["joined"])
	assert.Equal(t, Strings{Shape: []int{2, 2}, Data: []string{"ab", "cd-end", "x", "end"}}, out["pieces"], "maxsplit 1 keeps the rest whole")
	counts, ok := out["counts"].(interface{ Int64s() []int64 })
	require.True(t, ok, "counts is a number tensor, not strings: %T", out["counts"])
	assert.Equal(t, []int64{2, 2}, counts.Int64s())
	match, ok := out["match"].(interface{ Bools() []bool })
	require.True(t, ok)
	assert.Equal(t, []bool{true, false}, match.Bools(), "the whole string must match")
}

func TestSplitLikePython(t *testing.T) {
	assert.Equal(t, []string{"a", "b", "c"}, splitLikePython("  a b\t c  ", "", -1))
	assert.Equal(t, []string{"a", "b c  "}, splitLikePython("  a b c  ", "", 1))
	assert.Empty(t, splitLikePython("   ", "", -1))
	assert.Equal(t, []string{"a", "", "b"}, splitLikePython("a,,b", ",", -1))
	assert.Equal(t, []string{""}, splitLikePython("", ",", -1))
}

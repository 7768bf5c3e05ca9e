package tensor

import (
	"fmt"
	"slices"
)

// Embedding returns the rows of weight ([V, D]) picked by the integer ids
// (any shape): the result has shape ids.Shape() + [D], as
// torch.nn.functional.embedding. An id outside [0, V) panics.
func Embedding(ids, weight *Tensor) *Tensor {
	if weight.Dim() != 2 {
		panic(fmt.Sprintf("tensor.Embedding: weight must be [num_embeddings, dim], got shape %v", weight.shape))
	}
	if ids.dtype != Int64 && ids.dtype != Int32 {
		panic(fmt.Sprintf("tensor.Embedding: ids have dtype %s; want int64 (or int32)", ids.dtype))
	}
	out := weight.IndexSelect(0, ids.Reshape(-1))
	return out.Reshape(append(slices.Clone(ids.shape), weight.shape[1])...)
}

// EmbeddingBackward returns the gradient of Embedding with respect to its
// weight: the rows of grad (shape ids.Shape() + [D]) summed into a
// [numEmbeddings, D] tensor of zeros at the rows ids name.
func EmbeddingBackward(grad, ids *Tensor, numEmbeddings int) *Tensor {
	if grad.Dim() != ids.Dim()+1 || !slices.Equal(grad.shape[:ids.Dim()], ids.shape) {
		panic(fmt.Sprintf("tensor.EmbeddingBackward: grad shape %v must be the ids shape %v plus one axis", grad.shape, ids.shape))
	}
	d := grad.shape[grad.Dim()-1]
	z := empty(grad.st.backend, grad.dtype, []int{numEmbeddings, d})
	return z.IndexAddInPlace(0, ids.Reshape(-1), grad.Reshape(-1, d))
}

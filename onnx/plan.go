package onnx

import "github.com/emberml/ember/tensor"

// Memory plan.
//
// For every node the plan lists the values to drop from the run's
// environment once the node has run: inputs whose last reader it is, and
// outputs that no later node and no graph output reads (the mask of
// Dropout, the indices of MaxPool, ...). Dropping the last reference lets
// Go's allocator reuse the memory for later nodes of the same run, so the
// live set of a run is bounded by the widest cut of the graph rather than
// by the sum of all intermediates.
//
// Reusing one node's output buffer as another's output in place needs
// kernels that compute into a given tensor; the tensor package has none
// (its *InPlace methods compute into a fresh tensor and copy), so the plan
// goes no further than releasing references at the earliest point, which
// is what makes the memory reusable by the allocator.

// buildReleases fills p.release from p.lastUse.
func (p *plan) buildReleases() {
	p.release = make([][]string, len(p.nodes))
	for i, n := range p.nodes {
		seen := map[string]bool{}
		for _, name := range n.inputs {
			if name != "" && !seen[name] && p.lastUse[name] == i {
				if _, isConst := p.consts[name]; !isConst {
					p.release[i] = append(p.release[i], name)
				}
				seen[name] = true
			}
		}
		for _, name := range n.outputs {
			if _, read := p.lastUse[name]; name != "" && !read && !seen[name] {
				p.release[i] = append(p.release[i], name)
				seen[name] = true
			}
		}
	}
}

// applyThreads hands the intra-op thread count to the tensor package when
// the options set one.
func (o SessionOptions) applyThreads() {
	if o.IntraOpThreads > 0 {
		tensor.SetNumThreads(o.IntraOpThreads)
	}
}

// Package data provides datasets, samplers, a batching loader and readers for
// real data formats (idx, CSV, npy).
package data

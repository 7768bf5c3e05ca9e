package tensorboard

import (
	"bytes"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"

	"github.com/emberml/ember/internal/atomicfile"
	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/tensorboard/internal/tbpb/projectorpb"
)

// embeddingEntry is one embedding of the projector's configuration.
type embeddingEntry struct {
	name, folder string
	hasMetadata  bool
	spriteDim    []int // [height, width] of one sprite image; nil without
}

// AddEmbedding writes an embedding for TensorBoard's projector: mat holds
// one vector per row ([N, D]), metadata (nil, or N labels) names the
// rows, and labelImages (nil, or [N, C, H, W]) gives each row a thumbnail.
// As PyTorch's add_embedding does, the files go to
// <logdir>/<step, 5 digits>/<tag>/ (tensors.tsv, metadata.tsv,
// sprite.png), and <logdir>/projector_config.pbtxt is rewritten to list
// every embedding the Writer has added. Unlike the other Add methods it
// writes at once, on the caller's goroutine, and returns the file system's
// error.
func (w *Writer) AddEmbedding(tag string, mat *tensor.Tensor, metadata []string, labelImages *tensor.Tensor, step int64) error {
	shape := mat.Shape()
	if len(shape) != 2 {
		return fmt.Errorf("tensorboard.AddEmbedding: matrix of shape %v; want [N, D]", shape)
	}
	if tag == "" {
		tag = "default"
	}
	if tag == "." || tag == ".." || strings.ContainsAny(tag, `/\`) {
		return fmt.Errorf("tensorboard.AddEmbedding: tag %q cannot name a folder", tag)
	}
	n, d := shape[0], shape[1]
	if metadata != nil && len(metadata) != n {
		return fmt.Errorf("tensorboard.AddEmbedding: %d metadata labels for %d rows", len(metadata), n)
	}
	if labelImages != nil {
		if s := labelImages.Shape(); len(s) != 4 || s[0] != n {
			return fmt.Errorf("tensorboard.AddEmbedding: label images of shape %v for %d rows; want [%d, C, H, W]", s, n, n)
		}
	}
	folder := filepath.Join(fmt.Sprintf("%05d", step), tag)
	dir := filepath.Join(w.dir, folder)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("tensorboard.AddEmbedding: %w", err)
	}
	var tsv strings.Builder
	vals := mat.Float64s()
	for i := range n {
		for j := range d {
			if j > 0 {
				tsv.WriteByte('\t')
			}
			tsv.WriteString(strconv.FormatFloat(vals[i*d+j], 'g', -1, 32))
		}
		tsv.WriteByte('\n')
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, "tensors.tsv"), []byte(tsv.String()), 0o644); err != nil {
		return fmt.Errorf("tensorboard.AddEmbedding: %w", err)
	}
	entry := embeddingEntry{name: fmt.Sprintf("%s:%05d", tag, step), folder: folder}
	if metadata != nil {
		var meta strings.Builder
		for _, m := range metadata {
			// One label a line: tabs and line breaks would start new cells.
			meta.WriteString(strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(m))
			meta.WriteByte('\n')
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, "metadata.tsv"), []byte(meta.String()), 0o644); err != nil {
			return fmt.Errorf("tensorboard.AddEmbedding: %w", err)
		}
		entry.hasMetadata = true
	}
	if labelImages != nil {
		s := labelImages.Shape()
		side := int(math.Ceil(math.Sqrt(float64(n))))
		// A square sprite with side images a row, no padding, as the
		// projector cuts it.
		padded := labelImages
		if extra := side*side - n; extra > 0 {
			padded = tensor.Concat([]*tensor.Tensor{labelImages, tensor.Zeros([]int{extra, s[1], s[2], s[3]}, labelImages.DType())}, 0)
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, gridImage(padded, side, 0, "tensorboard.AddEmbedding")); err != nil {
			return fmt.Errorf("tensorboard.AddEmbedding: %w", err)
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, "sprite.png"), buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("tensorboard.AddEmbedding: %w", err)
		}
		entry.spriteDim = []int{s[2], s[3]}
	}
	w.projMu.Lock()
	defer w.projMu.Unlock()
	kept := w.embeddings[:0]
	for _, e := range w.embeddings {
		if e.name != entry.name {
			kept = append(kept, e)
		}
	}
	w.embeddings = append(kept, entry)
	return w.writeProjectorConfigLocked()
}

// writeProjectorConfigLocked writes projector_config.pbtxt listing
// w.embeddings; projMu is held.
func (w *Writer) writeProjectorConfigLocked() error {
	cfg := &projectorpb.ProjectorConfig{}
	for _, e := range w.embeddings {
		info := &projectorpb.EmbeddingInfo{
			TensorName: e.name,
			TensorPath: filepath.ToSlash(filepath.Join(e.folder, "tensors.tsv")),
		}
		if e.hasMetadata {
			info.MetadataPath = filepath.ToSlash(filepath.Join(e.folder, "metadata.tsv"))
		}
		if e.spriteDim != nil {
			info.Sprite = &projectorpb.SpriteMetadata{
				ImagePath:      filepath.ToSlash(filepath.Join(e.folder, "sprite.png")),
				SingleImageDim: []uint32{uint32(e.spriteDim[1]), uint32(e.spriteDim[0])},
			}
		}
		cfg.Embeddings = append(cfg.Embeddings, info)
	}
	b, err := prototext.MarshalOptions{Multiline: true}.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("tensorboard: encoding the projector configuration: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(w.dir, "projector_config.pbtxt"), b, 0o644); err != nil {
		return fmt.Errorf("tensorboard: %w", err)
	}
	return nil
}

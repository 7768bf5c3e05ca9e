package data

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg" // registers the JPEG decoder for ImageFolder
	_ "image/png"  // registers the PNG decoder for ImageFolder
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/emberml/ember/tensor"
)

// ImageToTensor converts img to a Float32 tensor of shape [channels, H, W]
// with values in [0, 1], as torchvision's ToTensor does: channels 3 gives
// the red, green and blue planes (alpha dropped, colours not
// premultiplied, like PIL's convert("RGB")), channels 1 the grey level as
// Go's color.Gray16Model computes it. It returns an error for another
// channel count or an empty image.
func ImageToTensor(img image.Image, channels int) (*tensor.Tensor, error) {
	if channels != 1 && channels != 3 {
		return nil, fmt.Errorf("data.ImageToTensor: %d channels; want 1 (grey) or 3 (RGB)", channels)
	}
	b := img.Bounds()
	h, w := b.Dy(), b.Dx()
	if h <= 0 || w <= 0 {
		return nil, fmt.Errorf("data.ImageToTensor: empty image (bounds %v)", b)
	}
	plane := h * w
	pix := make([]float32, channels*plane)
	if g, ok := img.(*image.Gray); ok && channels == 1 {
		for y := range h {
			row := g.Pix[y*g.Stride : y*g.Stride+w]
			for x, v := range row {
				pix[y*w+x] = float32(v) / 255
			}
		}
		return tensor.FromSlice(pix, 1, h, w), nil
	}
	if n, ok := img.(*image.NRGBA); ok && channels == 3 { // PNG with alpha
		for y := range h {
			row := n.Pix[y*n.Stride : y*n.Stride+4*w]
			for x := range w {
				i := y*w + x
				pix[i] = float32(row[4*x]) / 255
				pix[plane+i] = float32(row[4*x+1]) / 255
				pix[2*plane+i] = float32(row[4*x+2]) / 255
			}
		}
		return tensor.FromSlice(pix, 3, h, w), nil
	}
	for y := range h {
		for x := range w {
			c := img.At(b.Min.X+x, b.Min.Y+y)
			i := y*w + x
			if channels == 1 {
				pix[i] = float32(color.Gray16Model.Convert(c).(color.Gray16).Y) / 65535
				continue
			}
			n := color.NRGBA64Model.Convert(c).(color.NRGBA64)
			pix[i] = float32(n.R) / 65535
			pix[plane+i] = float32(n.G) / 65535
			pix[2*plane+i] = float32(n.B) / 65535
		}
	}
	return tensor.FromSlice(pix, channels, h, w), nil
}

// ImageFolderOptions configures OpenImageFolder. The zero value reads
// PNG and JPEG files as 3-channel images without a transform.
type ImageFolderOptions struct {
	// Transform, if set, is applied to each image tensor (shape [C, H, W],
	// values in [0, 1]) with the sample's generator.
	Transform Transform
	// Channels is 3 for RGB images (the default, as torchvision's
	// ImageFolder converts every image to RGB) or 1 for grey levels.
	Channels int
	// Extensions lists the file name endings that count as images,
	// compared without regard to case (default ".png", ".jpg", ".jpeg").
	Extensions []string
	// MaxPixels bounds the width × height an image file may declare; a
	// larger one is an error before it is decoded (default 1<<26, 64
	// megapixels), so that a hostile file cannot exhaust memory.
	MaxPixels int
}

// imageFile is one sample of an ImageFolder.
type imageFile struct {
	path  string // slash-separated, relative to the root
	class int
}

// ImageFolder is a dataset of image files laid out one subfolder per
// class, as torchvision's ImageFolder reads them: root/cat/001.png,
// root/dog/xyz.jpg... The class names are the subfolders' names in sorted
// order, and a sample's label is its class's index. Images are decoded
// with the standard library's PNG and JPEG decoders when a sample is read.
//
// Sample i is (image Float32 [C, H, W] after the Transform, label Int64
// 0-d). ImageFolder is a SampleSource: a Loader reports a file that cannot
// be read or decoded as an error from Loader.Err, naming the file. Files
// are read through an os.Root, so a symbolic link that points outside the
// root is an error, never followed. Close releases the root.
type ImageFolder struct {
	root      *os.Root
	dir       string
	classes   []string
	files     []imageFile
	transform Transform
	channels  int
	maxPixels int
}

// OpenImageFolder lists the images under dir: every file with an image
// extension at any depth below each subfolder of dir, in sorted order
// (symbolic links to folders are not descended; files that are not
// regular files are left out). It returns an error if dir cannot be read,
// has no subfolders, a class folder holds no image, a symbolic link points
// outside dir, or an option is invalid.
func OpenImageFolder(dir string, opts ImageFolderOptions) (*ImageFolder, error) {
	channels := cmpOr(opts.Channels, 3)
	if channels != 1 && channels != 3 {
		return nil, fmt.Errorf("data.OpenImageFolder: Channels %d; want 1 or 3", opts.Channels)
	}
	if opts.MaxPixels < 0 {
		return nil, fmt.Errorf("data.OpenImageFolder: negative MaxPixels %d", opts.MaxPixels)
	}
	exts := opts.Extensions
	if exts == nil {
		exts = []string{".png", ".jpg", ".jpeg"}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("data.OpenImageFolder: %w", err)
	}
	f := &ImageFolder{root: root, dir: dir, transform: opts.Transform, channels: channels, maxPixels: cmpOr(opts.MaxPixels, 1<<26)}
	if err := f.scan(exts); err != nil {
		root.Close()
		return nil, fmt.Errorf("data.OpenImageFolder: %s: %w", dir, err)
	}
	return f, nil
}

// scan fills f.classes and f.files.
func (f *ImageFolder) scan(exts []string) error {
	fsys := f.root.FS()
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return err
	}
	for _, e := range entries { // ReadDir sorts by name
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			info, err := f.root.Stat(e.Name())
			if err != nil {
				return fmt.Errorf("class folder %s: %w", e.Name(), err)
			}
			isDir = info.IsDir()
		}
		if isDir {
			f.classes = append(f.classes, e.Name())
		}
	}
	if len(f.classes) == 0 {
		return errors.New("no class subfolders (want one subfolder of images per class)")
	}
	isImage := func(name string) bool {
		lower := strings.ToLower(name)
		return slices.ContainsFunc(exts, func(ext string) bool { return strings.HasSuffix(lower, strings.ToLower(ext)) })
	}
	for class, name := range f.classes {
		before := len(f.files)
		err := fs.WalkDir(fsys, name, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !isImage(d.Name()) {
				return nil
			}
			mode := d.Type()
			if mode&fs.ModeSymlink != 0 {
				info, err := f.root.Stat(p) // fails for a link out of the root
				if err != nil {
					return err
				}
				mode = info.Mode().Type()
			}
			if mode.IsRegular() {
				f.files = append(f.files, imageFile{path: p, class: class})
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(f.files) == before {
			return fmt.Errorf("class folder %s holds no image file (extensions %v)", name, exts)
		}
	}
	return nil
}

// Close releases the folder's root; samples cannot be read afterwards.
func (f *ImageFolder) Close() error { return f.root.Close() }

// Len returns the number of image files.
func (f *ImageFolder) Len() int { return len(f.files) }

// Classes returns the class names, sorted; label k is Classes()[k].
func (f *ImageFolder) Classes() []string { return slices.Clone(f.classes) }

// Path returns the file of sample i, relative to the folder's root and
// slash-separated.
func (f *ImageFolder) Path(i int) string {
	checkIndex("ImageFolder.Path", i, len(f.files))
	return f.files[i].path
}

// Label returns the class index of sample i.
func (f *ImageFolder) Label(i int) int {
	checkIndex("ImageFolder.Label", i, len(f.files))
	return f.files[i].class
}

// Image decodes the file of sample i. The error names the file.
func (f *ImageFolder) Image(i int) (image.Image, error) {
	checkIndex("ImageFolder.Image", i, len(f.files))
	p := f.files[i].path
	wrap := func(err error) error { return fmt.Errorf("data.ImageFolder: %s: %w", path.Join(f.dir, p), err) }
	info, err := f.root.Stat(p)
	if err != nil {
		return nil, wrap(err)
	}
	if !info.Mode().IsRegular() {
		return nil, wrap(errors.New("not a regular file"))
	}
	file, err := f.root.Open(p)
	if err != nil {
		return nil, wrap(err)
	}
	defer file.Close()
	cfg, format, err := image.DecodeConfig(file)
	if err != nil {
		return nil, wrap(err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > f.maxPixels/max(cfg.Height, 1) {
		return nil, wrap(fmt.Errorf("%s image of %dx%d pixels; the limit is %d pixels (ImageFolderOptions.MaxPixels)", format, cfg.Width, cfg.Height, f.maxPixels))
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return nil, wrap(err)
	}
	img, _, err := image.Decode(file)
	if err != nil {
		return nil, wrap(err)
	}
	return img, nil
}

// Sample decodes sample i and applies the transform with gen: (image,
// label). It returns an error naming the file if it cannot be read or
// decoded, or if the transform fails.
func (f *ImageFolder) Sample(i int, gen *tensor.Generator) ([]*tensor.Tensor, error) {
	img, err := f.Image(i)
	if err != nil {
		return nil, err
	}
	x, err := ImageToTensor(img, f.channels)
	if err != nil {
		return nil, fmt.Errorf("data.ImageFolder: %s: %w", path.Join(f.dir, f.files[i].path), err)
	}
	if f.transform != nil {
		if x, err = f.transform.Apply(x, gen); err != nil {
			return nil, fmt.Errorf("data.ImageFolder: %s: %w", path.Join(f.dir, f.files[i].path), err)
		}
	}
	label := tensor.FromSlice([]int64{int64(f.files[i].class)}, []int{}...)
	return []*tensor.Tensor{x, label}, nil
}

// Get returns sample i with a generator seeded by i alone (a Loader uses
// Sample, which reports errors). It panics if the file cannot be read or
// decoded.
func (f *ImageFolder) Get(i int) []*tensor.Tensor {
	s, err := f.Sample(i, tensor.NewGenerator(uint64(i)))
	if err != nil {
		panic(err.Error())
	}
	return s
}

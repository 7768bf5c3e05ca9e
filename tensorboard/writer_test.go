package tensorboard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/tensorboard/internal/tbpb"
	"github.com/emberml/ember/tensorboard/internal/tbpb/hparamspb"
	"github.com/emberml/ember/tensorboard/internal/tbpb/prcurvepb"
	"github.com/emberml/ember/tensorboard/internal/tbpb/projectorpb"
)

// readAll reads every event of the file at path.
func readAll(t *testing.T, path string) []*Event {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r := NewReader(f)
	var out []*Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, ev)
	}
}

// eventFiles returns the event files directly in dir.
func eventFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	require.NoError(t, err)
	return m
}

func TestRecordFramingMatchesTFRecord(t *testing.T) {
	// Known value: the masked CRC-32C of the empty string is the mask
	// delta (the CRC of nothing is 0), and CRC-32C("123456789") is
	// 0xe3069283 (the standard check value).
	assert.Equal(t, uint32(maskDelta), maskedCRC(nil))
	c := uint32(0xe3069283)
	assert.Equal(t, (c>>15|c<<17)+maskDelta, maskedCRC([]byte("123456789")))
	rec := appendRecord(nil, []byte("abc"))
	require.Len(t, rec, 12+3+4)
	assert.Equal(t, uint64(3), binary.LittleEndian.Uint64(rec[:8]))
	assert.Equal(t, maskedCRC(rec[:8]), binary.LittleEndian.Uint32(rec[8:12]))
	assert.Equal(t, "abc", string(rec[12:15]))
	assert.Equal(t, maskedCRC([]byte("abc")), binary.LittleEndian.Uint32(rec[15:]))
}

func TestWriterRoundTrip(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, Options{})
	require.NoError(t, err)
	assert.Regexp(t, `^events\.out\.tfevents\.\d{10}\..+\.\d+\.0$`, filepath.Base(w.Path()))

	w.AddScalar("train/loss", 0.5, 1)
	w.AddScalar("train/loss", 0.25, 2)
	w.AddHistogram("w", tensor.FromSlice([]float32{1, 2, 2, 3, float32(math.NaN())}, 5), 3)
	w.AddImageTensor("img", tensor.FromSlice([]float32{0, 1, 0.5, 0.25, 1, 0, 0, 0, 1, 1, 1, 1}, 3, 2, 2), 4)
	w.AddText("notes", "**bold**", 5)
	w.AddAudio("beep", tensor.FromSlice([]float32{0, 1, -1, 0.5}, 4), 8000, 6)
	require.NoError(t, w.AddPRCurve("pr", []bool{true, false, true, false}, []float64{0.9, 0.8, 0.3, 0.1}, 3, 7))
	require.NoError(t, w.AddHParams(map[string]any{"lr": 0.1, "opt": "sgd", "bn": true, "layers": 3}, map[string]float64{"hparam/accuracy": 0.75}))
	w.AddCustomScalarsLayout(CustomScalarLayout{Categories: []CustomScalarCategory{{Title: "losses", Charts: []CustomScalarChart{{Title: "loss", Multiline: []string{"train/loss"}}}}}})
	require.NoError(t, w.Close())
	assert.ErrorIs(t, w.Close(), ErrClosed)

	evs := readAll(t, w.Path())
	require.GreaterOrEqual(t, len(evs), 2)
	assert.Equal(t, "brain.Event:2", evs[0].FileVersion)
	byTag := map[string][]Value{}
	steps := map[string][]int64{}
	for _, ev := range evs[1:] {
		for _, v := range ev.Values {
			byTag[v.Tag] = append(byTag[v.Tag], v)
			steps[v.Tag] = append(steps[v.Tag], ev.Step)
		}
	}
	require.Len(t, byTag["train/loss"], 2)
	assert.Equal(t, 0.5, byTag["train/loss"][0].Scalar)
	assert.Equal(t, 0.25, byTag["train/loss"][1].Scalar)
	assert.Equal(t, []int64{1, 2}, steps["train/loss"])

	h := byTag["w"][0].Histogram
	require.NotNil(t, h)
	assert.Equal(t, 1.0, h.Min)
	assert.Equal(t, 3.0, h.Max)
	assert.Equal(t, 4.0, h.Num, "the NaN is left out")
	assert.Equal(t, 8.0, h.Sum)
	assert.Equal(t, 18.0, h.SumSquares)
	var total float64
	for _, c := range h.Buckets {
		total += c
	}
	assert.Equal(t, 4.0, total)
	assert.Equal(t, 3.0, h.BucketLimits[len(h.BucketLimits)-1])

	im := byTag["img"][0].Image
	require.NotNil(t, im)
	assert.Equal(t, 2, im.Width)
	assert.Equal(t, 2, im.Height)
	decoded, err := png.Decode(bytes.NewReader(im.Encoded))
	require.NoError(t, err)
	r, g, b, _ := decoded.At(1, 0).RGBA() // pixel (0,1): R=1, G=0, B=1
	assert.Equal(t, []uint32{0xffff, 0, 0xffff}, []uint32{r, g, b})

	assert.Equal(t, []string{"**bold**"}, byTag["notes"][0].Text)
	assert.Equal(t, "text", byTag["notes"][0].Plugin)

	a := byTag["beep"][0].Audio
	require.NotNil(t, a)
	assert.Equal(t, 8000.0, a.SampleRate)
	assert.Equal(t, int64(4), a.Frames)
	require.Len(t, a.Encoded, 44+8)
	assert.Equal(t, "RIFF", string(a.Encoded[:4]))
	assert.Equal(t, int16(32767), int16(binary.LittleEndian.Uint16(a.Encoded[46:])))
	assert.Equal(t, int16(-32767), int16(binary.LittleEndian.Uint16(a.Encoded[48:])))

	pr := byTag["pr"][0]
	assert.Equal(t, "pr_curves", pr.Plugin)
	var prData prcurvepb.PrCurvePluginData
	require.NoError(t, proto.Unmarshal(pr.PluginContent, &prData))
	assert.Equal(t, uint32(3), prData.NumThresholds)

	for _, tag := range []string{hparamsExperimentTag, hparamsSessionStartTag, hparamsSessionEndTag} {
		require.Len(t, byTag[tag], 1, tag)
		assert.Equal(t, "hparams", byTag[tag][0].Plugin)
	}
	var start hparamspb.HParamsPluginData
	require.NoError(t, proto.Unmarshal(byTag[hparamsSessionStartTag][0].PluginContent, &start))
	hp := start.GetSessionStartInfo().GetHparams()
	assert.Equal(t, 0.1, hp["lr"].GetNumberValue())
	assert.Equal(t, "sgd", hp["opt"].GetStringValue())
	assert.True(t, hp["bn"].GetBoolValue())
	assert.Equal(t, 3.0, hp["layers"].GetNumberValue())
	assert.Equal(t, 0.75, byTag["hparam/accuracy"][0].Scalar)

	require.Len(t, byTag["custom_scalars__config__"], 1)
	var layout tbpb.Layout
	require.NoError(t, proto.Unmarshal([]byte(byTag["custom_scalars__config__"][0].Text[0]), &layout))
	assert.Equal(t, "losses", layout.Category[0].Title)
	assert.Equal(t, []string{"train/loss"}, layout.Category[0].Chart[0].GetMultiline().Tag)
}

func TestPRCurveCounts(t *testing.T) {
	// Thresholds 0, 0.5, 1 over predictions 0.9(+) 0.8(-) 0.3(+) 0.1(-).
	got, err := prCurve([]bool{true, false, true, false}, []float64{0.9, 0.8, 0.3, 0.1}, 3)
	require.NoError(t, err)
	assert.Equal(t, []float32{2, 1, 0}, got[0:3], "TP")
	assert.Equal(t, []float32{2, 1, 0}, got[3:6], "FP")
	assert.Equal(t, []float32{0, 1, 2}, got[6:9], "TN")
	assert.Equal(t, []float32{0, 1, 2}, got[9:12], "FN")
	assert.Equal(t, []float32{0.5, 0.5, 0}, got[12:15], "precision")
	assert.Equal(t, []float32{1, 0.5, 0}, got[15:18], "recall")
	_, err = prCurve([]bool{true}, []float64{1.5}, 3)
	assert.ErrorContains(t, err, "prediction 0 is 1.5")
	_, err = prCurve([]bool{true}, []float64{math.NaN()}, 3)
	assert.Error(t, err)
}

func TestAddHParamsRejectsUnknownTypes(t *testing.T) {
	w, err := NewWriter(t.TempDir(), Options{})
	require.NoError(t, err)
	defer w.Close()
	assert.ErrorContains(t, w.AddHParams(map[string]any{"f": []int{1}}, nil), `hyperparameter "f": value of type []int`)
}

func TestAddScalarsWritesOneRunPerKey(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, Options{})
	require.NoError(t, err)
	w.AddScalars("loss/all", map[string]float64{"train": 1.5, "test": 2.5}, 7)
	require.NoError(t, w.Close())
	for key, want := range map[string]float64{"train": 1.5, "test": 2.5} {
		files := eventFiles(t, filepath.Join(dir, "loss_all_"+key))
		require.Len(t, files, 1)
		evs := readAll(t, files[0])
		require.Len(t, evs, 2)
		assert.Equal(t, "loss/all", evs[1].Values[0].Tag)
		assert.Equal(t, want, evs[1].Values[0].Scalar)
		assert.Equal(t, int64(7), evs[1].Step)
	}
}

func TestWriterFromManyGoroutinesAndFlush(t *testing.T) {
	w, err := NewWriter(t.TempDir(), Options{QueueSize: 4})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				w.AddScalar("g", float64(g), int64(i))
			}
		}()
	}
	wg.Wait()
	require.NoError(t, w.Flush())
	// Flush has written everything queued: the file holds it before Close.
	assert.Len(t, readAll(t, w.Path()), 1+8*50)
	require.NoError(t, w.Close())
	assert.ErrorIs(t, w.Flush(), ErrClosed)
	assert.PanicsWithValue(t, "tensorboard: Add on a closed Writer", func() { w.AddScalar("x", 1, 0) })
}

func TestTwoWritersInOneDirectoryGetTwoFiles(t *testing.T) {
	dir := t.TempDir()
	a, err := NewWriter(dir, Options{})
	require.NoError(t, err)
	b, err := NewWriter(dir, Options{})
	require.NoError(t, err)
	assert.NotEqual(t, a.Path(), b.Path())
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	assert.Len(t, eventFiles(t, dir), 2)
}

func TestImageGridLayout(t *testing.T) {
	// Three 1×2×2 images, two a row: a 2-pixel border around and between.
	batch := tensor.FromSlice([]uint8{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 3, 1, 2, 2)
	img := ImageGrid(batch, 2)
	b := img.Bounds()
	assert.Equal(t, 2*(2+2)+2, b.Dx())
	assert.Equal(t, 2*(2+2)+2, b.Dy())
	gray := func(x, y int) uint8 { r, _, _, _ := img.At(x, y).RGBA(); return uint8(r >> 8) }
	assert.Equal(t, uint8(1), gray(2, 2))
	assert.Equal(t, uint8(4), gray(3, 3))
	assert.Equal(t, uint8(5), gray(6, 2))
	assert.Equal(t, uint8(9), gray(2, 6))
	assert.Equal(t, uint8(0), gray(6, 6), "the missing fourth image is black")
	assert.Panics(t, func() { ImageGrid(tensor.Zeros([]int{2, 2, 2}), 1) })
	assert.PanicsWithValue(t, "tensorboard.TensorImage: shape [2 3 3] has 2 channels; want 1, 3 or 4", func() { TensorImage(tensor.Zeros([]int{2, 3, 3})) })
}

func TestAddEmbeddingWritesProjectorFiles(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, Options{})
	require.NoError(t, err)
	mat := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 3, 2)
	require.NoError(t, w.AddEmbedding("words", mat, []string{"a", "b\tc", "d"}, tensor.Zeros([]int{3, 1, 4, 5}), 12))
	require.NoError(t, w.AddEmbedding("", mat, nil, nil, 0))
	require.NoError(t, w.Close())
	tsv, err := os.ReadFile(filepath.Join(dir, "00012", "words", "tensors.tsv"))
	require.NoError(t, err)
	assert.Equal(t, "1\t2\n3\t4\n5\t6\n", string(tsv))
	meta, err := os.ReadFile(filepath.Join(dir, "00012", "words", "metadata.tsv"))
	require.NoError(t, err)
	assert.Equal(t, "a\nb c\nd\n", string(meta))
	f, err := os.Open(filepath.Join(dir, "00012", "words", "sprite.png"))
	require.NoError(t, err)
	sprite, err := png.Decode(f)
	f.Close()
	require.NoError(t, err)
	assert.Equal(t, 2*5, sprite.Bounds().Dx(), "2 images a row of width 5")
	assert.Equal(t, 2*4, sprite.Bounds().Dy())
	cfg, err := os.ReadFile(filepath.Join(dir, "projector_config.pbtxt"))
	require.NoError(t, err)
	var pc projectorpb.ProjectorConfig
	require.NoError(t, prototext.Unmarshal(cfg, &pc))
	require.Len(t, pc.Embeddings, 2)
	e := pc.Embeddings[0]
	assert.Equal(t, "words:00012", e.TensorName)
	assert.Equal(t, "00012/words/tensors.tsv", e.TensorPath)
	assert.Equal(t, "00012/words/metadata.tsv", e.MetadataPath)
	assert.Equal(t, "00012/words/sprite.png", e.GetSprite().GetImagePath())
	assert.Equal(t, []uint32{5, 4}, e.GetSprite().GetSingleImageDim(), "width, then height")
	assert.Equal(t, "00000/default/tensors.tsv", pc.Embeddings[1].TensorPath)
	assert.Empty(t, pc.Embeddings[1].MetadataPath)
	assert.Error(t, w.AddEmbedding("../x", mat, nil, nil, 0))
	assert.Error(t, w.AddEmbedding("x", mat, []string{"one"}, nil, 0))
}

func TestNewWriterRejectsBadSuffixAndUnwritableDir(t *testing.T) {
	_, err := NewWriter(t.TempDir(), Options{FilenameSuffix: "/x"})
	assert.Error(t, err)
	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = NewWriter(filepath.Join(file, "sub"), Options{})
	assert.Error(t, err)
}

func TestReaderReportsCorruptionWithOffset(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, Options{})
	require.NoError(t, err)
	w.AddScalar("a", 1, 1)
	w.AddScalar("b", 2, 2)
	require.NoError(t, w.Close())
	good, err := os.ReadFile(w.Path())
	require.NoError(t, err)
	firstLen := int(binary.LittleEndian.Uint64(good[:8])) + 16
	secondLen := int(binary.LittleEndian.Uint64(good[firstLen:])) + 16

	cases := []struct {
		name      string
		mutate    func(b []byte) []byte
		offset    int64
		truncated bool
		reason    string
	}{
		{"payload byte flipped", func(b []byte) []byte { b[firstLen+12] ^= 1; return b }, int64(firstLen), false, "payload CRC"},
		{"length byte flipped", func(b []byte) []byte { b[firstLen+secondLen] ^= 0x40; return b }, int64(firstLen + secondLen), false, "length CRC"},
		{"cut in a payload", func(b []byte) []byte { return b[:len(b)-3] }, int64(firstLen + secondLen), true, "file ends"},
		{"cut in a header", func(b []byte) []byte { return b[:firstLen+5] }, int64(firstLen), true, "header"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewReader(bytes.NewReader(c.mutate(bytes.Clone(good))))
			var err error
			for err == nil {
				_, err = r.Next()
			}
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, c.offset, ce.Offset)
			assert.Equal(t, c.truncated, ce.Truncated)
			assert.Contains(t, ce.Error(), c.reason)
			assert.Contains(t, ce.Error(), "offset")
		})
	}
	// A well-framed record that is not an Event.
	bad := appendRecord(nil, []byte{0xff, 0xff, 0xff})
	_, err = NewReader(bytes.NewReader(bad)).Next()
	assert.ErrorContains(t, err, "does not hold an Event")
}

func TestReaderRefusesHugeLengthWithoutAllocating(t *testing.T) {
	var head [12]byte
	binary.LittleEndian.PutUint64(head[:8], 1<<40)
	binary.LittleEndian.PutUint32(head[8:], maskedCRC(head[:8]))
	_, err := NewReader(bytes.NewReader(head[:])).Next()
	assert.ErrorContains(t, err, "exceeds")
	binary.LittleEndian.PutUint64(head[:8], 1<<30)
	binary.LittleEndian.PutUint32(head[8:], maskedCRC(head[:8]))
	_, err = NewReader(bytes.NewReader(head[:])).Next()
	var ce *CorruptionError
	require.ErrorAs(t, err, &ce)
	assert.True(t, ce.Truncated)
}

func FuzzReader(f *testing.F) {
	dir := f.TempDir()
	w, err := NewWriter(dir, Options{})
	if err != nil {
		f.Fatal(err)
	}
	w.AddScalar("loss", 1.5, 3)
	w.AddText("t", "x", 1)
	w.AddHistogramValues("h", []float64{1, 2, 3}, 2, 1)
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(w.Path())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(appendRecord(nil, []byte("not an event")))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b))
		for range 1000 {
			ev, err := r.Next()
			if err != nil {
				var ce *CorruptionError
				if !errors.Is(err, io.EOF) && !errors.As(err, &ce) {
					t.Fatalf("error %v is neither io.EOF nor a CorruptionError", err)
				}
				return
			}
			if ev.Offset < 0 || ev.Offset >= int64(len(b)) {
				t.Fatalf("event offset %d outside the %d-byte input", ev.Offset, len(b))
			}
		}
	})
}

// BenchmarkAddScalar measures what logging a scalar costs the caller's
// goroutine alone: the Writer here has no writing goroutine and room in
// its queue for every call, so the figure is the queueing (time stamp,
// lock, append, wake-up) without the encoding, which the real Writer does
// on its own goroutine. BenchmarkAddScalarSustained measures both.
func BenchmarkAddScalar(b *testing.B) {
	w := &Writer{opts: Options{QueueSize: b.N + 1}, items: make([]item, 0, b.N+1), wake: make(chan struct{}, 1)}
	w.notFull.L = &w.mu
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		w.AddScalar("train/loss", 0.5, int64(i))
	}
	b.StopTimer()
	if len(w.items) != b.N {
		b.Fatalf("%d items queued, want %d", len(w.items), b.N)
	}
}

// BenchmarkAddScalarSustained logs through the default queue: when the
// queue is full the caller waits, so this is the rate the file absorbs
// (encoding, framing and buffered writing included).
func BenchmarkAddScalarSustained(b *testing.B) {
	w, err := NewWriter(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		w.AddScalar("train/loss", 0.5, int64(i))
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAddScalarParallel logs from every core at once.
func BenchmarkAddScalarParallel(b *testing.B) {
	w, err := NewWriter(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := int64(0)
		for pb.Next() {
			w.AddScalar("train/loss", 0.5, i)
			i++
		}
	})
}

func TestFlushIntervalWritesWithoutFlush(t *testing.T) {
	w, err := NewWriter(t.TempDir(), Options{FlushInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	defer w.Close()
	w.AddScalar("x", 1, 1)
	// The writing goroutine flushes on its own: wait for the event to
	// reach the file (the bound only guards against a hang).
	deadline := time.Now().Add(30 * time.Second)
	for {
		if evs := readAll(t, w.Path()); len(evs) == 2 {
			assert.Equal(t, 1.0, evs[1].Values[0].Scalar)
			return
		}
		require.True(t, time.Now().Before(deadline), "the event never reached the file")
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMakeHistogramEdgeCases(t *testing.T) {
	h := makeHistogram([]float64{2, 2, 2}, 10)
	assert.Equal(t, []float64{2}, h.BucketLimit, "equal values: one bucket")
	assert.Equal(t, []float64{3}, h.Bucket)
	h = makeHistogram(nil, 10)
	assert.Zero(t, h.Num)
	assert.Empty(t, h.Bucket)
	h = makeHistogram([]float64{math.Inf(1), math.NaN()}, 10)
	assert.Zero(t, h.Num, "only non-finite values: empty")
	h = makeHistogram([]float64{0, 1, 2, 3, 4}, 2)
	assert.Equal(t, []float64{2, 4}, h.BucketLimit)
	assert.Equal(t, []float64{2, 3}, h.Bucket, "2 falls in the upper bucket, [2, 4]")
}

func TestAddScalarsRejectsKeysThatAreNotFolderNames(t *testing.T) {
	w, err := NewWriter(t.TempDir(), Options{})
	require.NoError(t, err)
	w.AddScalars("loss", map[string]float64{"a/../../x": 1}, 0)
	assert.ErrorContains(t, w.Flush(), "cannot name a run folder")
	assert.ErrorContains(t, w.Close(), "cannot name a run folder")
}

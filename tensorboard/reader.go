package tensorboard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/emberml/ember/tensorboard/internal/tbpb"
)

// maxRecordBytes bounds one record's payload (a protobuf message is at
// most 2 GiB).
const maxRecordBytes = 2 << 30

// CorruptionError reports a record of an event file that cannot be read:
// its byte offset in the file, and why.
type CorruptionError struct {
	// Offset is the byte offset of the record's first byte.
	Offset int64
	// Truncated is true when the file ends inside the record (as the last
	// record of a file still being written may).
	Truncated bool
	// Reason says what is wrong.
	Reason string
}

// Error describes the corruption and its offset.
func (e *CorruptionError) Error() string {
	return fmt.Sprintf("tensorboard: corrupt event record at offset %d: %s", e.Offset, e.Reason)
}

// Event is one record of an event file, decoded.
type Event struct {
	// Offset is the byte offset of the record in its file.
	Offset int64
	// WallTime is when the event was written.
	WallTime time.Time
	// Step is the training step the event belongs to.
	Step int64
	// FileVersion is set on a file's first event ("brain.Event:2").
	FileVersion string
	// Values are the event's summary values (nil for other events).
	Values []Value
	// GraphDef holds the serialized GraphDef of a graph event.
	GraphDef []byte
	// Payload is the whole serialized Event message, for readers that
	// decode fields this type does not show.
	Payload []byte
}

// Value is one summary value of an event.
type Value struct {
	// Tag names the series the value belongs to.
	Tag string
	// Plugin is the TensorBoard plugin that displays the value ("scalars",
	// "histograms", "images", "audio", "text", "hparams", "pr_curves",
	// "custom_scalars"), taken from the value's metadata or, for the
	// classic value kinds, from the kind.
	Plugin string
	// Scalar holds a scalar's value (a simple value, or a one-element
	// tensor of the scalars plugin).
	Scalar float64
	// Histogram holds a histogram's buckets.
	Histogram *Histogram
	// Image holds an image's encoded bytes (PNG) and size.
	Image *EncodedImage
	// Audio holds an audio clip's encoded bytes (WAV).
	Audio *EncodedAudio
	// Text holds the strings of a text value (a tensor of strings).
	Text []string
	// PluginContent is the plugin's own data from the value's metadata.
	PluginContent []byte
}

// Histogram is a histogram as TensorBoard stores it: bucket i counts the
// values between BucketLimits[i-1] (Min for the first bucket) and
// BucketLimits[i]. (AddHistogram's buckets hold their left edge, the last
// one both edges.)
type Histogram struct {
	Min, Max, Num, Sum, SumSquares float64
	BucketLimits, Buckets          []float64
}

// EncodedImage is an encoded image and its size.
type EncodedImage struct {
	Width, Height, Channels int
	Encoded                 []byte
}

// EncodedAudio is an encoded audio clip.
type EncodedAudio struct {
	SampleRate  float64
	Channels    int
	Frames      int64
	ContentType string
	Encoded     []byte
}

// Reader reads the records of an event file, checking the framing and
// both CRCs of each. It never panics on malformed input: every fault is a
// *CorruptionError naming the record's offset.
type Reader struct {
	r   io.Reader
	off int64
	buf bytes.Buffer
}

// NewReader returns a Reader of the event file held by r.
func NewReader(r io.Reader) *Reader { return &Reader{r: r} }

// Next returns the next event, io.EOF after the last one, or a
// *CorruptionError. After a corruption the reader cannot resynchronise:
// stop reading.
func (r *Reader) Next() (*Event, error) {
	start := r.off
	payload, err := r.nextRecord()
	if err != nil {
		return nil, err
	}
	var ev tbpb.Event
	if err := proto.Unmarshal(payload, &ev); err != nil {
		return nil, &CorruptionError{Offset: start, Reason: fmt.Sprintf("record does not hold an Event: %v", err)}
	}
	return decodeEvent(&ev, payload, start), nil
}

// nextRecord returns the next record's payload, checked.
func (r *Reader) nextRecord() ([]byte, error) {
	start := r.off
	var head [recordHeaderSize]byte
	n, err := io.ReadFull(r.r, head[:])
	r.off += int64(n)
	switch {
	case errors.Is(err, io.EOF):
		return nil, io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, &CorruptionError{Offset: start, Truncated: true, Reason: fmt.Sprintf("file ends %d bytes into a record header", n)}
	case err != nil:
		return nil, err
	}
	length := binary.LittleEndian.Uint64(head[:8])
	if got, want := binary.LittleEndian.Uint32(head[8:]), maskedCRC(head[:8]); got != want {
		return nil, &CorruptionError{Offset: start, Reason: fmt.Sprintf("length CRC is %#08x, want %#08x", got, want)}
	}
	if length > maxRecordBytes {
		return nil, &CorruptionError{Offset: start, Reason: fmt.Sprintf("record length %d exceeds %d", length, uint64(maxRecordBytes))}
	}
	// Read through a buffer that grows with the data, so a length the file
	// does not back is never allocated up front.
	r.buf.Reset()
	got, err := io.CopyN(&r.buf, r.r, int64(length)+recordFooterSize)
	r.off += got
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &CorruptionError{Offset: start, Truncated: true, Reason: fmt.Sprintf("file ends %d bytes into a record of %d", got, length)}
		}
		return nil, err
	}
	b := r.buf.Bytes()
	payload, foot := b[:length], b[length:]
	if got, want := binary.LittleEndian.Uint32(foot), maskedCRC(payload); got != want {
		return nil, &CorruptionError{Offset: start, Reason: fmt.Sprintf("payload CRC is %#08x, want %#08x", got, want)}
	}
	return bytes.Clone(payload), nil
}

// decodeEvent converts a parsed Event.
func decodeEvent(ev *tbpb.Event, payload []byte, off int64) *Event {
	sec, frac := math.Modf(ev.GetWallTime())
	out := &Event{
		Offset:      off,
		WallTime:    time.Unix(int64(sec), int64(frac*1e9)),
		Step:        ev.GetStep(),
		FileVersion: ev.GetFileVersion(),
		GraphDef:    ev.GetGraphDef(),
		Payload:     payload,
	}
	for _, v := range ev.GetSummary().GetValue() {
		out.Values = append(out.Values, decodeValue(v))
	}
	return out
}

// decodeValue converts a summary value.
func decodeValue(v *tbpb.Summary_Value) Value {
	out := Value{Tag: v.GetTag()}
	if pd := v.GetMetadata().GetPluginData(); pd != nil {
		out.Plugin, out.PluginContent = pd.GetPluginName(), pd.GetContent()
	}
	switch x := v.Value.(type) {
	case *tbpb.Summary_Value_SimpleValue:
		out.Plugin, out.Scalar = "scalars", float64(x.SimpleValue)
	case *tbpb.Summary_Value_Histo:
		h := x.Histo
		out.Plugin = "histograms"
		out.Histogram = &Histogram{Min: h.GetMin(), Max: h.GetMax(), Num: h.GetNum(), Sum: h.GetSum(), SumSquares: h.GetSumSquares(), BucketLimits: h.GetBucketLimit(), Buckets: h.GetBucket()}
	case *tbpb.Summary_Value_Image:
		im := x.Image
		out.Plugin = "images"
		out.Image = &EncodedImage{Width: int(im.GetWidth()), Height: int(im.GetHeight()), Channels: int(im.GetColorspace()), Encoded: im.GetEncodedImageString()}
	case *tbpb.Summary_Value_Audio:
		a := x.Audio
		out.Plugin = "audio"
		out.Audio = &EncodedAudio{SampleRate: float64(a.GetSampleRate()), Channels: int(a.GetNumChannels()), Frames: a.GetLengthFrames(), ContentType: a.GetContentType(), Encoded: a.GetEncodedAudioString()}
	case *tbpb.Summary_Value_Tensor:
		t := x.Tensor
		switch {
		case t.GetDtype() == tbpb.DataType_DT_STRING:
			for _, s := range t.GetStringVal() {
				out.Text = append(out.Text, string(s))
			}
		case len(t.GetFloatVal()) == 1:
			out.Scalar = float64(t.GetFloatVal()[0])
		case len(t.GetDoubleVal()) == 1:
			out.Scalar = t.GetDoubleVal()[0]
		case t.GetDtype() == tbpb.DataType_DT_FLOAT && len(t.GetTensorContent()) == 4:
			out.Scalar = float64(math.Float32frombits(binary.LittleEndian.Uint32(t.GetTensorContent())))
		}
	}
	return out
}

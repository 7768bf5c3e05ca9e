package tensorboard

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/tensorboard/internal/tbpb"
	"github.com/emberml/ember/tensorboard/internal/tbpb/hparamspb"
	"github.com/emberml/ember/tensorboard/internal/tbpb/prcurvepb"
	"github.com/emberml/ember/tensorboard/internal/tbpb/textpb"
)

// pluginMetadata returns summary metadata naming plugin, with content.
func pluginMetadata(plugin string, content []byte) *tbpb.SummaryMetadata {
	return &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: plugin, Content: content}}
}

// mustMarshal encodes a message built here (it cannot fail: every field is
// set from Go values of the right type).
func mustMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic("tensorboard: encoding " + string(m.ProtoReflect().Descriptor().FullName()) + ": " + err.Error())
	}
	return b
}

// DefaultHistogramBins is the number of equal-width buckets AddHistogram
// uses.
const DefaultHistogramBins = 64

// AddHistogram logs the distribution of values' elements under tag at
// step, in DefaultHistogramBins equal-width buckets between the smallest
// and largest finite element. NaN and infinite elements are left out of the
// buckets and of Num, Sum and SumSquares; when every element is one of
// them the histogram is empty. The elements are copied before
// AddHistogram returns.
func (w *Writer) AddHistogram(tag string, values *tensor.Tensor, step int64) {
	w.AddHistogramValues(tag, values.Float64s(), DefaultHistogramBins, step)
}

// AddHistogramValues is AddHistogram for a slice, in bins buckets.
func (w *Writer) AddHistogramValues(tag string, values []float64, bins int, step int64) {
	if bins < 1 {
		panic(fmt.Sprintf("tensorboard.AddHistogramValues: %d bins; want at least 1", bins))
	}
	w.addSummary(step, &tbpb.Summary_Value{Tag: tag, Value: &tbpb.Summary_Value_Histo{Histo: makeHistogram(values, bins)}})
}

// makeHistogram counts values in bins equal-width buckets.
func makeHistogram(values []float64, bins int) *tbpb.HistogramProto {
	h := &tbpb.HistogramProto{Min: math.Inf(1), Max: math.Inf(-1)}
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		h.Min, h.Max = min(h.Min, v), max(h.Max, v)
		h.Num++
		h.Sum += v
		h.SumSquares += v * v
	}
	if h.Num == 0 {
		h.Min, h.Max = 0, 0
		return h
	}
	if h.Min == h.Max {
		h.BucketLimit, h.Bucket = []float64{h.Max}, []float64{h.Num}
		return h
	}
	width := (h.Max - h.Min) / float64(bins)
	counts := make([]float64, bins)
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		i := min(int((v-h.Min)/width), bins-1)
		counts[i]++
	}
	h.Bucket = counts
	h.BucketLimit = make([]float64, bins)
	for i := range bins {
		h.BucketLimit[i] = h.Min + float64(i+1)*width
	}
	h.BucketLimit[bins-1] = h.Max
	return h
}

// AddText logs markdown text under tag at step (TensorBoard's text
// plugin renders it).
func (w *Writer) AddText(tag, markdown string, step int64) {
	w.addSummary(step, &tbpb.Summary_Value{
		Tag:      tag,
		Metadata: pluginMetadata("text", mustMarshal(&textpb.TextPluginData{})),
		Value: &tbpb.Summary_Value_Tensor{Tensor: &tbpb.TensorProto{
			Dtype:       tbpb.DataType_DT_STRING,
			TensorShape: &tbpb.TensorShapeProto{Dim: []*tbpb.TensorShapeProto_Dim{{Size: 1}}},
			StringVal:   [][]byte{[]byte(markdown)},
		}},
	})
}

// AddAudio logs a clip of sampleRate samples a second under tag at step,
// encoded as 16-bit PCM WAV. samples has shape [frames] (mono) or
// [channels, frames]; values are clamped to [-1, 1].
func (w *Writer) AddAudio(tag string, samples *tensor.Tensor, sampleRate int, step int64) {
	shape := samples.Shape()
	channels, frames := 1, 0
	switch len(shape) {
	case 1:
		frames = shape[0]
	case 2:
		channels, frames = shape[0], shape[1]
	default:
		panic(fmt.Sprintf("tensorboard.AddAudio: samples of shape %v; want [frames] or [channels, frames]", shape))
	}
	if sampleRate <= 0 || channels == 0 {
		panic(fmt.Sprintf("tensorboard.AddAudio: sample rate %d with shape %v; want a positive rate and at least one channel", sampleRate, shape))
	}
	w.addSummary(step, &tbpb.Summary_Value{Tag: tag, Value: &tbpb.Summary_Value_Audio{Audio: &tbpb.Summary_Audio{
		SampleRate:         float32(sampleRate),
		NumChannels:        int64(channels),
		LengthFrames:       int64(frames),
		EncodedAudioString: encodeWAV(samples.Float32s(), channels, frames, sampleRate),
		ContentType:        "audio/wav",
	}}})
}

// encodeWAV encodes planar samples ([channel][frame]) as a 16-bit PCM
// RIFF WAVE file with interleaved frames.
func encodeWAV(planar []float32, channels, frames, rate int) []byte {
	dataBytes := channels * frames * 2
	b := make([]byte, 0, 44+dataBytes)
	le := binary.LittleEndian
	b = append(b, "RIFF"...)
	b = le.AppendUint32(b, uint32(36+dataBytes))
	b = append(b, "WAVEfmt "...)
	b = le.AppendUint32(b, 16)
	b = le.AppendUint16(b, 1) // PCM
	b = le.AppendUint16(b, uint16(channels))
	b = le.AppendUint32(b, uint32(rate))
	b = le.AppendUint32(b, uint32(rate*channels*2))
	b = le.AppendUint16(b, uint16(channels*2))
	b = le.AppendUint16(b, 16)
	b = append(b, "data"...)
	b = le.AppendUint32(b, uint32(dataBytes))
	for f := range frames {
		for c := range channels {
			v := planar[c*frames+f]
			if math.IsNaN(float64(v)) {
				v = 0
			}
			v = max(-1, min(1, v))
			b = le.AppendUint16(b, uint16(int16(math.Round(float64(v)*32767))))
		}
	}
	return b
}

// DefaultPRThresholds is the number of thresholds AddPRCurve uses.
const DefaultPRThresholds = 127

// AddPRCurve logs a precision-recall curve under tag at step for a binary
// classifier: labels[i] is whether example i is positive and
// predictions[i] the probability the model gave it, in [0, 1]. The curve
// has numThresholds thresholds evenly spaced over [0, 1] (0 means
// DefaultPRThresholds), stored as TensorBoard's pr_curves plugin stores it
// (true and false positives, true and false negatives, precision and
// recall per threshold). A prediction outside [0, 1] or NaN is an error
// and nothing is logged.
func (w *Writer) AddPRCurve(tag string, labels []bool, predictions []float64, numThresholds int, step int64) error {
	if numThresholds == 0 {
		numThresholds = DefaultPRThresholds
	}
	if numThresholds < 2 {
		return fmt.Errorf("tensorboard.AddPRCurve: %d thresholds; want at least 2", numThresholds)
	}
	if len(labels) != len(predictions) {
		return fmt.Errorf("tensorboard.AddPRCurve: %d labels and %d predictions; want as many of each", len(labels), len(predictions))
	}
	data, err := prCurve(labels, predictions, numThresholds)
	if err != nil {
		return err
	}
	content := mustMarshal(&prcurvepb.PrCurvePluginData{Version: 0, NumThresholds: uint32(numThresholds)})
	w.addSummary(step, &tbpb.Summary_Value{
		Tag:      tag,
		Metadata: pluginMetadata("pr_curves", content),
		Value: &tbpb.Summary_Value_Tensor{Tensor: &tbpb.TensorProto{
			Dtype:       tbpb.DataType_DT_FLOAT,
			TensorShape: &tbpb.TensorShapeProto{Dim: []*tbpb.TensorShapeProto_Dim{{Size: 6}, {Size: int64(numThresholds)}}},
			FloatVal:    data,
		}},
	})
	return nil
}

// prCurve returns the 6×n rows of the pr_curves plugin: TP, FP, TN, FN,
// precision, recall at thresholds i/(n-1).
func prCurve(labels []bool, predictions []float64, n int) ([]float32, error) {
	tpBucket := make([]float64, n)
	fpBucket := make([]float64, n)
	for i, p := range predictions {
		if !(p >= 0 && p <= 1) {
			return nil, fmt.Errorf("tensorboard.AddPRCurve: prediction %d is %v; want a probability in [0, 1]", i, p)
		}
		b := int(math.Floor(p * float64(n-1)))
		if labels[i] {
			tpBucket[b]++
		} else {
			fpBucket[b]++
		}
	}
	// A threshold counts the examples at or above it: sums from the top.
	tp, fp := make([]float64, n), make([]float64, n)
	var st, sf float64
	for i := n - 1; i >= 0; i-- {
		st += tpBucket[i]
		sf += fpBucket[i]
		tp[i], fp[i] = st, sf
	}
	out := make([]float32, 6*n)
	for i := range n {
		tn, fn := fp[0]-fp[i], tp[0]-tp[i]
		out[i] = float32(tp[i])
		out[n+i] = float32(fp[i])
		out[2*n+i] = float32(tn)
		out[3*n+i] = float32(fn)
		out[4*n+i] = float32(tp[i] / max(1e-7, tp[i]+fp[i]))
		out[5*n+i] = float32(tp[i] / max(1e-7, tp[i]+fn))
	}
	return out, nil
}

// CustomScalarLayout arranges scalar charts for TensorBoard's custom
// scalars dashboard: categories of charts, each chart drawing the tags
// that match its regular expressions.
type CustomScalarLayout struct {
	Categories []CustomScalarCategory
}

// CustomScalarCategory is a titled group of charts; Closed folds it at
// first.
type CustomScalarCategory struct {
	Title  string
	Closed bool
	Charts []CustomScalarChart
}

// CustomScalarChart is one chart. It draws either one line per tag
// matching a regular expression of Multiline, or, when Margin is set, one
// line with a band per entry of Margin.
type CustomScalarChart struct {
	Title     string
	Multiline []string
	Margin    []MarginSeries
}

// MarginSeries names the tags of a line (Value) and of the lower and upper
// edges of its band.
type MarginSeries struct {
	Value, Lower, Upper string
}

// AddCustomScalarsLayout logs the custom scalars dashboard's layout. Log
// it once per run (at any time); TensorBoard uses the last one.
func (w *Writer) AddCustomScalarsLayout(layout CustomScalarLayout) {
	pb := &tbpb.Layout{}
	for _, c := range layout.Categories {
		cat := &tbpb.Category{Title: c.Title, Closed: c.Closed}
		for _, ch := range c.Charts {
			chart := &tbpb.Chart{Title: ch.Title}
			if len(ch.Margin) > 0 {
				m := &tbpb.MarginChartContent{}
				for _, s := range ch.Margin {
					m.Series = append(m.Series, &tbpb.MarginChartContent_Series{Value: s.Value, Lower: s.Lower, Upper: s.Upper})
				}
				chart.Content = &tbpb.Chart_Margin{Margin: m}
			} else {
				chart.Content = &tbpb.Chart_Multiline{Multiline: &tbpb.MultilineChartContent{Tag: slices.Clone(ch.Multiline)}}
			}
			cat.Chart = append(cat.Chart, chart)
		}
		pb.Category = append(pb.Category, cat)
	}
	w.addSummary(0, &tbpb.Summary_Value{
		Tag:      "custom_scalars__config__",
		Metadata: pluginMetadata("custom_scalars", nil),
		Value: &tbpb.Summary_Value_Tensor{Tensor: &tbpb.TensorProto{
			Dtype:       tbpb.DataType_DT_STRING,
			TensorShape: &tbpb.TensorShapeProto{},
			StringVal:   [][]byte{mustMarshal(pb)},
		}},
	})
}

// HParams tags and the empty tensor the plugin's summaries carry.
const (
	hparamsExperimentTag   = "_hparams_/experiment"
	hparamsSessionStartTag = "_hparams_/session_start_info"
	hparamsSessionEndTag   = "_hparams_/session_end_info"
)

// AddHParams logs the run's hyperparameters and final metrics for the
// HParams dashboard, which shows one row per run: the experiment (the
// hyperparameters' names and types, the metrics' tags), the session start
// with the values, each metric as a scalar at step 0 under its own name, and
// the session end (status success). Values may be strings, bools or Go
// numbers; any other type is an error and nothing is logged. Call it once
// per run, when the metrics are known.
func (w *Writer) AddHParams(hparams map[string]any, metrics map[string]float64) error {
	names := make([]string, 0, len(hparams))
	for k := range hparams {
		names = append(names, k)
	}
	sort.Strings(names)
	exp := &hparamspb.Experiment{}
	start := &hparamspb.SessionStartInfo{Hparams: map[string]*structpb.Value{}, StartTimeSecs: wallTime(time.Now())}
	for _, name := range names {
		v, typ, err := hparamValue(hparams[name])
		if err != nil {
			return fmt.Errorf("tensorboard.AddHParams: hyperparameter %q: %w", name, err)
		}
		exp.HparamInfos = append(exp.HparamInfos, &hparamspb.HParamInfo{Name: name, Type: typ})
		start.Hparams[name] = v
	}
	metricNames := make([]string, 0, len(metrics))
	for k := range metrics {
		metricNames = append(metricNames, k)
	}
	sort.Strings(metricNames)
	for _, m := range metricNames {
		exp.MetricInfos = append(exp.MetricInfos, &hparamspb.MetricInfo{Name: &hparamspb.MetricName{Tag: m}})
	}
	value := func(tag string, data *hparamspb.HParamsPluginData) *tbpb.Summary_Value {
		return &tbpb.Summary_Value{
			Tag:      tag,
			Metadata: pluginMetadata("hparams", mustMarshal(data)),
			Value: &tbpb.Summary_Value_Tensor{Tensor: &tbpb.TensorProto{
				Dtype:       tbpb.DataType_DT_FLOAT,
				TensorShape: &tbpb.TensorShapeProto{Dim: []*tbpb.TensorShapeProto_Dim{{Size: 0}}},
			}},
		}
	}
	w.addSummary(0, value(hparamsExperimentTag, &hparamspb.HParamsPluginData{Data: &hparamspb.HParamsPluginData_Experiment{Experiment: exp}}))
	w.addSummary(0, value(hparamsSessionStartTag, &hparamspb.HParamsPluginData{Data: &hparamspb.HParamsPluginData_SessionStartInfo{SessionStartInfo: start}}))
	for _, m := range metricNames {
		w.AddScalar(m, metrics[m], 0)
	}
	end := &hparamspb.SessionEndInfo{Status: hparamspb.Status_STATUS_SUCCESS, EndTimeSecs: wallTime(time.Now())}
	w.addSummary(0, value(hparamsSessionEndTag, &hparamspb.HParamsPluginData{Data: &hparamspb.HParamsPluginData_SessionEndInfo{SessionEndInfo: end}}))
	return nil
}

// hparamValue converts a hyperparameter's Go value.
func hparamValue(v any) (*structpb.Value, hparamspb.DataType, error) {
	switch x := v.(type) {
	case string:
		return structpb.NewStringValue(x), hparamspb.DataType_DATA_TYPE_STRING, nil
	case bool:
		return structpb.NewBoolValue(x), hparamspb.DataType_DATA_TYPE_BOOL, nil
	case int:
		return structpb.NewNumberValue(float64(x)), hparamspb.DataType_DATA_TYPE_FLOAT64, nil
	case int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		f, _ := toFloat(x)
		return structpb.NewNumberValue(f), hparamspb.DataType_DATA_TYPE_FLOAT64, nil
	}
	return nil, 0, fmt.Errorf("value of type %T; want a string, bool or number", v)
}

// toFloat converts a Go number.
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

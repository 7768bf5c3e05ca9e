package train

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
)

// MetricsLog writes one CSV row per Log call (say per epoch), for reading
// in a spreadsheet, pandas or gnuplot. The header is the names of the first
// row's metrics, in the order given; later rows are written in that column
// order, with an empty cell for a metric they lack. Each row is flushed to
// the underlying writer as it is logged, so a crashed run keeps its rows.
// Numbers are written in Go's shortest round-trip form.
type MetricsLog struct {
	w       *csv.Writer
	closer  io.Closer
	columns []string
}

// NewMetricsLog returns a log that writes CSV to w. Close does not close w.
func NewMetricsLog(w io.Writer) *MetricsLog {
	return &MetricsLog{w: csv.NewWriter(w)}
}

// OpenMetricsLog opens a CSV log at path: a new file, or, if path holds a
// log already (a resumed run), its end, keeping its header's columns so
// that the new rows line up. It returns an error if the file cannot be
// opened or its first line is not a CSV header.
func OpenMetricsLog(path string) (*MetricsLog, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("train.OpenMetricsLog: %w", err)
	}
	l := &MetricsLog{w: csv.NewWriter(f), closer: f}
	header, err := csv.NewReader(bufio.NewReader(f)).Read()
	switch {
	case errors.Is(err, io.EOF): // a new log
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("train.OpenMetricsLog: %s: reading the header: %w", path, err)
	default:
		l.columns = header
	}
	return l, nil
}

// Columns returns the log's column names (nil before the first row).
func (l *MetricsLog) Columns() []string { return slices.Clone(l.columns) }

// Log writes one row. The first row also writes the header from its
// metrics' names. It returns an error for a metric whose name is not a
// column, a name given twice, or a failed write.
func (l *MetricsLog) Log(metrics ...Metric) error {
	if l.columns == nil {
		if len(metrics) == 0 {
			return errors.New("train.MetricsLog.Log: the first row needs at least one metric (it makes the header)")
		}
		cols := make([]string, len(metrics))
		for i, m := range metrics {
			cols[i] = m.Name
		}
		if err := l.w.Write(cols); err != nil {
			return fmt.Errorf("train.MetricsLog.Log: %w", err)
		}
		l.columns = cols
	}
	row := make([]string, len(l.columns))
	set := make([]bool, len(l.columns))
	for _, m := range metrics {
		i := slices.Index(l.columns, m.Name)
		if i < 0 {
			return fmt.Errorf("train.MetricsLog.Log: metric %q is not a column of this log (columns %v, set by its first row)", m.Name, l.columns)
		}
		if set[i] {
			return fmt.Errorf("train.MetricsLog.Log: metric %q given twice", m.Name)
		}
		set[i] = true
		row[i] = strconv.FormatFloat(m.Value, 'g', -1, 64)
	}
	if err := l.w.Write(row); err != nil {
		return fmt.Errorf("train.MetricsLog.Log: %w", err)
	}
	l.w.Flush()
	if err := l.w.Error(); err != nil {
		return fmt.Errorf("train.MetricsLog.Log: %w", err)
	}
	return nil
}

// Close flushes the log and closes its file if OpenMetricsLog opened it.
func (l *MetricsLog) Close() error {
	l.w.Flush()
	err := l.w.Error()
	if l.closer != nil {
		err = errors.Join(err, l.closer.Close())
		l.closer = nil
	}
	return err
}

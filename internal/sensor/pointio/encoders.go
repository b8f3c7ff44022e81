package pointio

import (
	"strconv"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/jsonenc"
)

// csvEncoder writes CSV lines (doc.go). In a framed answer, every line
// starts with the series' labels.
type csvEncoder struct {
	prefix []byte // the labels field and its separator, in a series
}

func (*csvEncoder) contentType() string { return "text/csv" }

func (e *csvEncoder) begin(dst []byte, l *Layout) []byte {
	if l.Shape != Rows {
		return dst
	}
	if l.Series {
		dst = append(dst, "metric,"...)
	}
	dst = append(dst, 't')
	for _, c := range l.Columns {
		dst = append(dst, ',')
		dst = appendCSVField(dst, c)
	}
	return append(dst, '\n')
}

func (e *csvEncoder) beginSeries(dst []byte, _ *Layout, ls labels.Labels, _ bool) []byte {
	e.prefix = appendCSVField(e.prefix[:0], string(appendLabelsText(nil, ls)))
	e.prefix = append(e.prefix, ',')
	return dst
}

func (e *csvEncoder) endSeries(dst []byte) []byte {
	e.prefix = e.prefix[:0]
	return dst
}

func (e *csvEncoder) point(dst []byte, _ bool, t int64, v float64) []byte {
	dst = append(dst, e.prefix...)
	dst = strconv.AppendInt(dst, t, 10)
	dst = append(dst, ',')
	dst = appendFloat(dst, v)
	return append(dst, '\n')
}

func (e *csvEncoder) row(dst []byte, _ *Layout, _ bool, t int64, vs []float64) []byte {
	dst = append(dst, e.prefix...)
	dst = strconv.AppendInt(dst, t, 10)
	for _, v := range vs {
		dst = append(dst, ',')
		dst = appendFloat(dst, v)
	}
	return append(dst, '\n')
}

func (e *csvEncoder) interval(dst []byte, _ bool, from, to int64) []byte {
	dst = append(dst, e.prefix...)
	dst = strconv.AppendInt(dst, from, 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, to, 10)
	return append(dst, '\n')
}

func (*csvEncoder) end(dst []byte, _ *Layout) []byte { return dst }

// jsonEncoder writes a JSON array of items, or the framed document
// {"status":"success","data":[…]} (doc.go).
type jsonEncoder struct {
	keys [][]byte // `,"min":` per column of a row
}

func (*jsonEncoder) contentType() string { return "application/json" }

func (e *jsonEncoder) begin(dst []byte, l *Layout) []byte {
	for _, c := range l.Columns {
		k := jsonenc.AppendString([]byte{','}, c)
		e.keys = append(e.keys, append(k, ':'))
	}
	if l.Series {
		return append(dst, `{"status":"success","data":[`...)
	}
	return append(dst, '[')
}

func (*jsonEncoder) beginSeries(dst []byte, l *Layout, ls labels.Labels, first bool) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"metric":{`...)
	i := 0
	ls.Range(func(l labels.Label) {
		if i > 0 {
			dst = append(dst, ',')
		}
		i++
		dst = jsonenc.AppendString(dst, l.Name)
		dst = append(dst, ':')
		dst = jsonenc.AppendString(dst, l.Value)
	})
	dst = append(dst, `},"`...)
	dst = append(dst, l.Shape.String()...)
	return append(dst, `":[`...)
}

func (*jsonEncoder) endSeries(dst []byte) []byte { return append(dst, "]}"...) }

func (*jsonEncoder) point(dst []byte, first bool, t int64, v float64) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"t":`...)
	dst = strconv.AppendInt(dst, t, 10)
	dst = append(dst, `,"v":`...)
	dst = appendJSONValue(dst, v)
	return append(dst, '}')
}

func (e *jsonEncoder) row(dst []byte, _ *Layout, first bool, t int64, vs []float64) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"t":`...)
	dst = strconv.AppendInt(dst, t, 10)
	for i, v := range vs {
		dst = append(dst, e.keys[i]...)
		dst = appendJSONValue(dst, v)
	}
	return append(dst, '}')
}

func (*jsonEncoder) interval(dst []byte, first bool, from, to int64) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"from":`...)
	dst = strconv.AppendInt(dst, from, 10)
	dst = append(dst, `,"to":`...)
	dst = strconv.AppendInt(dst, to, 10)
	return append(dst, '}')
}

func (*jsonEncoder) end(dst []byte, l *Layout) []byte {
	if l.Series {
		return append(dst, "]}\n"...)
	}
	return append(dst, "]\n"...)
}

// msgpEncoder writes a stream of maps, one per item, and one
// {"metric": labels} before each series' items (doc.go).
type msgpEncoder struct{}

func (msgpEncoder) contentType() string { return "application/msgpack" }

func (msgpEncoder) begin(dst []byte, _ *Layout) []byte { return dst }

func (msgpEncoder) beginSeries(dst []byte, _ *Layout, ls labels.Labels, _ bool) []byte {
	dst = appendMsgpMapLen(dst, 1)
	dst = appendMsgpString(dst, "metric")
	dst = appendMsgpMapLen(dst, ls.Len())
	ls.Range(func(l labels.Label) {
		dst = appendMsgpString(dst, l.Name)
		dst = appendMsgpString(dst, l.Value)
	})
	return dst
}

func (msgpEncoder) endSeries(dst []byte) []byte { return dst }

func (msgpEncoder) point(dst []byte, _ bool, t int64, v float64) []byte {
	dst = append(dst, 0x82, 0xa1, 't')
	dst = appendMsgpInt(dst, t)
	dst = append(dst, 0xa1, 'v')
	return appendMsgpFloat(dst, v)
}

func (msgpEncoder) row(dst []byte, l *Layout, _ bool, t int64, vs []float64) []byte {
	dst = appendMsgpMapLen(dst, 1+len(vs))
	dst = append(dst, 0xa1, 't')
	dst = appendMsgpInt(dst, t)
	for i, v := range vs {
		dst = appendMsgpString(dst, l.Columns[i])
		dst = appendMsgpFloat(dst, v)
	}
	return dst
}

func (msgpEncoder) interval(dst []byte, _ bool, from, to int64) []byte {
	dst = append(dst, 0x82, 0xa4, 'f', 'r', 'o', 'm')
	dst = appendMsgpInt(dst, from)
	dst = append(dst, 0xa2, 't', 'o')
	return appendMsgpInt(dst, to)
}

func (msgpEncoder) end(dst []byte, _ *Layout) []byte { return dst }

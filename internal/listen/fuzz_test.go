package listen

import (
	"bytes"
	"io"
	"testing"
)

// lineLog records a connection's handler calls for FuzzReadLines.
type lineLog struct {
	lines   [][]byte
	tooLong []int
	order   []int // >= 0: index into lines; < 0: -(index into tooLong)-1
}

func (l *lineLog) Line(b []byte) {
	l.order = append(l.order, len(l.lines))
	l.lines = append(l.lines, bytes.Clone(b))
}
func (l *lineLog) TooLong(n int) {
	l.order = append(l.order, -len(l.tooLong)-1)
	l.tooLong = append(l.tooLong, n)
}
func (l *lineLog) Flush() {}
func (l *lineLog) Close() {}

// FuzzReadLines: no line over the limit is passed on, and the lines and
// too-long lengths account for every byte of the input, in order.
func FuzzReadLines(f *testing.F) {
	f.Add([]byte("a 1 2\nb 3 4\n"), uint8(10), false)
	f.Add([]byte("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\nok\nlast"), uint8(16), true)
	f.Add([]byte("\n\n\r\n"), uint8(1), false)
	f.Fuzz(func(t *testing.T, in []byte, max uint8, oneByte bool) {
		maxLine := int(max) + 1
		var r io.Reader = bytes.NewReader(in)
		if oneByte {
			r = &oneByteReader{b: in}
		}
		var l lineLog
		calls := 0
		readLines(r, maxLine, &l, func() { calls++ })
		if calls != len(l.tooLong) {
			t.Fatalf("tooLong hook %d times, handler %d", calls, len(l.tooLong))
		}
		var rebuilt []byte
		for _, o := range l.order {
			if o >= 0 {
				if len(l.lines[o]) > maxLine {
					t.Fatalf("line of %d bytes over the limit %d", len(l.lines[o]), maxLine)
				}
				if bytes.IndexByte(l.lines[o], '\n') >= 0 {
					t.Fatalf("line holds a newline")
				}
				rebuilt = append(rebuilt, l.lines[o]...)
			} else {
				n := l.tooLong[-o-1]
				if n <= maxLine {
					t.Fatalf("too long line of %d bytes, limit %d", n, maxLine)
				}
				rebuilt = append(rebuilt, bytes.Repeat([]byte{'?'}, n)...)
			}
			rebuilt = append(rebuilt, '\n')
		}
		// The input with too long lines masked must equal the rebuilt stream
		// (modulo a final newline the input did not have).
		if len(in) > 0 && in[len(in)-1] != '\n' && len(rebuilt) > 0 {
			rebuilt = rebuilt[:len(rebuilt)-1]
		}
		if len(rebuilt) != len(in) {
			t.Fatalf("rebuilt %d bytes from %d", len(rebuilt), len(in))
		}
		for i := range in {
			if rebuilt[i] != '?' && rebuilt[i] != in[i] {
				t.Fatalf("byte %d: rebuilt %q, input %q", i, rebuilt[i], in[i])
			}
		}
	})
}

type oneByteReader struct {
	b []byte
	i int
}

func (o *oneByteReader) Read(p []byte) (int, error) {
	if o.i >= len(o.b) {
		return 0, io.EOF
	}
	p[0] = o.b[o.i]
	o.i++
	return 1, nil
}

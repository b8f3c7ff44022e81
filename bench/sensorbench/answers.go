package sensorbench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// records is what a client learns from an extraction answer: how many
// records it held and the first and last timestamps. The decoders here
// are written apart from the server's writers (internal/sensor/pointio),
// so that they check them.
type records struct {
	n           int64
	first, last int64
}

func (r *records) add(t int64) {
	if r.n == 0 {
		r.first = t
	}
	r.last = t
	r.n++
}

// writers are the extraction answers' formats.
var writers = []string{"csv", "json", "msgp"}

// decodeRecords reads a whole extraction answer in writer's format.
func decodeRecords(writer string, r io.Reader) (records, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	switch writer {
	case "csv":
		return decodeCSV(br)
	case "json":
		return decodeJSON(br)
	case "msgp":
		return decodeMsgp(br)
	}
	return records{}, fmt.Errorf("unknown writer %q", writer)
}

// decodeCSV counts the lines `t,…` of a CSV answer; a line whose first
// field is not an integer (a header) is skipped.
func decodeCSV(br *bufio.Reader) (records, error) {
	var rs records
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		if len(b) > 0 {
			b = bytes.TrimRight(b, "\r\n")
			if len(b) > 0 {
				f := b
				if i := bytes.IndexByte(b, ','); i >= 0 {
					f = b[:i]
				}
				if t, perr := strconv.ParseInt(string(f), 10, 64); perr == nil {
					rs.add(t)
				} else if line > 1 {
					return rs, fmt.Errorf("csv line %d: %q does not start with a timestamp", line, b[:min(len(b), 60)])
				}
			}
		}
		switch {
		case err == io.EOF:
			return rs, nil
		case errors.Is(err, bufio.ErrBufferFull):
			return rs, fmt.Errorf("csv line %d: longer than %d bytes", line, br.Size())
		case err != nil:
			return rs, err
		}
	}
}

// decodeJSON counts the objects of a JSON array (or of NDJSON: objects
// at the top level) and reads their "t". It scans bytes rather than
// unmarshalling, so that the client keeps up with the server.
func decodeJSON(br *bufio.Reader) (records, error) {
	var (
		rs       records
		depth    int
		recDepth = -1 // depth of a record's '{': 1 inside a top-level array, else 0
		inStr    bool
		esc      bool
		key      []byte // the string just read inside a record
		keyDone  bool   // key holds a whole string not yet followed by ':'
		readT    bool   // reading the value of "t"
		num      []byte
		haveT    bool
		off      int64
	)
	endT := func() error {
		t, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(string(num), 64)
			if ferr != nil || f != math.Trunc(f) {
				return fmt.Errorf("json byte %d: \"t\" is %q, not an integer", off, num)
			}
			t = int64(f)
		}
		rs.add(t)
		readT, haveT, num = false, true, num[:0]
		return nil
	}
	for ; ; off++ {
		c, err := br.ReadByte()
		if err == io.EOF {
			if depth != 0 || inStr {
				return rs, fmt.Errorf("json: answer ends inside a value at byte %d", off)
			}
			return rs, nil
		}
		if err != nil {
			return rs, err
		}
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr, keyDone = false, true
				continue
			}
			if depth == recDepth+1 {
				key = append(key, c)
			}
			continue
		}
		if readT {
			switch c {
			case ' ', '\n', '\t', '\r':
				if len(num) == 0 {
					continue
				}
				fallthrough
			case ',', '}':
				if err := endT(); err != nil {
					return rs, err
				}
			default:
				num = append(num, c)
				continue
			}
		}
		switch c {
		case '"':
			inStr, key, keyDone = true, key[:0], false
		case ':':
			if depth == recDepth+1 && keyDone && string(key) == "t" {
				readT = true
			}
			keyDone = false
		case '[':
			if depth == 0 && recDepth < 0 {
				recDepth = 1
			}
			depth++
		case '{':
			if recDepth < 0 {
				recDepth = 0
			}
			if depth == recDepth {
				haveT = false
			}
			depth++
		case '}':
			depth--
			if depth == recDepth && !haveT {
				return rs, fmt.Errorf("json byte %d: a record without \"t\"", off)
			}
		case ']':
			depth--
		case ',':
			keyDone = false
		}
		if depth < 0 {
			return rs, fmt.Errorf("json byte %d: unbalanced %q", off, c)
		}
	}
}

// decodeMsgp counts the maps of a MessagePack stream (or of an array of
// maps) and reads their "t".
func decodeMsgp(br *bufio.Reader) (records, error) {
	var rs records
	dec := msgpack.NewDecoder(br)
	record := func() error {
		n, err := dec.DecodeMapLen()
		if err != nil {
			return fmt.Errorf("msgp record %d: %w", rs.n+1, err)
		}
		found := false
		for range n {
			k, err := dec.DecodeString()
			if err != nil {
				return fmt.Errorf("msgp record %d: key: %w", rs.n+1, err)
			}
			if k != "t" {
				if err := dec.Skip(); err != nil {
					return fmt.Errorf("msgp record %d: %q: %w", rs.n+1, k, err)
				}
				continue
			}
			t, err := dec.DecodeInt64()
			if err != nil {
				return fmt.Errorf("msgp record %d: t: %w", rs.n+1, err)
			}
			rs.add(t)
			found = true
		}
		if !found {
			return fmt.Errorf("msgp record %d: no \"t\"", rs.n+1)
		}
		return nil
	}
	for {
		c, err := dec.PeekCode()
		if err == io.EOF {
			return rs, nil
		}
		if err != nil {
			return rs, err
		}
		if msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32 {
			n, err := dec.DecodeArrayLen()
			if err != nil {
				return rs, err
			}
			for range n {
				if err := record(); err != nil {
					return rs, err
				}
			}
			continue
		}
		if err := record(); err != nil {
			return rs, err
		}
	}
}

// decodeVMExport counts the samples of VictoriaMetrics' /api/v1/export
// answer (JSON lines, each with "values" and "timestamps" arrays).
func decodeVMExport(br *bufio.Reader) (records, error) {
	var rs records
	key := []byte(`"timestamps":[`)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			i := bytes.Index(b, key)
			if i < 0 {
				return rs, fmt.Errorf("export line %d: no %s", line, key)
			}
			rest := b[i+len(key):]
			j := bytes.IndexByte(rest, ']')
			if j < 0 {
				return rs, fmt.Errorf("export line %d: timestamps do not end", line)
			}
			for f := range bytes.SplitSeq(rest[:j], []byte{','}) {
				if len(f) == 0 {
					continue
				}
				t, perr := strconv.ParseInt(string(f), 10, 64)
				if perr != nil {
					return rs, fmt.Errorf("export line %d: timestamp %q: %w", line, f, perr)
				}
				rs.add(t)
			}
		}
		if err == io.EOF {
			return rs, nil
		}
		if err != nil {
			return rs, err
		}
	}
}

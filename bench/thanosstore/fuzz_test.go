package thanosstore

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"reflect"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// appendRecord appends a record as the index and segments write them.
func appendRecord(dst, payload []byte, extra int) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(payload)-extra))
	dst = append(dst, payload...)
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
}

// appendPostings appends a postings list as the index writes it.
func appendPostings(dst []byte, refs ...uint32) []byte {
	list := binary.BigEndian.AppendUint32(nil, uint32(len(refs)))
	for _, r := range refs {
		list = binary.BigEndian.AppendUint32(list, r)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(list)))
	dst = append(dst, list...)
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(list, castagnoli))
}

func xorChunk(t testing.TB, n int) []byte {
	c := chunkenc.NewXORChunk()
	app, err := c.Appender()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		app.Append(0, int64(i)*15000, float64(i)*1.5)
	}
	return append([]byte{byte(chunkenc.EncXOR)}, c.Bytes()...)
}

// FuzzReadRecord feeds arbitrary bytes to the record reader and the XOR
// decoder behind it: no panic, the same answer twice, and a record written
// by appendRecord reads back as written.
func FuzzReadRecord(f *testing.F) {
	f.Add(appendRecord(nil, xorChunk(f, 120), 1), uint8(1))
	f.Add(appendRecord(nil, []byte{2, 1, 2, 3, 4}, 0), uint8(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, uint8(0))
	f.Add([]byte{}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, extra uint8) {
		x := int(extra % 2)
		decode := func(data []byte) ([]byte, int64, error, samples, error) {
			payload, need, err := readRecord(data, x)
			var s samples
			var derr error
			if err == nil && need == 0 && x == 1 {
				var it chunkenc.Iterator
				s, derr = decodeXOR(payload, &it, math.MinInt64, math.MaxInt64)
			}
			return payload, need, err, s, derr
		}
		p1, n1, e1, s1, d1 := decode(data)
		p2, n2, e2, s2, d2 := decode(data)
		if string(p1) != string(p2) || n1 != n2 || (e1 == nil) != (e2 == nil) || !reflect.DeepEqual(s1, s2) || (d1 == nil) != (d2 == nil) {
			t.Fatal("two reads of the same bytes differ")
		}
		if len(data) >= x {
			rec := appendRecord(nil, data, x)
			payload, need, err := readRecord(rec, x)
			if err != nil || need != 0 || string(payload) != string(data) {
				t.Fatalf("round trip: payload %x, need %d, err %v", payload, need, err)
			}
		}
	})
}

// FuzzDecodePostings feeds arbitrary bytes to the postings decoder: no
// panic, the same answer twice, and a list written by appendPostings reads
// back as written.
func FuzzDecodePostings(f *testing.F) {
	f.Add(appendPostings(nil, 1, 2, 70, 1<<30))
	f.Add(appendPostings(nil))
	f.Add([]byte{0, 0, 0, 8, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := postingsRange{start: 0, end: int64(len(data))}
		l1, e1 := decodePostings("index", data, 0, r)
		l2, e2 := decodePostings("index", data, 0, r)
		if !reflect.DeepEqual(l1, l2) || (e1 == nil) != (e2 == nil) {
			t.Fatal("two decodes of the same bytes differ")
		}

		var refs []uint32
		for i := 0; i+4 <= len(data); i += 4 {
			r := binary.BigEndian.Uint32(data[i:])
			if len(refs) == 0 || r > refs[len(refs)-1] {
				refs = append(refs, r)
			}
		}
		enc := appendPostings(nil, refs...)
		got, err := decodePostings("index", enc, 0, postingsRange{start: 0, end: int64(len(enc))})
		if err != nil || len(got) != len(refs) {
			t.Fatalf("round trip of %v: %v, %v", refs, got, err)
		}
		for i := range refs {
			if uint32(got[i]) != refs[i] {
				t.Fatalf("round trip of %v: %v", refs, got)
			}
		}
	})
}

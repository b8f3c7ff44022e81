package rollup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/aerie-db/aerie/internal/checksum"
	"github.com/aerie-db/aerie/internal/fileutil"
)

// The state file (docs/format/rollup.md) records, per level, the time up to
// which the level holds every bucket of the raw data.
const (
	StateMagic   uint32 = 0xAE1208B5
	StateVersion uint8  = 1
	stateFile           = "state"
	maxLevels           = 64
)

// appendState encodes the done times: magic, version, count, then per
// level its name and done time, and a CRC32C of everything before it.
func appendState(dst []byte, done map[string]int64, order []string) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, StateMagic)
	dst = append(dst, StateVersion)
	dst = binary.AppendUvarint(dst, uint64(len(order)))
	for _, name := range order {
		dst = binary.AppendUvarint(dst, uint64(len(name)))
		dst = append(dst, name...)
		dst = binary.AppendVarint(dst, done[name])
	}
	return binary.BigEndian.AppendUint32(dst, checksum.CRC32C(dst[start:]))
}

var errState = errors.New("rollup state")

func decodeState(b []byte) (map[string]int64, error) {
	if len(b) < 9 {
		return nil, fmt.Errorf("%w: %d bytes, too short", errState, len(b))
	}
	if m := binary.BigEndian.Uint32(b); m != StateMagic {
		return nil, fmt.Errorf("%w: bad magic %#x", errState, m)
	}
	if v := b[4]; v != StateVersion {
		return nil, fmt.Errorf("%w: unknown version %d (this Aerie reads %d)", errState, v, StateVersion)
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if c := checksum.CRC32C(body); c != sum {
		return nil, fmt.Errorf("%w: CRC32C %#x, want %#x", errState, c, sum)
	}
	p := body[5:]
	n, k := binary.Uvarint(p)
	if k <= 0 || n > maxLevels {
		return nil, fmt.Errorf("%w: bad level count", errState)
	}
	p = p[k:]
	out := make(map[string]int64, n)
	for i := uint64(0); i < n; i++ {
		l, k := binary.Uvarint(p)
		if k <= 0 || l > 64 || uint64(len(p)-k) < l {
			return nil, fmt.Errorf("%w: level %d: bad name", errState, i)
		}
		name := string(p[k : k+int(l)])
		p = p[k+int(l):]
		d, k := binary.Varint(p)
		if k <= 0 {
			return nil, fmt.Errorf("%w: level %s: bad time", errState, name)
		}
		p = p[k:]
		out[name] = d
	}
	if len(p) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errState, len(p))
	}
	return out, nil
}

func readState(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	st, err := decodeState(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

func writeState(path string, done map[string]int64, order []string) error {
	return fileutil.WriteFileAtomic(path, appendState(nil, done, order))
}

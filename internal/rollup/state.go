package rollup

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"

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

// maxDirty bounds the dirty ranges a state file may hold (they are merged,
// so a real file holds few).
const maxDirty = 1 << 16

// Interval is an inclusive time range in ms.
type Interval struct{ Mint, Maxt int64 }

// state is what the state file holds: per level the time before which it
// holds every bucket, and the raw ranges written since (backfill) that the
// levels must compute again.
type state struct {
	done  map[string]int64
	dirty []Interval
}

// appendState encodes the state: magic, version, level count, then per
// level its name and done time, then the dirty count and each range, and
// a CRC32C of everything before it.
func appendState(dst []byte, st state, order []string) []byte {
	done := st.done
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, StateMagic)
	dst = append(dst, StateVersion)
	dst = binary.AppendUvarint(dst, uint64(len(order)))
	for _, name := range order {
		dst = binary.AppendUvarint(dst, uint64(len(name)))
		dst = append(dst, name...)
		dst = binary.AppendVarint(dst, done[name])
	}
	dst = binary.AppendUvarint(dst, uint64(len(st.dirty)))
	for _, iv := range st.dirty {
		dst = binary.AppendVarint(dst, iv.Mint)
		dst = binary.AppendVarint(dst, iv.Maxt)
	}
	return binary.BigEndian.AppendUint32(dst, checksum.CRC32C(dst[start:]))
}

var errState = errors.New("rollup state")

func decodeState(b []byte) (state, error) {
	var st state
	if len(b) < 9 {
		return st, fmt.Errorf("%w: %d bytes, too short", errState, len(b))
	}
	if m := binary.BigEndian.Uint32(b); m != StateMagic {
		return st, fmt.Errorf("%w: bad magic %#x", errState, m)
	}
	if v := b[4]; v != StateVersion {
		return st, fmt.Errorf("%w: unknown version %d (this Aerie reads %d)", errState, v, StateVersion)
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if c := checksum.CRC32C(body); c != sum {
		return st, fmt.Errorf("%w: CRC32C %#x, want %#x", errState, c, sum)
	}
	p := body[5:]
	n, k := binary.Uvarint(p)
	if k <= 0 || n > maxLevels {
		return st, fmt.Errorf("%w: bad level count", errState)
	}
	p = p[k:]
	out := make(map[string]int64, n)
	for i := uint64(0); i < n; i++ {
		l, k := binary.Uvarint(p)
		if k <= 0 || l > 64 || uint64(len(p)-k) < l {
			return st, fmt.Errorf("%w: level %d: bad name", errState, i)
		}
		name := string(p[k : k+int(l)])
		p = p[k+int(l):]
		d, k := binary.Varint(p)
		if k <= 0 {
			return st, fmt.Errorf("%w: level %s: bad time", errState, name)
		}
		p = p[k:]
		out[name] = d
	}
	nd, k := binary.Uvarint(p)
	if k <= 0 || nd > maxDirty {
		return st, fmt.Errorf("%w: bad dirty range count", errState)
	}
	p = p[k:]
	for i := uint64(0); i < nd; i++ {
		a, k := binary.Varint(p)
		if k <= 0 {
			return st, fmt.Errorf("%w: dirty range %d: bad start", errState, i)
		}
		p = p[k:]
		z, k := binary.Varint(p)
		if k <= 0 || z < a {
			return st, fmt.Errorf("%w: dirty range %d: bad end", errState, i)
		}
		p = p[k:]
		st.dirty = append(st.dirty, Interval{a, z})
	}
	if len(p) != 0 {
		return st, fmt.Errorf("%w: %d trailing bytes", errState, len(p))
	}
	st.done = out
	return st, nil
}

func readState(path string) (state, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return state{done: map[string]int64{}}, nil
	}
	if err != nil {
		return state{}, err
	}
	st, err := decodeState(b)
	if err != nil {
		return state{}, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

func writeState(path string, st state, order []string) error {
	return fileutil.WriteFileAtomic(path, appendState(nil, st, order))
}

// addInterval adds iv to sorted, merged ivs (touching ranges merge) and
// tells whether that changed anything.
func addInterval(ivs []Interval, iv Interval) ([]Interval, bool) {
	for _, x := range ivs {
		if x.Mint <= iv.Mint && iv.Maxt <= x.Maxt {
			return ivs, false
		}
	}
	out := make([]Interval, 0, len(ivs)+1)
	for _, x := range ivs {
		if x.Maxt < iv.Mint-1 || x.Mint > iv.Maxt+1 {
			out = append(out, x)
			continue
		}
		iv.Mint, iv.Maxt = min(iv.Mint, x.Mint), max(iv.Maxt, x.Maxt)
	}
	out = append(out, iv)
	slices.SortFunc(out, func(a, b Interval) int { return cmp.Compare(a.Mint, b.Mint) })
	return out, true
}

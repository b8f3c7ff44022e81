package rollup

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aerie-db/aerie/internal/formatdoc"
)

func TestFormatDoc(t *testing.T) {
	formatdoc.Check(t, "../../docs/format/rollup.md", ".", "Average", "Sum", "Min", "Max", "Last", "Count")
}

func TestState(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, stateFile)
	st, err := readState(p)
	if err != nil || len(st.done) != 0 || len(st.dirty) != 0 {
		t.Fatalf("missing file: %v %v", st, err)
	}
	done := map[string]int64{"1m": 1_700_000_000_000, "1h": -3600_000}
	want := state{done: done, dirty: []Interval{{-5, 7}, {100, 200}}}
	if err := writeState(p, want, []string{"1m", "1h"}); err != nil {
		t.Fatal(err)
	}
	got, err := readState(p)
	if err != nil || len(got.done) != 2 || got.done["1m"] != done["1m"] || got.done["1h"] != done["1h"] || !slices.Equal(got.dirty, want.dirty) {
		t.Fatalf("read back %v %v", got, err)
	}
	good, _ := os.ReadFile(p)
	if !bytes.Equal(good, appendState(nil, want, []string{"1m", "1h"})) {
		t.Fatal("not deterministic")
	}
	for _, c := range []struct {
		name string
		b    []byte
		err  string
	}{
		{"short", good[:5], "too short"},
		{"magic", append([]byte{0}, good[1:]...), "bad magic"},
		{"version", append(append(append([]byte{}, good[:4]...), 9), good[5:]...), "unknown version"},
		{"crc", append(append([]byte{}, good[:len(good)-1]...), good[len(good)-1]^1), "CRC32C"},
	} {
		if err := os.WriteFile(p, c.b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readState(p); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.err)
		}
	}
}

func FuzzState(f *testing.F) {
	f.Add(appendState(nil, state{done: map[string]int64{"1m": 5}, dirty: []Interval{{1, 2}}}, []string{"1m"}))
	f.Add([]byte{0xAE, 0x12, 0x08, 0xB5, 1, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeState(b)
		if err != nil {
			return
		}
		order := make([]string, 0, len(st.done))
		for k := range st.done {
			order = append(order, k)
		}
		again, err := decodeState(appendState(nil, st, order))
		if err != nil || len(again.done) != len(st.done) || !slices.Equal(again.dirty, st.dirty) {
			t.Fatalf("round trip: %v %v", again, err)
		}
		for k, v := range st.done {
			if again.done[k] != v {
				t.Fatalf("round trip %s: %d, want %d", k, again.done[k], v)
			}
		}
	})
}

func TestAddInterval(t *testing.T) {
	var ivs []Interval
	for _, c := range []struct {
		add     Interval
		changed bool
		want    []Interval
	}{
		{Interval{10, 20}, true, []Interval{{10, 20}}},
		{Interval{12, 15}, false, []Interval{{10, 20}}},
		{Interval{30, 40}, true, []Interval{{10, 20}, {30, 40}}},
		{Interval{21, 29}, true, []Interval{{10, 40}}},
		{Interval{0, 5}, true, []Interval{{0, 5}, {10, 40}}},
		{Interval{3, 50}, true, []Interval{{0, 50}}},
	} {
		var changed bool
		ivs, changed = addInterval(ivs, c.add)
		if changed != c.changed || !slices.Equal(ivs, c.want) {
			t.Fatalf("add %v: %v (changed %v), want %v (changed %v)", c.add, ivs, changed, c.want, c.changed)
		}
	}
}

package rollup

import (
	"bytes"
	"os"
	"path/filepath"
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
	if err != nil || len(st) != 0 {
		t.Fatalf("missing file: %v %v", st, err)
	}
	done := map[string]int64{"1m": 1_700_000_000_000, "1h": -3600_000}
	if err := writeState(p, done, []string{"1m", "1h"}); err != nil {
		t.Fatal(err)
	}
	got, err := readState(p)
	if err != nil || len(got) != 2 || got["1m"] != done["1m"] || got["1h"] != done["1h"] {
		t.Fatalf("read back %v %v", got, err)
	}
	good, _ := os.ReadFile(p)
	if !bytes.Equal(good, appendState(nil, done, []string{"1m", "1h"})) {
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
	f.Add(appendState(nil, map[string]int64{"1m": 5}, []string{"1m"}))
	f.Add([]byte{0xAE, 0x12, 0x08, 0xB5, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeState(b)
		if err != nil {
			return
		}
		order := make([]string, 0, len(st))
		for k := range st {
			order = append(order, k)
		}
		again, err := decodeState(appendState(nil, st, order))
		if err != nil || len(again) != len(st) {
			t.Fatalf("round trip: %v %v", again, err)
		}
		for k, v := range st {
			if again[k] != v {
				t.Fatalf("round trip %s: %d, want %d", k, again[k], v)
			}
		}
	})
}

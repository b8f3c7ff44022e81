package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

func openDict(t *testing.T, path string) *TagDict {
	t.Helper()
	d, err := OpenTagDict(path)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// crash drops the file handle without the Sync that Close would do.
func crash(d *TagDict) { d.f.Close(); d.f = nil }

func checkPairs(t *testing.T, d *TagDict, want [][2]string) {
	t.Helper()
	if d.Len() != len(want) {
		t.Fatalf("Len = %d, want %d", d.Len(), len(want))
	}
	for i, p := range want {
		n, v, ok := d.Pair(uint32(i))
		if !ok || n != p[0] || v != p[1] {
			t.Fatalf("Pair(%d) = %q, %q, %v; want %q", i, n, v, ok, p)
		}
		if c, ok := d.Code(p[0], p[1]); !ok || c != uint32(i) {
			t.Fatalf("Code(%q) = %d, %v; want %d", p, c, ok, i)
		}
	}
}

func TestTagDictPersistence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tagdict")
	d := openDict(t, path)
	var want [][2]string
	add := func(n, v string) {
		c := d.Add(n, v)
		if int(c) != len(want) {
			t.Fatalf("Add(%s=%s) = %d, want %d", n, v, c, len(want))
		}
		want = append(want, [2]string{n, v})
	}
	add("job", "api")
	add("__name__", "up")
	add("job", "db")
	if c := d.Add("job", "api"); c != 0 {
		t.Fatalf("re-Add gave %d, want 0", c)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	add("job", "")
	add("", "x")
	add("job", "aaa")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d = openDict(t, path)
	checkPairs(t, d, want)
	if got := d.Names(); !slices.Equal(got, []string{"", "__name__", "job"}) {
		t.Fatalf("Names = %q", got)
	}
	if got := d.ValueCodes("job"); !slices.Equal(got, []uint32{3, 5, 0, 2}) {
		t.Fatalf("ValueCodes(job) = %v", got)
	}
	add("z", "1")
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	add("z", "lost")
	crash(d) // the unsynced pair is lost, the rest stays

	d = openDict(t, path)
	defer d.Close()
	checkPairs(t, d, want[:len(want)-1])
	if _, ok := d.Code("z", "lost"); ok {
		t.Fatal("unsynced pair survived a crash")
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

// writeDict writes a tagdict with one record per group and returns the
// file bytes, the pairs, and the start offset of each record.
func writeDict(t *testing.T, path string, groups int) ([]byte, [][2]string, []int) {
	t.Helper()
	d := openDict(t, path)
	var pairs [][2]string
	var starts []int
	for g := 0; g < groups; g++ {
		starts = append(starts, int(d.size))
		for i := 0; i <= g; i++ {
			p := [2]string{fmt.Sprintf("n%d", i), fmt.Sprintf("v%d", g)}
			d.Add(p[0], p[1])
			pairs = append(pairs, p)
		}
		if err := d.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data, pairs, starts
}

// pairsBefore returns how many pairs the records before offset hold.
func pairsBefore(starts []int, off int) int {
	n := 0
	for g, s := range starts {
		if s >= off {
			break
		}
		n += g + 1
	}
	return n
}

func TestTagDictTornTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tagdict")
	data, pairs, starts := writeDict(t, path, 4)
	last := starts[len(starts)-1]
	kept := pairs[:pairsBefore(starts, last)]

	tails := map[string][]byte{}
	for cut := last; cut < len(data); cut++ {
		tails[fmt.Sprintf("cut at %d", cut)] = data[:cut]
	}
	bad := slices.Clone(data)
	bad[len(bad)-1] ^= 0x40 // payload checksum of the last record
	tails["bad crc"] = bad
	tails["zero tail"] = append(slices.Clone(data[:last]), make([]byte, 300)...)

	for name, content := range tails {
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := OpenTagDict(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkPairs(t, d, kept)
		if d.TornBytes() != int64(len(content)-last) {
			t.Fatalf("%s: TornBytes = %d, want %d", name, d.TornBytes(), len(content)-last)
		}
		if st, _ := os.Stat(path); st.Size() != int64(last) {
			t.Fatalf("%s: file is %d bytes after open, want %d", name, st.Size(), last)
		}
		// The truncated file takes new records.
		d.Add("after", "repair")
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		d = openDict(t, path)
		checkPairs(t, d, append(slices.Clone(kept), [2]string{"after", "repair"}))
		d.Close()
	}
}

func TestTagDictCorruption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tagdict")
	data, pairs, starts := writeDict(t, path, 4)
	last := starts[len(starts)-1]
	for i := range data {
		bad := slices.Clone(data)
		bad[i] ^= 0xFF
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := OpenTagDict(path)
		if i >= last {
			// The last record is the torn tail: dropped, not an error.
			if err != nil {
				t.Fatalf("flip at %d in the last record: %v", i, err)
			}
			checkPairs(t, d, pairs[:pairsBefore(starts, last)])
			d.Close()
			continue
		}
		var ce *CorruptionError
		if !errors.As(err, &ce) {
			t.Fatalf("flip at %d: got %v, want a CorruptionError", i, err)
		}
		wantOff := 0 // magic
		if i == 4 {
			wantOff = 4 // version
		}
		for _, s := range starts {
			if s <= i {
				wantOff = s
			}
		}
		if ce.File != path || ce.Offset != int64(wantOff) {
			t.Fatalf("flip at %d: %v; want file %s offset %d", i, err, path, wantOff)
		}
	}
}

func TestTagDictShortFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tagdict")
	for _, content := range [][]byte{nil, {0x54}, appendTagDictHeader(nil)[:4], {1, 2, 3, 4, 5, 6}} {
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		var ce *CorruptionError
		if _, err := OpenTagDict(path); !errors.As(err, &ce) || ce.Section != "header" {
			t.Fatalf("%x: got %v, want a header CorruptionError", content, err)
		}
	}
}

func TestTagDictSyncAfterClose(t *testing.T) {
	d := openDict(t, filepath.Join(t.TempDir(), "tagdict"))
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d.Add("a", "b")
	if err := d.Sync(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sync after Close: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestTagDictBigSync(t *testing.T) {
	// More than one record per Sync.
	defer func(old int) { maxRecordPayload = old }(maxRecordPayload)
	maxRecordPayload = 1000
	path := filepath.Join(t.TempDir(), "tagdict")
	d := openDict(t, path)
	big := string(make([]byte, 300))
	var want [][2]string
	for i := 0; i < 70; i++ {
		p := [2]string{"big", fmt.Sprintf("%03d%s", i, big)}
		d.Add(p[0], p[1])
		want = append(want, p)
	}
	size := d.size
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Size() < size+70*300 {
		t.Fatalf("file is %d bytes", st.Size())
	}
	d = openDict(t, path)
	defer d.Close()
	checkPairs(t, d, want)
	if n := countRecords(t, path); n != 24 { // 70 pairs of ~310 bytes, 3 per record
		t.Fatalf("one Sync wrote %d records, want 24", n)
	}
}

func countRecords(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for off := tagDictHeaderSize; off < len(data); n++ {
		off += frameHeaderSize + int(binary.BigEndian.Uint32(data[off:])) + frameTrailerSize
	}
	return n
}

func TestTagDictConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tagdict")
	d := openDict(t, path)
	const workers, n = 4, 500
	codes := make([][]uint32, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				// Every worker adds the same pairs, in a different order.
				k := (i*7 + w*131) % n
				codes[w] = append(codes[w], d.Add(fmt.Sprintf("n%d", k%9), fmt.Sprint(k)))
				if c, ok := d.Code(fmt.Sprintf("n%d", k%9), fmt.Sprint(k)); !ok || c != codes[w][i] {
					t.Errorf("Code disagrees with Add")
				}
				if i%50 == 0 {
					if err := d.Sync(); err != nil {
						t.Error(err)
					}
					d.ValueCodes("n1")
					d.Names()
				}
			}
		}()
	}
	wg.Wait()
	if d.Len() != n {
		t.Fatalf("Len = %d, want %d", d.Len(), n)
	}
	byPair := map[string]uint32{}
	for w := range codes {
		for i, c := range codes[w] {
			k := (i*7 + w*131) % n
			key := fmt.Sprint(k)
			if old, ok := byPair[key]; ok && old != c {
				t.Fatalf("pair %s got codes %d and %d", key, old, c)
			}
			byPair[key] = c
		}
	}
	want := make([][2]string, n)
	for i := uint32(0); i < n; i++ {
		name, value, _ := d.Pair(i)
		want[i] = [2]string{name, value}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openDict(t, path)
	defer d.Close()
	checkPairs(t, d, want)
}

package bucket

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/checksum"
	"github.com/aerie-db/aerie/internal/index"
)

// Store is what the uploader needs of a bucket (Bucket has it, with
// retries).
type Store interface {
	Upload(ctx context.Context, name string, data []byte) error
	Get(ctx context.Context, name string) ([]byte, error)
	Exists(ctx context.Context, name string) (bool, error)
	Iter(ctx context.Context, dir string, f func(string) error, recursive bool) error
}

// Uploader copies local blocks into a bucket in the layout of layout.go.
// It is safe for concurrent use; uploads of TagDict segments are
// serialized (mu), so segments stay contiguous.
type Uploader struct {
	st      Store
	dict    *index.TagDict
	maxSize int64

	mu     sync.Mutex // guards tagEnd and serializes segment uploads
	tagEnd int        // codes the bucket's segments cover; -1 until listed
}

// NewUploader returns an uploader of blocks whose labels are coded in
// dict, packing data objects up to maxSize bytes (≤ 0: DefaultObjectSize).
func NewUploader(st Store, dict *index.TagDict, maxSize int64) *Uploader {
	if maxSize <= 0 {
		maxSize = DefaultObjectSize
	}
	return &Uploader{st: st, dict: dict, maxSize: maxSize, tagEnd: -1}
}

// Uploaded reports one block's upload.
type Uploaded struct {
	ULID    string
	Objects int   // data objects
	Bytes   int64 // data, metrics and metadata bytes written
	Already bool  // its metadata object existed: nothing was written
}

// UploadBlock copies the block in dir to the bucket and reads every
// object back. It writes the data objects, then the TagDict segments the
// block needs, then its metrics object, then its metadata object: a block is visible in the bucket
// only complete, and an upload cut short (a crash) is redone from the
// start by the next call, the objects overwritten.
func (u *Uploader) UploadBlock(ctx context.Context, dir string) (Uploaded, error) {
	r, err := block.Open(dir, u.dict, block.ReaderOptions{})
	if err != nil {
		return Uploaded{}, err
	}
	defer r.Close()
	bm := r.Meta()
	res := Uploaded{ULID: bm.ULID}
	metaObj := MetaObjectName(bm.ULID)
	meta, err := os.ReadFile(filepath.Join(dir, block.MetaFilename))
	if err != nil {
		return res, err
	}
	idx, err := os.ReadFile(filepath.Join(dir, block.IndexFilename))
	if err != nil {
		return res, err
	}
	head, section, err := block.SplitIndex(idx)
	if err != nil {
		return res, fmt.Errorf("block %s: %w", dir, err)
	}
	if ok, err := u.st.Exists(ctx, metaObj); err != nil {
		return res, err
	} else if ok {
		// Uploaded before (the process stopped before it could delete the
		// local copy): checked again in full, since the local copy may go.
		if err := u.check(ctx, bm.ULID, idx, head, section); err == nil {
			res.Already = true
			return res, nil
		}
		// Anything wrong: the block is uploaded again below.
	}
	data, err := os.ReadFile(filepath.Join(dir, block.DataFilename))
	if err != nil {
		return res, err
	}
	exts := r.Extents()
	lens := make([]int64, len(exts))
	keys := make([]string, len(exts))
	for i, e := range exts {
		lens[i] = e.Len
		if len(e.Series) > 0 {
			keys[i] = packKey(r.SeriesLabels(e.Series[0]))
		}
	}
	m := &BlockMeta{Meta: meta, Index: head, TagDictLen: u.dict.Synced(), WindowSize: DefaultWindowSize, Groups: make([]Placement, len(exts))}
	var obj []byte
	for n, members := range packObjects(lens, keys, u.maxSize) {
		obj = appendObjectHeader(obj[:0], DataObjectMagic, DataObjectVersion)
		for _, i := range members {
			e := exts[i]
			if e.Off < 0 || e.Off+e.Len > int64(len(data)) {
				return res, fmt.Errorf("block %s: group %d extent [%d, +%d) outside the data file of %d bytes", dir, i, e.Off, e.Len, len(data))
			}
			ext := data[e.Off : e.Off+e.Len]
			if checksum.CRC32C(ext) != e.CRC {
				return res, &block.CorruptionError{File: filepath.Join(dir, block.DataFilename), Offset: e.Off, Err: fmt.Errorf("group %d extent: checksum mismatch", i)}
			}
			m.Groups[i] = placement(n, int64(len(obj)), e, ext, m.WindowSize)
			obj = append(obj, ext...)
		}
		name := DataObjectName(bm.ULID, n)
		if err := u.put(ctx, name, obj); err != nil {
			return res, err
		}
		m.Objects = append(m.Objects, ObjectInfo{Size: int64(len(obj)), CRC: checksum.CRC32C(obj)})
		res.Objects++
		res.Bytes += int64(len(obj))
	}
	if err := u.ensureTagDict(ctx, m.TagDictLen); err != nil {
		return res, err
	}
	mo := AppendMetricsObject(nil, section)
	if err := u.put(ctx, MetricsObjectName(bm.ULID), mo); err != nil {
		return res, err
	}
	m.Metrics = ObjectInfo{Size: int64(len(mo)), CRC: binary.BigEndian.Uint32(mo[len(mo)-4:])}
	res.Bytes += int64(len(mo))
	mb := AppendBlockMeta(nil, m)
	if err := u.put(ctx, metaObj, mb); err != nil {
		return res, err
	}
	res.Bytes += int64(len(mb))
	return res, nil
}

// check reads block ulid's metadata object, metrics object and data
// objects back and checks them: the index must be idx (version 2) or head
// and a metrics object holding section (version 3), every object its size
// and CRC.
func (u *Uploader) check(ctx context.Context, ulid string, idx, head, section []byte) error {
	name := MetaObjectName(ulid)
	b, err := u.st.Get(ctx, name)
	if err != nil {
		return err
	}
	m, err := ParseBlockMeta(name, b)
	if err != nil {
		return err
	}
	want := idx
	if m.Version >= 3 {
		want = head
		mname := MetricsObjectName(ulid)
		mb, err := u.st.Get(ctx, mname)
		if err != nil {
			return err
		}
		got, _, err := ParseMetricsObject(mname, mb, m.Metrics, int64(len(section)), nil)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, section) {
			return &CorruptionError{Object: mname, Err: errors.New("metrics differ from the local block's")}
		}
	}
	if !bytes.Equal(m.Index, want) {
		return &CorruptionError{Object: name, Err: errors.New("index differs from the local block's")}
	}
	for n, info := range m.Objects {
		oname := DataObjectName(ulid, n)
		ob, err := u.st.Get(ctx, oname)
		if err != nil {
			return err
		}
		if err := CheckDataObject(oname, ob, info); err != nil {
			return err
		}
	}
	return nil
}

// placement describes extent e, whose bytes are ext, at offset off of
// data object n, as MetaObjectVersion has it: the window CRCs of each of
// its parts, the timestamp column first.
func placement(n int, off int64, e block.Extent, ext []byte, window int) Placement {
	p := Placement{Object: n, Off: off, Len: e.Len, CRC: e.CRC}
	var at int64
	for _, l := range e.Parts {
		p.Windows = append(p.Windows, windowCRCs(ext[at:at+l], window))
		at += l
	}
	return p
}

// put uploads data as name and reads it back.
func (u *Uploader) put(ctx context.Context, name string, data []byte) error {
	if err := u.st.Upload(ctx, name, data); err != nil {
		return fmt.Errorf("upload %s: %w", name, err)
	}
	got, err := u.st.Get(ctx, name)
	if err != nil {
		return fmt.Errorf("read back %s: %w", name, err)
	}
	if !bytes.Equal(got, data) {
		return &CorruptionError{Object: name, Offset: int64(firstDiff(got, data)), Err: errors.New("read back differs from what was uploaded")}
	}
	return nil
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// ensureTagDict uploads the segment of the codes from what the bucket's
// segments cover up to need (at least), read back like every object.
func (u *Uploader) ensureTagDict(ctx context.Context, need int) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.tagEnd < 0 {
		end, err := TagDictCoverage(ctx, u.st)
		if err != nil {
			return err
		}
		u.tagEnd = end
	}
	if need <= u.tagEnd {
		return nil
	}
	to := u.dict.Synced()
	seg, err := u.dict.AppendSegment(nil, u.tagEnd, to)
	if err != nil {
		return err
	}
	if err := u.put(ctx, TagDictSegmentName(u.tagEnd, to), seg); err != nil {
		return err
	}
	u.tagEnd = to
	return nil
}

// TagDictCoverage lists the bucket's TagDict segments and returns the
// end of the codes they cover contiguously from 0. Segments past a gap
// (left by an upload cut short) are ignored; the next upload fills the
// gap with a segment of its own.
func TagDictCoverage(ctx context.Context, st Store) (int, error) {
	segs, err := listSegments(ctx, st)
	if err != nil {
		return 0, err
	}
	end := 0
	for _, s := range segs {
		if s[0] == end {
			end = s[1]
		}
	}
	return end, nil
}

// listSegments returns the [from, to) of every segment, sorted.
func listSegments(ctx context.Context, st Store) ([][2]int, error) {
	var segs [][2]int
	err := st.Iter(ctx, tagDictPrefix, func(name string) error {
		if f, t, ok := parseTagDictSegmentName(name); ok {
			segs = append(segs, [2]int{f, t})
		}
		return nil
	}, false)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", tagDictPrefix, err)
	}
	slices.SortFunc(segs, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return b[1] - a[1]
	})
	return segs, nil
}

// LoadTagDict rebuilds the dictionary from the bucket's segments, for a
// node that reads the bucket without the local file.
func LoadTagDict(ctx context.Context, st Store) (*index.TagDict, error) {
	segs, err := listSegments(ctx, st)
	if err != nil {
		return nil, err
	}
	return loadSegments(ctx, st, segs, nil)
}

// loadSegments applies the contiguous segments of segs to a new
// dictionary, calling read with each one's size.
func loadSegments(ctx context.Context, st Store, segs [][2]int, read func(int)) (*index.TagDict, error) {
	d := index.NewMemTagDict()
	for _, s := range segs {
		if s[0] != d.Len() {
			continue // a segment past a gap, or one already covered
		}
		name := TagDictSegmentName(s[0], s[1])
		b, err := st.Get(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		if read != nil {
			read(len(b))
		}
		if err := d.ApplySegment(name, b); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// packKey orders group extents in data objects so that related groups
// sit together (CloudTS groups series by tag similarity): by job, then by
// the rest of the first series' labels without its metric name, so one
// job's targets, and one target's groups, are neighbours.
func packKey(l labels.Labels) string {
	var b strings.Builder
	b.WriteString(l.Get("job"))
	b.WriteByte(0xff)
	l.Range(func(lb labels.Label) {
		if lb.Name == labels.MetricName || lb.Name == "job" {
			return
		}
		b.WriteString(lb.Name)
		b.WriteByte(0xfe)
		b.WriteString(lb.Value)
		b.WriteByte(0xfd)
	})
	return b.String()
}

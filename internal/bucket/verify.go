package bucket

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/checksum"
)

// BlockReport describes one block of the bucket (aerie inspect bucket).
type BlockReport struct {
	ULID             string
	MinTime, MaxTime int64
	Level            int
	Series, Samples  int64
	Groups           int
	Objects          []ObjectReport
	MetaBytes        int64
	MetricsBytes     int64 // the metrics object (0: version 2, metrics in the metadata object)
	// What the metadata object holds: the index (without metrics from
	// version 3), the groups' timestamp columns (versions 2 and 3 only),
	// the window CRCs.
	IndexBytes, TimestampBytes, WindowBytes int64
}

// ObjectReport describes one data object of a block.
type ObjectReport struct {
	Name   string
	Bytes  int64
	Groups int
}

// Inspect reads every block's metadata object and describes the block,
// its objects and how many group extents each holds.
func Inspect(ctx context.Context, st RangeStore) ([]BlockReport, error) {
	ids, err := ListBlocks(ctx, st)
	if err != nil {
		return nil, err
	}
	var out []BlockReport
	for _, id := range ids {
		name := MetaObjectName(id)
		b, err := st.Get(ctx, name)
		if err != nil {
			return out, fmt.Errorf("read %s: %w", name, err)
		}
		m, err := ParseBlockMeta(name, b)
		if err != nil {
			return out, err
		}
		var bm block.Meta
		if err := json.Unmarshal(m.Meta, &bm); err != nil {
			return out, &CorruptionError{Object: name, Err: fmt.Errorf("meta.json: %w", err)}
		}
		r := BlockReport{ULID: id, MinTime: bm.MinTime, MaxTime: bm.MaxTime, Level: bm.Compaction.Level,
			Series: int64(bm.Stats.Series), Samples: int64(bm.Stats.Samples), Groups: len(m.Groups), MetaBytes: int64(len(b)), MetricsBytes: m.Metrics.Size}
		for n, o := range m.Objects {
			r.Objects = append(r.Objects, ObjectReport{Name: DataObjectName(id, n), Bytes: o.Size})
		}
		r.IndexBytes = int64(len(m.Index))
		for _, g := range m.Groups {
			r.Objects[g.Object].Groups++
			r.TimestampBytes += int64(len(g.Timestamps))
			for _, w := range g.Windows {
				r.WindowBytes += 4 * int64(len(w))
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// VerifyReport is what Verify read and what it found wrong.
type VerifyReport struct {
	Segments, Blocks, Objects, Extents int
	MetricsObjects                     int
	Bytes                              int64
	Problems                           []error
}

// Verify reads every object of the bucket and checks every CRC: the
// TagDict segments (applied in order), each metadata object, each metrics
// object (against the index footer's length and CRC32C of the section),
// each data object whole and each group extent in it. A damaged object is a
// problem of the report; the error is for a bucket that cannot be read.
func Verify(ctx context.Context, st RangeStore) (VerifyReport, error) {
	var rep VerifyReport
	if _, err := LoadTagDictCounting(ctx, st, &rep); err != nil {
		rep.Problems = append(rep.Problems, err)
	}
	ids, err := ListBlocks(ctx, st)
	if err != nil {
		return rep, err
	}
	for _, id := range ids {
		rep.Blocks++
		name := MetaObjectName(id)
		b, err := st.Get(ctx, name)
		if err != nil {
			return rep, fmt.Errorf("read %s: %w", name, err)
		}
		rep.Bytes += int64(len(b))
		m, err := ParseBlockMeta(name, b)
		if err != nil {
			rep.Problems = append(rep.Problems, err)
			continue
		}
		if m.Version >= 3 {
			rep.MetricsObjects++
			n, err := verifyMetrics(ctx, st, id, m)
			rep.Bytes += n
			if err != nil {
				rep.Problems = append(rep.Problems, err)
			}
		}
		objs := make([][]byte, len(m.Objects))
		for n, info := range m.Objects {
			rep.Objects++
			oname := DataObjectName(id, n)
			ob, err := st.Get(ctx, oname)
			if err != nil {
				rep.Problems = append(rep.Problems, fmt.Errorf("read %s: %w", oname, err))
				continue
			}
			rep.Bytes += int64(len(ob))
			if err := CheckDataObject(oname, ob, info); err != nil {
				rep.Problems = append(rep.Problems, err)
			}
			objs[n] = ob
		}
		for i, g := range m.Groups {
			ob := objs[g.Object]
			if ob == nil || g.Off+g.Len > int64(len(ob)) {
				continue // reported with its object
			}
			rep.Extents++
			ext := ob[g.Off : g.Off+g.Len]
			switch {
			case checksum.CRC32C(ext) != g.CRC:
				rep.Problems = append(rep.Problems, &CorruptionError{Object: DataObjectName(id, g.Object), Offset: g.Off, Err: fmt.Errorf("group %d extent: checksum mismatch", i)})
			case !bytes.HasPrefix(ext, g.Timestamps):
				// The window CRCs were computed from the same extent
				// bytes at upload; the metadata's own CRC covers them.
				rep.Problems = append(rep.Problems, &CorruptionError{Object: name, Err: fmt.Errorf("group %d: timestamp column differs from the extent's in %s", i, DataObjectName(id, g.Object))})
			}
		}
	}
	return rep, nil
}

// verifyMetrics reads block id's metrics object and checks it against its
// metadata object m: size and CRC32C, then the section it holds against
// the length and CRC32C of the index footer. It returns the bytes read.
func verifyMetrics(ctx context.Context, st RangeStore, id string, m *BlockMeta) (int64, error) {
	name := MetricsObjectName(id)
	b, err := st.Get(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", name, err)
	}
	ln, crc, err := block.MetricsFooter(m.Index)
	if err != nil {
		return int64(len(b)), &CorruptionError{Object: MetaObjectName(id), Err: fmt.Errorf("index: %w", err)}
	}
	sec, _, err := ParseMetricsObject(name, b, m.Metrics, ln, nil)
	if err != nil {
		return int64(len(b)), err
	}
	if checksum.CRC32C(sec) != crc {
		return int64(len(b)), &CorruptionError{Object: name, Err: fmt.Errorf("metrics section: checksum mismatch with the index footer")}
	}
	return int64(len(b)), nil
}

// LoadTagDictCounting is LoadTagDict, counting the segments and bytes it
// reads into rep.
func LoadTagDictCounting(ctx context.Context, st Store, rep *VerifyReport) (int, error) {
	segs, err := listSegments(ctx, st)
	if err != nil {
		return 0, err
	}
	d, err := loadSegments(ctx, st, segs, func(n int) { rep.Segments++; rep.Bytes += int64(n) })
	if err != nil {
		return 0, err
	}
	return d.Len(), nil
}

package wal_test

import (
	"fmt"
	"log"
	"os"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/wal"
)

func Example() {
	dir, err := os.MkdirTemp("", "wal-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	w, err := wal.Open(dir, wal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	// Definitions and rows go in one batch: they replay together or not at all.
	err = w.Log(
		wal.AppendGroups(nil, []wal.GroupDef{{ID: 1, Key: `{job="api"}`}}),
		wal.AppendSeries(nil, []wal.SeriesDef{{Ref: 1, Group: 1, Slot: 0, Labels: labels.FromStrings("__name__", "up", "job", "api")}}),
		wal.AppendRows(nil, &wal.RowsDef{Group: 1, Width: 1, Rows: []wal.Row{{T: 1000, Present: []uint64{1}, Values: []float64{1}}}}),
	)
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	w, err = wal.Open(dir, wal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	var rows wal.RowsDef // reused across records
	err = w.Replay(func(seg int, rec []byte) error {
		switch wal.RecordType(rec) {
		case wal.RecordGroups:
			gs, err := wal.DecodeGroups(rec, nil)
			if err != nil {
				return err
			}
			fmt.Println("segment", seg, "group", gs[0].ID, gs[0].Key)
		case wal.RecordSeries:
			ss, err := wal.DecodeSeries(rec, nil)
			if err != nil {
				return err
			}
			fmt.Println("segment", seg, "series", ss[0].Ref, ss[0].Labels)
		case wal.RecordRows:
			if err := wal.DecodeRows(rec, &rows); err != nil {
				return err
			}
			fmt.Println("segment", seg, "rows", rows.Rows[0].T, rows.Rows[0].Values)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// segment 1 group 1 {job="api"}
	// segment 1 series 1 {__name__="up", job="api"}
	// segment 1 rows 1000 [1]
}

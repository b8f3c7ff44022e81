package importer

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/ingest"
	"github.com/aerie-db/aerie/internal/sensor"
	"github.com/aerie-db/aerie/internal/sensor/pointio"
	"github.com/aerie-db/aerie/internal/sensor/spool"
)

func isSensorFormat(f string) bool {
	return f == FormatSensorCSV || f == FormatSensorJSON || f == FormatSensorMsgp
}

// sensorName is the sensor of file i: --sensor, or the file's name
// without its extensions.
func (im *importer) sensorName(i int) string {
	name := im.o.SensorName
	if name == "" {
		name = filepath.Base(im.files[i])
		for ext := filepath.Ext(name); ext != ""; ext = filepath.Ext(name) {
			name = strings.TrimSuffix(name, ext)
		}
	}
	return name
}

// spooledSensor is a sensor file read into a spool (spoolSensor).
type spooledSensor struct {
	sp      *spool.Spool
	err     error
	openErr error // the file did not open (openFile's error)
}

// spoolSensor reads file i, one sensor's points in a Peregreen upload
// format, with /upload's readers, into a spool; the first bad row is its
// error. It may run on another goroutine than the importer's (prefetch):
// progress, if set, is told how far it got.
func (im *importer) spoolSensor(i int, r io.Reader, progress bool) spooledSensor {
	name := im.sensorName(i)
	if im.o.DataDir != "" {
		have, ok, err := sensor.TypeOf(im.o.DataDir, name)
		if err != nil {
			return spooledSensor{err: err}
		}
		if ok && have != im.sensorType {
			return spooledSensor{err: fmt.Errorf("sensor %s holds %s values, --sensor.type says %s (nothing was written)", name, have, im.sensorType)}
		}
	}
	reader, format := strings.TrimPrefix(im.formats[i], "sensor-"), "default"
	if im.formats[i] == FormatSensorCSV {
		format = im.o.SensorFormat
	}
	rd, err := pointio.NewReader(reader, format, im.sensorType, r, pointio.Limits{})
	if err != nil {
		return spooledSensor{err: err}
	}
	sp := &spool.Spool{Dir: im.o.TmpDir, MemMax: 1 << 20, Rows: true}
	for rd.Next() {
		t, v := rd.At()
		if err := sp.Add(t, v, int64(rd.Row())); err != nil {
			sp.Close()
			return spooledSensor{err: err}
		}
		if progress && sp.Len()%4096 == 0 {
			im.o.Progress.Update(im.read.Load(), im.samples+sp.Len())
		}
	}
	if err := rd.Err(); err != nil {
		sp.Close()
		return spooledSensor{err: fmt.Errorf("sensor %s: %w (nothing was written)", name, err)}
	}
	return spooledSensor{sp: sp}
}

// prefetchSensor starts reading sensor file i into a spool on another
// goroutine, so that it parses while the file before is stored; it returns
// nil for a file it does not prefetch (standard input).
func (im *importer) prefetchSensor(i int) chan spooledSensor {
	if im.files[i] == "-" || !isSensorFormat(im.formats[i]) {
		return nil
	}
	ch := make(chan spooledSensor, 1)
	go func() {
		r, closeIn, err := im.openFile(i)
		if err != nil {
			ch <- spooledSensor{openErr: err}
			return
		}
		defer closeIn()
		ch <- im.spoolSensor(i, r, false)
	}()
	return ch
}

// storeSensor stores sensor file i's spooled points: into a data
// directory, a sensor whose only file is this one, in time order and
// older than the head's partitions, goes straight into blocks as a
// history run, which the import commits at its end (nothing sorted,
// nothing through the head); other points go to the sorter.
func (im *importer) storeSensor(i int, sp *spool.Spool, emit func(*ingest.Sample)) error {
	defer sp.Close()
	name := im.sensorName(i)
	im.sensors[name] = true
	it, err := sp.Iter()
	if err != nil {
		return err
	}
	lset := labels.FromStrings(labels.MetricName, name)
	if db := im.db; db != nil && sp.Len() > 0 && im.sensorFiles[name] == 1 && sp.Sorted() && db.runnable(sp.MinTime(), sp.MaxTime()) {
		if err := db.writeRun(lset, func() (int64, float64, bool) {
			if !it.Next() {
				return 0, 0, false
			}
			t, v := it.At()
			return t, v, true
		}); err != nil {
			return fmt.Errorf("sensor %s: %w", name, err)
		}
		im.samples += sp.Len()
		return it.Err()
	}
	s := ingest.Sample{Labels: lset}
	for it.Next() {
		s.T, s.V = it.At()
		s.Line = it.Row()
		emit(&s)
	}
	return it.Err()
}

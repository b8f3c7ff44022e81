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
)

func isSensorFormat(f string) bool {
	return f == FormatSensorCSV || f == FormatSensorJSON || f == FormatSensorMsgp
}

// readSensor reads file i, one sensor's points in a Peregreen upload
// format, with /upload's readers. The first bad row fails the import,
// before anything is written.
func (im *importer) readSensor(i int, r io.Reader, emit func(*ingest.Sample)) error {
	name := im.o.SensorName
	if name == "" {
		name = filepath.Base(im.files[i])
		for ext := filepath.Ext(name); ext != ""; ext = filepath.Ext(name) {
			name = strings.TrimSuffix(name, ext)
		}
	}
	if im.o.DataDir != "" {
		have, ok, err := sensor.TypeOf(im.o.DataDir, name)
		if err != nil {
			return err
		}
		if ok && have != im.sensorType {
			return fmt.Errorf("sensor %s holds %s values, --sensor.type says %s (nothing was written)", name, have, im.sensorType)
		}
	}
	reader, format := strings.TrimPrefix(im.formats[i], "sensor-"), "default"
	if im.formats[i] == FormatSensorCSV {
		format = im.o.SensorFormat
	}
	rd, err := pointio.NewReader(reader, format, im.sensorType, r, pointio.Limits{})
	if err != nil {
		return err
	}
	s := ingest.Sample{Labels: labels.FromStrings(labels.MetricName, name)}
	for rd.Next() {
		s.T, s.V = rd.At()
		s.Line = int64(rd.Row())
		emit(&s)
	}
	if err := rd.Err(); err != nil {
		return fmt.Errorf("sensor %s: %w (nothing was written)", name, err)
	}
	im.sensors[name] = true
	return nil
}

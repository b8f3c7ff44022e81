package sensorbench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"
)

// Start is the first timestamp of every sensor's history: 2024-01-01
// 00:00:00 UTC, in ms, a whole day so that the daily cycle starts at
// midnight.
const Start int64 = 1_704_067_200_000

// Resolution is the sensors' resolution: values are whole hundredths.
const Resolution = 0.01

const (
	stepMs   = 1000 // 1 Hz
	hourMs   = 3_600_000
	dayMs    = 24 * hourMs
	yearMs   = 8766 * hourMs // 365.25 days
	manifest = "manifest.json"
	// dataVersion changes whenever the generator's output changes, so that
	// data kept in --dir are regenerated.
	dataVersion = 1
)

// dataset is the generated data: one CSV file per sensor (Peregreen's
// `t,v` rows, format 0-1-,) and what is known about them, so that every
// answer can be checked. It is written to <dir>/manifest.json last, and a
// later run with the same parameters reuses the files.
type dataset struct {
	Version  int           `json:"version"`
	Seed     int64         `json:"seed"`
	Start    int64         `json:"start"`  // ms, first timestamp of every sensor
	Points   int64         `json:"points"` // per sensor
	Sensors  []*sensorData `json:"sensors"`
	RawBytes int64         `json:"raw_bytes"` // of all CSV files
	dir      string
}

// sensorData is one sensor's CSV file and its hourly extremes.
type sensorData struct {
	Name  string `json:"name"`
	File  string `json:"file"` // relative to the dataset's directory
	Bytes int64  `json:"bytes"`
	// Sum is the sum of the values in hundredths, to check decoded data.
	Sum int64 `json:"sum"`
	// Hourly holds, per hour from Start, the least and greatest value in
	// hundredths: what a search condition on min and max sees.
	Hourly [][2]int32 `json:"hourly"`
}

// end returns the last timestamp of every sensor.
func (d *dataset) end() int64 { return d.Start + (d.Points-1)*stepMs }

func (d *dataset) path(s *sensorData) string { return filepath.Join(d.dir, s.File) }

func (d *dataset) totalPoints() int64 { return d.Points * int64(len(d.Sensors)) }

// sensorName is the id of sensor i (0-based): a metric name, so that
// VictoriaMetrics stores it under the same name.
func sensorName(i int) string { return fmt.Sprintf("sensor_%04d", i+1) }

// loadOrGenerate returns the dataset of seed, sensors and span in dir,
// generating it unless a manifest of the same parameters is there.
func loadOrGenerate(dir string, seed int64, sensors int, span time.Duration, logf func(string, ...any)) (*dataset, error) {
	points := span.Milliseconds() / stepMs
	if b, err := os.ReadFile(filepath.Join(dir, manifest)); err == nil {
		var d dataset
		if json.Unmarshal(b, &d) == nil && d.Version == dataVersion && d.Seed == seed && d.Start == Start &&
			d.Points == points && len(d.Sensors) == sensors && d.filesIntact(dir) {
			d.dir = dir
			logf("data: reusing %d sensors × %d points (%.1f MB of CSV) in %s", sensors, points, float64(d.RawBytes)/1e6, dir)
			return &d, nil
		}
	}
	t0 := time.Now()
	d, err := generate(dir, seed, sensors, points)
	if err != nil {
		return nil, err
	}
	logf("data: generated %d sensors × %d points (%.1f MB of CSV) in %.1f s, untimed", sensors, points, float64(d.RawBytes)/1e6, time.Since(t0).Seconds())
	return d, nil
}

// filesIntact reports whether every file has the size the manifest says.
func (d *dataset) filesIntact(dir string) bool {
	for _, s := range d.Sensors {
		st, err := os.Stat(filepath.Join(dir, s.File))
		if err != nil || st.Size() != s.Bytes {
			return false
		}
	}
	return true
}

// generate writes every sensor's CSV file into dir, then the manifest.
func generate(dir string, seed int64, sensors int, points int64) (*dataset, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	_ = os.Remove(filepath.Join(dir, manifest))
	d := &dataset{Version: dataVersion, Seed: seed, Start: Start, Points: points, dir: dir}
	for i := range sensors {
		d.Sensors = append(d.Sensors, &sensorData{Name: sensorName(i), File: sensorName(i) + ".csv"})
	}
	err := forEach(context.Background(), runtime.GOMAXPROCS(0), d.Sensors, func(_ context.Context, s *sensorData) error {
		return writeSensor(d.path(s), seed, s, points)
	})
	if err != nil {
		return nil, err
	}
	for _, s := range d.Sensors {
		d.RawBytes += s.Bytes
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, manifest), b, 0o644); err != nil {
		return nil, err
	}
	return d, nil
}

// writeSensor writes the CSV file of sensor s and fills its size and
// hourly extremes.
func writeSensor(path string, seed int64, s *sensorData, points int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	g := newSignal(seed, s.Name)
	var (
		buf  []byte
		size int64
	)
	s.Hourly = make([][2]int32, 0, (points*stepMs+hourMs-1)/hourMs)
	s.Sum = 0
	for i := range points {
		t := Start + i*stepMs
		q := g.next(t)
		if h := int((t - Start) / hourMs); h == len(s.Hourly) {
			s.Hourly = append(s.Hourly, [2]int32{q, q})
		} else {
			s.Hourly[h][0], s.Hourly[h][1] = min(s.Hourly[h][0], q), max(s.Hourly[h][1], q)
		}
		s.Sum += int64(q)
		buf = appendRow(buf[:0], t, q)
		size += int64(len(buf))
		if _, err := w.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	s.Bytes = size
	return f.Close()
}

// appendRow appends the CSV row `t,v\n` of a value of q hundredths.
func appendRow(dst []byte, t int64, q int32) []byte {
	dst = strconv.AppendInt(dst, t, 10)
	dst = append(dst, ',')
	dst = appendHundredths(dst, q)
	return append(dst, '\n')
}

// appendHundredths formats q/100 with two decimals ("-3.05", "21.40").
func appendHundredths(dst []byte, q int32) []byte {
	if q < 0 {
		dst = append(dst, '-')
		q = -q
	}
	dst = strconv.AppendInt(dst, int64(q/100), 10)
	return append(dst, '.', byte('0'+q%100/10), byte('0'+q%10))
}

// value is the float64 a sensor holds for q hundredths: the float64
// nearest q/100, which is what parsing appendHundredths' text gives
// (IEEE division is correctly rounded).
func value(q int32) float64 { return float64(q) / 100 }

// signal generates one sensor's values, shaped like a temperature: a
// base level, a daily cycle, a mean-reverting random walk (an
// Ornstein–Uhlenbeck process with a time constant of 30 min) and
// measurement noise, quantized to Resolution. It is deterministic by seed
// and sensor name.
type signal struct {
	rnd              *rand.Rand
	base, amp, phase float64
	walk             float64
}

// newRand returns a generator deterministic by seed and name.
func newRand(seed int64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

func newSignal(seed int64, name string) *signal {
	rnd := newRand(seed, name)
	return &signal{
		rnd:   rnd,
		base:  10 + 15*rnd.Float64(),
		amp:   2 + 6*rnd.Float64(),
		phase: rnd.Float64() * dayMs,
	}
}

const (
	walkTheta = 1.0 / 1800 // per second: mean reversion of the walk
	walkSigma = 0.02
	noiseSD   = 0.03
)

// next returns the value at t, in hundredths; t advances one step a call.
func (g *signal) next(t int64) int32 {
	g.walk += -walkTheta*g.walk + walkSigma*g.rnd.NormFloat64()
	x := g.base + g.amp*math.Sin(2*math.Pi*(float64(t%dayMs)-g.phase)/dayMs) + g.walk + noiseSD*g.rnd.NormFloat64()
	return int32(math.Round(x / Resolution))
}

// hours returns the number of whole or partial hours of the data.
func (d *dataset) hours() int { return len(d.Sensors[0].Hourly) }

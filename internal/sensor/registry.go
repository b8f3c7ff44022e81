package sensor

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/aerie-db/aerie/internal/checksum"
	"github.com/aerie-db/aerie/internal/sensor/pointio"
)

// Registry file format (docs/format/sensors.md).
const (
	RegistryFilename        = "sensors"
	RegistryMagic    uint32 = 0xAE15E750
	RegistryVersion  uint8  = 1
	registryHeader          = 8 // magic(4) version(1) reserved(3)
)

// registry records the data type each sensor was first uploaded with
// (Peregreen's index meta keeps a data type per sensor). A series that
// was never uploaded through /upload has no entry and reads as float64.
// The file is rewritten whole, tmp → fsync → rename → fsync dir, so it is
// either the old or the new version after a crash.
type registry struct {
	path string

	mu    sync.Mutex // guards types and the file
	types map[string]pointio.Type
}

type registryFile struct {
	Sensors map[string]string `json:"sensors"`
}

func openRegistry(dir string) (*registry, error) {
	r := &registry{path: filepath.Join(dir, RegistryFilename), types: map[string]pointio.Type{}}
	b, err := os.ReadFile(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	body, err := decodeRegistry(b)
	if err != nil {
		return nil, fmt.Errorf("sensor registry %s: %w", r.path, err)
	}
	var f registryFile
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, fmt.Errorf("sensor registry %s: byte %d: %w", r.path, registryHeader, err)
	}
	for name, ts := range f.Sensors {
		typ, err := pointio.ParseType(ts)
		if err != nil {
			return nil, fmt.Errorf("sensor registry %s: sensor %q: %w", r.path, name, err)
		}
		r.types[name] = typ
	}
	return r, nil
}

// appendRegistry frames a JSON body: header, body, CRC32C of the body.
func appendRegistry(dst, body []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, RegistryMagic)
	dst = append(dst, RegistryVersion, 0, 0, 0)
	dst = append(dst, body...)
	return binary.LittleEndian.AppendUint32(dst, checksum.CRC32C(body))
}

func decodeRegistry(b []byte) ([]byte, error) {
	if len(b) < registryHeader+4 {
		return nil, fmt.Errorf("byte 0: %d bytes, shorter than header and CRC", len(b))
	}
	if m := binary.BigEndian.Uint32(b); m != RegistryMagic {
		return nil, fmt.Errorf("byte 0: magic %#x, want %#x", m, RegistryMagic)
	}
	if b[4] != RegistryVersion {
		return nil, fmt.Errorf("byte 4: version %d, this build reads version %d", b[4], RegistryVersion)
	}
	body := b[registryHeader : len(b)-4]
	if want, got := binary.LittleEndian.Uint32(b[len(b)-4:]), checksum.CRC32C(body); want != got {
		return nil, fmt.Errorf("byte %d: CRC32C %#x, computed %#x", len(b)-4, want, got)
	}
	return body, nil
}

// Type returns the sensor's registered type, or false.
func (r *registry) Type(name string) (pointio.Type, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.types[name]
	return t, ok
}

// Set records name's type, durably, unless it already has one. It
// returns the type the sensor has afterwards.
func (r *registry) Set(name string, typ pointio.Type) (pointio.Type, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.types[name]; ok {
		return t, nil
	}
	r.types[name] = typ
	if err := r.writeLocked(); err != nil {
		delete(r.types, name)
		return 0, err
	}
	return typ, nil
}

// Names returns the registered sensors, sorted.
func (r *registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.types))
	for n := range r.types {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (r *registry) writeLocked() error {
	f := registryFile{Sensors: make(map[string]string, len(r.types))}
	for n, t := range r.types {
		f.Sensors[n] = t.String()
	}
	body, err := json.Marshal(f)
	if err != nil {
		return err
	}
	tmp := r.path + ".tmp"
	fh, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := fh.Write(appendRegistry(nil, body)); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Sync(); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, r.path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(r.path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// RecordType records in the data directory dir that sensor name holds
// values of type typ, as a first upload does (`aerie import` of sensor
// files into a directory no server holds). A sensor that already has a
// type keeps it; a different one is an ErrTypeConflict.
func RecordType(dir, name string, typ pointio.Type) error {
	r, err := openRegistry(dir)
	if err != nil {
		return err
	}
	got, err := r.Set(name, typ)
	if err != nil {
		return err
	}
	if got != typ {
		return fmt.Errorf("%w: sensor %q holds %s values, the import says %s", ErrTypeConflict, name, got, typ)
	}
	return nil
}

// TypeOf returns the type recorded for sensor name in data directory dir.
func TypeOf(dir, name string) (pointio.Type, bool, error) {
	r, err := openRegistry(dir)
	if err != nil {
		return 0, false, err
	}
	t, ok := r.Type(name)
	return t, ok, nil
}

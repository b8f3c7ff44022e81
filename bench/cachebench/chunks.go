package cachebench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/internal/mathx"
)

// chunkStarts returns the starts of the fixed unit-second chunks that
// [start, end] overlaps, chunks aligned to multiples of unit since the
// epoch.
func chunkStarts(start, end, unit int64) []int64 {
	first := mathx.FloorDiv(start, unit) * unit
	var out []int64
	for c := first; c <= end; c += unit {
		out = append(out, c)
	}
	return out
}

// appendChunk encodes a chunk's answer: per field (in the key's order) a
// uvarint point count, then per point the uvarint offset from the
// chunk's start and the value's length-prefixed text.
func appendChunk(dst []byte, start int64, a Answer) []byte {
	for _, c := range a {
		dst = binary.AppendUvarint(dst, uint64(len(c.Points)))
		for _, p := range c.Points {
			dst = binary.AppendUvarint(dst, uint64(p.T-start))
			dst = binary.AppendUvarint(dst, uint64(len(p.V)))
			dst = append(dst, p.V...)
		}
	}
	return dst
}

var errChunk = errors.New("malformed chunk")

// decodeChunk reads a chunk written by appendChunk for fields.
func decodeChunk(b []byte, start int64, fields []string) (Answer, error) {
	uv := func() (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, errChunk
		}
		b = b[n:]
		return v, nil
	}
	a := make(Answer, len(fields))
	for i, f := range fields {
		a[i].Name = f
		n, err := uv()
		if err != nil || n > uint64(len(b)) {
			return nil, errChunk
		}
		a[i].Points = make([]Point, 0, n)
		for range n {
			off, err := uv()
			if err != nil {
				return nil, err
			}
			l, err := uv()
			if err != nil || l > uint64(len(b)) {
				return nil, errChunk
			}
			a[i].Points = append(a[i].Points, Point{T: start + int64(off), V: string(b[:l])})
			b = b[l:]
		}
	}
	if len(b) != 0 {
		return nil, errChunk
	}
	return a, nil
}

// memcachedMaxItem is memcached's -I: the largest item, and its slab
// page size. A 4-hour chunk of eight fields at one point a minute is
// about 20 KB; small pages keep memcached's per-slab-class pages from
// eating a small cache.
const memcachedMaxItem = 128 << 10

// chunked is the Fatcache-style baseline: Debian's memcached holding
// fixed ChunkUnit chunks of each query key's data. A query is split into
// the chunks it overlaps (item key: the SHA-1 of the query without its
// range, and the chunk's start), fetched with one multi-get; each run of
// missing chunks is one InfluxDB query over the whole chunks, stored
// chunk by chunk; the answer is cut to the range.
type chunked struct {
	db        *influx
	keys      []Key
	hashes    []string // statementKey of each key
	unit      int64
	fleet     *harness.Fleet
	p         *harness.Peer
	mc        *memcache.Client
	setErrors atomic.Int64
	lastErr   atomic.Value // string: the last failed set's error
}

// startMemcached starts a fresh memcached of mb megabytes in fleet over
// dir (for its log) in front of db.
func startMemcached(ctx context.Context, fleet *harness.Fleet, dir string, mb int64, db *influx, keys []Key, clients int) (*chunked, error) {
	spec := harness.PeerSpec{
		Name: "memcached", Bin: "memcached", Ready: harness.DialReady(0), ReadyTimeout: time.Minute, StopGrace: 30 * time.Second,
		Args: func(_ string, addrs []string) ([]string, error) {
			host, port, _ := net.SplitHostPort(addrs[0])
			args := []string{"-l", host, "-p", port, "-U", "0", "-m", strconv.FormatInt(mb, 10), "-I", strconv.Itoa(memcachedMaxItem), "-o", "slab_chunk_max=" + strconv.Itoa(memcachedMaxItem/2), "-t", "2", "-c", "1024"}
			if os.Geteuid() == 0 {
				args = append(args, "-u", "root") // memcached refuses to run as root otherwise
			}
			return args, nil
		},
	}
	p, err := fleet.Start(ctx, spec, dir)
	if err != nil {
		return nil, err
	}
	s := &chunked{db: db, keys: keys, unit: int64(ChunkUnit / time.Second), fleet: fleet, p: p, mc: memcache.New(p.Addr())}
	for _, k := range keys {
		s.hashes = append(s.hashes, statementKey(k))
	}
	s.mc.MaxIdleConns = clients + 4
	s.mc.Timeout = 10 * time.Second
	return s, nil
}

func (s *chunked) itemKey(key int, chunk int64) string {
	return s.hashes[key] + ":" + strconv.FormatInt(chunk, 10)
}

func (s *chunked) answer(q Query) (Answer, outcome, error) {
	k := s.keys[q.Key]
	starts := chunkStarts(q.Start, q.End, s.unit)
	names := make([]string, len(starts))
	for i, c := range starts {
		names[i] = s.itemKey(q.Key, c)
	}
	items, err := s.mc.GetMulti(names)
	if err != nil {
		return nil, outcome{}, fmt.Errorf("memcached get: %w", err)
	}
	chunks := make([]Answer, len(starts))
	var out outcome
	hits := 0
	for i, c := range starts {
		it, ok := items[names[i]]
		if !ok {
			continue
		}
		a, err := decodeChunk(it.Value, c, k.Fields)
		if err != nil {
			return nil, outcome{}, fmt.Errorf("memcached item %s: %w", names[i], err)
		}
		chunks[i] = a
		out.cacheBytes += a.cut(q.Start, q.End).Bytes()
		hits++
	}
	// Runs of missing chunks are fetched whole, one InfluxDB query a run,
	// and stored chunk by chunk.
	for i := 0; i < len(starts); {
		if chunks[i] != nil {
			i++
			continue
		}
		j := i
		for j < len(starts) && chunks[j] == nil {
			j++
		}
		a, err := s.db.query(k, starts[i], starts[j-1]+s.unit-1)
		if err != nil {
			return nil, outcome{}, err
		}
		for ; i < j; i++ {
			chunks[i] = a.cut(starts[i], starts[i]+s.unit-1)
			err := s.mc.Set(&memcache.Item{Key: names[i], Value: appendChunk(nil, starts[i], chunks[i])})
			if err != nil {
				// A full memcached refuses a set ("out of memory"): the
				// chunk is simply not cached, as in a real deployment.
				s.setErrors.Add(1)
				s.lastErr.Store(err.Error())
			}
		}
	}
	switch hits {
	case 0:
		out.status = miss
	case len(starts):
		out.status = hit
	default:
		out.status = partial
	}
	a := make(Answer, len(k.Fields))
	for i, f := range k.Fields {
		a[i].Name = f
	}
	for _, c := range chunks {
		for i := range a {
			for _, pt := range c[i].Points {
				if pt.T >= q.Start && pt.T <= q.End {
					a[i].Points = append(a[i].Points, pt)
				}
			}
		}
	}
	return a, out, nil
}

func (s *chunked) stats() map[string]int64 {
	m := map[string]int64{"set_errors": s.setErrors.Load()}
	st, err := memcachedStats(s.p.Addr())
	if err != nil {
		return m
	}
	for _, name := range []string{"evictions", "curr_items", "bytes", "limit_maxbytes", "get_hits", "get_misses"} {
		if v, err := strconv.ParseInt(st[name], 10, 64); err == nil {
			m[name] = v
		}
	}
	return m
}

func (s *chunked) close() error {
	s.mc.Close()
	return s.fleet.Stop(s.p)
}

// memcachedStats sends "stats" to addr and returns its STAT lines.
func memcachedStats(addr string) (map[string]string, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte("stats\r\n")); err != nil {
		return nil, err
	}
	m := map[string]string{}
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		line := sc.Text()
		if line == "END" {
			return m, nil
		}
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "STAT" {
			m[f[1]] = f[2]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return nil, errors.New("memcached stats: no END")
}

package carbon

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestParseLineAgainstCarbon runs generated lines through carbon's own code
// (Debian's graphite-carbon under /usr/bin/python3, skipped without it) and
// through ParseLine, and compares; the differences allowed are the ones
// doc.go lists.
func TestParseLineAgainstCarbon(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import carbon.util").Run(); err != nil {
		t.Skipf("carbon not importable by /usr/bin/python3 (apt-get install graphite-carbon): %v", err)
	}
	lines := carbonCorpus(4000)
	in, err := json.Marshal(lines)
	require.NoError(t, err)
	cmd := exec.Command("/usr/bin/python3", "testdata/carbon_lines.py")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var want []struct {
		Err, Path, TS, Value string
		Now                  bool
	}
	require.NoError(t, json.Unmarshal(out, &want))
	require.Len(t, want, len(lines))
	counts := map[string]int{}
	for i, line := range lines {
		w := want[i]
		got, err := ParseLine([]byte(line), now, Limits{})
		var pe *ParseError
		switch w.Err {
		case "malformed", "crash":
			require.Error(t, err, "%q: carbon refuses it", line)
			require.False(t, errors.Is(err, ErrNaNValue), "%q", line)
			counts["both refuse"]++
		case "nan":
			// Carbon checks the value before the path's tags; Aerie may
			// find the path bad first.
			if !errors.Is(err, ErrNaNValue) {
				require.True(t, errors.As(err, &pe), "%q: %v", line, err)
			}
			counts["nan dropped"]++
		case "tags":
			// Carbon stores it under the raw path; Aerie refuses it.
			require.True(t, errors.As(err, &pe), "%q: %v", line, err)
			require.Contains(t, []string{"path", "tag"}, pe.Field, "%q", line)
			counts["tags refused (carbon keeps raw path)"]++
		default:
			if err != nil && errors.As(err, &pe) {
				switch {
				case strings.Contains(pe.Msg, `"__"`):
					counts["__ tag refused"]++
					continue
				case strings.Contains(pe.Msg, "';' in the name"):
					counts["; in OpenMetrics name refused"]++
					continue
				}
			}
			require.NoError(t, err, "%q: carbon takes it as %+v", line, w)
			require.Equal(t, w.Path, got.Path, "%q", line)
			wv, perr := strconv.ParseFloat(w.Value, 64)
			require.NoError(t, perr)
			require.Equal(t, math.Float64bits(wv), math.Float64bits(got.V), "%q: value", line)
			if w.Now {
				require.Equal(t, now, got.T, "%q", line)
			} else {
				wt, perr := strconv.ParseFloat(w.TS, 64)
				require.NoError(t, perr)
				require.Equal(t, int64(math.Round(wt*1000)), got.T, "%q: timestamp", line)
			}
			counts["both accept"]++
		}
	}
	t.Logf("%d lines: %v", len(lines), counts)
	require.Greater(t, counts["both accept"], 500, "corpus too hostile to test acceptance")
}

// carbonCorpus generates plaintext lines from pieces of carbon's accepted
// and refused forms, with a fixed seed.
func carbonCorpus(n int) []string {
	names := []string{"a.b.c", "~a.b", "~~~", "servers.web1.cpu", "a{b", "caf\u00e9.x", "a;b", "x", "a..b", "~"}
	tags := []string{"", "", "", ";dc=eu", ";env=prod;dc=eu", ";name=x", ";k=v=w", ";k=", ";=v", ";k", ";", ";k=~v",
		";k!x=1", ";a.b=1;a=2", ";dc=x;dc=y", ";__x=y", ";k^=1", ";z=1;a=2;m=3", ";k=v;k2=\u20ac"}
	om := []string{`{dc="eu"}`, `{dc="eu",env="p"}`, `{dc="e\"u"}`, `{dc=""}`, `{dc="x":,e="y"}`, `{dc="x"`,
		`{name="q",dc="x"}`, `{dc="a\\b"}`, `{=x"}`, `{a="b"c="d"}`}
	values := []string{"1", "1.5", "-2", "1e3", "1_000", "_1", "1__0", "inf", "-Infinity", "nan", "NaN", "0x10", ".", ".5",
		"5.", "1e", "+1", "x", "1e400", "-0", "1E-3", "infinit", "1_000.000_1", "--1", "1.2.3", "0b1", "1j"}
	stamps := []string{"1700000000", "1700000000.25", "-1", "-1.5", "-0.5", "-2", "0", "1e3", "nan", "inf", "1_7",
		"1700000000.0015", "x", "-1e0", "-1.999"}
	seps := []string{" ", " ", " ", "\t", "  ", " \x0b", "\u00a0", "\x1c", ","}
	edges := []string{"", "", " ", "\t", "\r", "\u2003"}
	rnd := rand.New(rand.NewPCG(14, 2003))
	pick := func(s []string) string { return s[rnd.IntN(len(s))] }
	out := make([]string, 0, n)
	for len(out) < n {
		path := pick(names)
		if rnd.IntN(5) == 0 {
			path += pick(om)
		} else {
			path += pick(tags)
		}
		fields := []string{path, pick(values), pick(stamps)}
		switch rnd.IntN(20) {
		case 0:
			fields = fields[:2]
		case 1:
			fields = append(fields, "extra")
		}
		var sb strings.Builder
		sb.WriteString(pick(edges))
		for i, f := range fields {
			if i > 0 {
				sb.WriteString(pick(seps))
			}
			sb.WriteString(f)
		}
		sb.WriteString(pick(edges))
		if s := sb.String(); utf8.ValidString(s) && !strings.Contains(s, "\n") {
			out = append(out, s)
		}
	}
	return out
}

// TestDecodePickleAgainstCarbon decodes random frames made by Python's
// pickle (protocols 0-5) and compares with what carbon's
// MetricPickleReceiver (its SafeUnpickler, then its entry checks) takes
// from them.
func TestDecodePickleAgainstCarbon(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import carbon.util").Run(); err != nil {
		t.Skipf("carbon not importable by /usr/bin/python3 (apt-get install graphite-carbon): %v", err)
	}
	cmd := exec.Command("/usr/bin/python3", "testdata/carbon_pickles.py", "1500", "2004")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var frames []struct {
		Payload string
		Proto   int
		Refused string
		Entries [][3]string
	}
	require.NoError(t, json.Unmarshal(out, &frames))
	counts := map[string]int{}
	for i, f := range frames {
		payload, err := hex.DecodeString(f.Payload)
		require.NoError(t, err)
		got, _, err := decodeAll(t, payload)
		if f.Refused != "" {
			require.Error(t, err, "frame %d (protocol %d): carbon refuses it: %s", i, f.Proto, f.Refused)
			counts["both refuse"]++
			continue
		}
		require.NoError(t, err, "frame %d (protocol %d)", i, f.Proto)
		require.Len(t, got, len(f.Entries), "frame %d (protocol %d): %v vs %v", i, f.Proto, got, f.Entries)
		for j, e := range f.Entries {
			wt, err1 := strconv.ParseFloat(e[1], 64)
			wv, err2 := strconv.ParseFloat(e[2], 64)
			require.NoError(t, errors.Join(err1, err2))
			require.Equal(t, e[0], got[j].Path, "frame %d entry %d", i, j)
			require.Equal(t, math.Float64bits(wt), math.Float64bits(got[j].T), "frame %d entry %d", i, j)
			require.Equal(t, math.Float64bits(wv), math.Float64bits(got[j].V), "frame %d entry %d", i, j)
		}
		counts["entries compared"] += len(f.Entries)
		counts["frames compared"]++
	}
	t.Logf("%d frames: %v", len(frames), counts)
	require.Greater(t, counts["entries compared"], 1000)
}

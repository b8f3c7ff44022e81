package expr

import (
	"context"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// fakeFetcher serves in-memory series. Each stored series covers its own
// fixed range; Fetch cuts the part that overlaps [from, until) on the
// series' grid, as a Graphite store would, and records every call.
type fakeFetcher struct {
	mu     sync.Mutex // guards calls
	series []*Series
	calls  []fetchCall
}

type fetchCall struct {
	expr        string
	from, until int64
}

// globToMatch converts a Graphite glob with {a,b} into path.Match terms.
func globAlternatives(p string) []string {
	i := strings.IndexByte(p, '{')
	if i < 0 {
		return []string{p}
	}
	j := strings.IndexByte(p[i:], '}')
	if j < 0 {
		return []string{p}
	}
	var out []string
	for _, alt := range strings.Split(p[i+1:i+j], ",") {
		out = append(out, globAlternatives(p[:i]+alt+p[i+j+1:])...)
	}
	return out
}

func (f *fakeFetcher) cut(s *Series, from, until int64) *Series {
	c := *s
	lo := (from - s.Start) / s.Step
	if from > s.Start && (from-s.Start)%s.Step != 0 {
		lo++
	}
	hi := (until - s.Start + s.Step - 1) / s.Step
	lo = max(lo, 0)
	hi = min(hi, int64(len(s.Values)))
	if hi < lo {
		lo = max(hi, 0)
		hi = lo
	}
	c.Values = append([]float64(nil), s.Values[lo:hi]...)
	c.Start = s.Start + lo*s.Step
	c.End = c.Start + int64(len(c.Values))*s.Step
	c.Tags = copyTags(s.Tags)
	return &c
}

func (f *fakeFetcher) Fetch(ctx context.Context, pathExpr string, from, until int64) ([]*Series, error) {
	f.mu.Lock()
	f.calls = append(f.calls, fetchCall{pathExpr, from, until})
	f.mu.Unlock()
	var out []*Series
	for _, s := range f.series {
		for _, alt := range globAlternatives(pathExpr) {
			pat := strings.ReplaceAll(alt, ".", "/")
			if ok, _ := path.Match(pat, strings.ReplaceAll(s.Name, ".", "/")); ok {
				out = append(out, f.cut(s, from, until))
				break
			}
		}
	}
	// Unsorted on purpose: Eval must sort by name.
	sort.Slice(out, func(i, j int) bool { return out[i].Name > out[j].Name })
	return out, nil
}

func (f *fakeFetcher) FetchTagged(ctx context.Context, exprs []string, from, until int64) ([]*Series, error) {
	f.mu.Lock()
	f.calls = append(f.calls, fetchCall{strings.Join(exprs, ","), from, until})
	f.mu.Unlock()
	var out []*Series
next:
	for _, s := range f.series {
		for _, e := range exprs {
			var k, v string
			var match func(string) bool
			switch {
			case strings.Contains(e, "!=~"):
				k, v, _ = strings.Cut(e, "!=~")
				re, err := regexp.Compile("^(?:" + v + ")")
				if err != nil {
					return nil, err
				}
				match = func(x string) bool { return !re.MatchString(x) }
			case strings.Contains(e, "=~"):
				k, v, _ = strings.Cut(e, "=~")
				re, err := regexp.Compile("^(?:" + v + ")")
				if err != nil {
					return nil, err
				}
				match = re.MatchString
			case strings.Contains(e, "!="):
				k, v, _ = strings.Cut(e, "!=")
				match = func(x string) bool { return x != v }
			default:
				k, v, _ = strings.Cut(e, "=")
				match = func(x string) bool { return x == v }
			}
			if !match(s.Tags[k]) {
				continue next
			}
		}
		out = append(out, f.cut(s, from, until))
	}
	return out, nil
}

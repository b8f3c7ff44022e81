package api

import (
	"fmt"
	"net/url"
	"slices"
	"sort"

	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/scrape"
	v1 "github.com/prometheus/prometheus/web/api/v1"
)

// Empty is the retriever of a server without scrape, rules or notifier
// managers: every list is empty.
type Empty struct{}

var (
	_ v1.ScrapePoolsRetriever  = Empty{}
	_ v1.TargetRetriever       = Empty{}
	_ v1.AlertmanagerRetriever = Empty{}
	_ v1.RulesRetriever        = Empty{}
)

// ScrapePools returns no pools.
func (Empty) ScrapePools() []string { return []string{} }

// TargetsActive returns no targets.
func (Empty) TargetsActive() map[string][]*scrape.Target { return map[string][]*scrape.Target{} }

// TargetsDropped returns no targets.
func (Empty) TargetsDropped() map[string][]*scrape.Target { return map[string][]*scrape.Target{} }

// TargetsDroppedCounts returns no counts.
func (Empty) TargetsDroppedCounts() map[string]int { return map[string]int{} }

// ScrapePoolConfig reports every pool as not found, as the scrape manager
// does for an unknown pool.
func (Empty) ScrapePoolConfig(pool string) (*config.ScrapeConfig, error) {
	return nil, fmt.Errorf("scrape pool %q not found", pool)
}

// Alertmanagers returns none.
func (Empty) Alertmanagers() []*url.URL { return []*url.URL{} }

// DroppedAlertmanagers returns none.
func (Empty) DroppedAlertmanagers() []*url.URL { return []*url.URL{} }

// RuleGroups returns none.
func (Empty) RuleGroups() []*rules.Group { return []*rules.Group{} }

// AlertingRules returns none.
func (Empty) AlertingRules() []*rules.AlertingRule { return []*rules.AlertingRule{} }

// withMetadataTarget adds a pseudo-target holding the DB's metadata to the
// active targets; only the /metadata endpoint sees it.
type withMetadataTarget struct {
	v1.TargetRetriever
	target *scrape.Target
}

// metadataPool is the pool name of the pseudo-target; it cannot collide
// with a configured job (job names are non-empty).
const metadataPool = ""

func (w withMetadataTarget) TargetsActive() map[string][]*scrape.Target {
	ts := w.TargetRetriever.TargetsActive()
	out := make(map[string][]*scrape.Target, len(ts)+1)
	for k, v := range ts {
		out[k] = v
	}
	out[metadataPool] = append(slices.Clone(out[metadataPool]), w.target)
	return out
}

// MetadataSource is where stored metric metadata comes from; *tsdb.DB is
// one.
type MetadataSource interface {
	AllMetadata() map[string]metadata.Metadata
	Metadata(name string) (metadata.Metadata, bool)
}

func newMetadataTarget(src MetadataSource) *scrape.Target {
	t := scrape.NewTarget(labels.EmptyLabels(), &config.ScrapeConfig{}, nil, nil)
	t.SetMetadataStore(metadataStore{src})
	return t
}

// metadataStore serves stored metadata as a scrape.MetricMetadataStore.
type metadataStore struct{ src MetadataSource }

func (m metadataStore) ListMetadata() []scrape.MetricMetadata {
	all := m.src.AllMetadata()
	out := make([]scrape.MetricMetadata, 0, len(all))
	for name, md := range all {
		out = append(out, scrape.MetricMetadata{MetricFamily: name, Type: md.Type, Help: md.Help, Unit: md.Unit})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].MetricFamily < out[j].MetricFamily })
	return out
}

func (m metadataStore) GetMetadata(name string) (scrape.MetricMetadata, bool) {
	md, ok := m.src.Metadata(name)
	if !ok {
		return scrape.MetricMetadata{}, false
	}
	return scrape.MetricMetadata{MetricFamily: name, Type: md.Type, Help: md.Help, Unit: md.Unit}, true
}

func (m metadataStore) SizeMetadata() int {
	n := 0
	for name, md := range m.src.AllMetadata() {
		n += len(name) + len(md.Help) + len(md.Unit) + len(md.Type)
	}
	return n
}

func (m metadataStore) LengthMetadata() int { return len(m.src.AllMetadata()) }

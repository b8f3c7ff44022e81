package api

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// headChunksMetric is the gauge Prometheus' /status/tsdb reads its
// headStats.chunkCount from; without it the field is int64(NaN), i.e.
// −9223372036854775808.
const headChunksMetric = "prometheus_tsdb_head_chunks"

// headChunksGatherer adds headChunksMetric, counted by n, to what g
// gathers (unless g has it). Only the API sees it: /metrics does not.
type headChunksGatherer struct {
	g prometheus.Gatherer
	n func() int
}

func (hg headChunksGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := hg.g.Gather()
	for _, mf := range mfs {
		if mf.GetName() == headChunksMetric {
			return mfs, err
		}
	}
	return append(mfs, &dto.MetricFamily{
		Name:   proto.String(headChunksMetric),
		Help:   proto.String("Aerie: group partitions in the head (a group's rows over one partition)."),
		Type:   dto.MetricType_GAUGE.Enum(),
		Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: proto.Float64(float64(hg.n()))}}},
	}), err
}

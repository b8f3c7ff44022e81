package depwarm

import (
	_ "github.com/influxdata/line-protocol/v2/lineprotocol"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/prometheus/config"
	_ "github.com/prometheus/prometheus/discovery/file"
	_ "github.com/prometheus/prometheus/discovery/http"
	_ "github.com/prometheus/prometheus/model/textparse"
	_ "github.com/prometheus/prometheus/rules"
	_ "github.com/prometheus/prometheus/scrape"
	_ "github.com/prometheus/prometheus/storage/remote"
	_ "github.com/prometheus/prometheus/web/api/v1"
)

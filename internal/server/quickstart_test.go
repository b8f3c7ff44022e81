package server

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/config"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"
)

// snippets returns the fenced code blocks of docs/quickstart.md whose first
// line is a "# name" comment, by name.
func snippets(t *testing.T) map[string]string {
	b, err := os.ReadFile("../../docs/quickstart.md")
	require.NoError(t, err)
	re := regexp.MustCompile("(?s)```(yaml|toml)\n# ([^\\s,]+)[^\n]*\n(.*?)```")
	out := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		out[m[2]] = m[3]
	}
	return out
}

func TestQuickstartSnippets(t *testing.T) {
	s := snippets(t)
	for _, name := range []string{"aerie.yml", "prometheus.yml", "telegraf.conf", "grafana/provisioning/datasources/aerie.yml", "aerie-scrape.yml"} {
		require.Contains(t, s, name)
	}
	c, err := ParseConfig([]byte(s["aerie.yml"]), nil)
	require.NoError(t, err, "aerie.yml")
	o := c.Aerie.EngineOptions()
	require.Equal(t, int64(30*24*3600_000), o.Retention)
	require.Equal(t, int64(3600_000), o.OOOWindow)

	p, err := config.Load(s["prometheus.yml"], nil)
	require.NoError(t, err, "prometheus.yml")
	require.Equal(t, "http://127.0.0.1:9201/api/v1/write", p.RemoteWriteConfigs[0].URL.String())

	// Telegraf's influxdb output writes to <url>/write, which Aerie serves.
	require.Regexp(t, `urls = \["http://127.0.0.1:9201"\]`, s["telegraf.conf"])
	require.True(t, strings.Contains(s["telegraf.conf"], "[[outputs.influxdb]]"))

	var ds struct {
		Datasources []struct{ Type, URL string }
	}
	require.NoError(t, yaml.UnmarshalStrict([]byte(s["grafana/provisioning/datasources/aerie.yml"]), &map[string]interface{}{}))
	require.NoError(t, yaml.Unmarshal([]byte(s["grafana/provisioning/datasources/aerie.yml"]), &ds))
	require.Equal(t, "prometheus", ds.Datasources[0].Type)
	require.Equal(t, "http://127.0.0.1:9201", ds.Datasources[0].URL)

	sc, err := ParseConfig([]byte(s["aerie-scrape.yml"]), nil)
	require.NoError(t, err, "aerie-scrape.yml")
	require.Equal(t, "node", sc.Prom.ScrapeConfigs[0].JobName)
}

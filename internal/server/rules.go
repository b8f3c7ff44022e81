package server

import (
	"fmt"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/config"
)

// ruleFiles expands the rule_files globs.
func ruleFiles(cfg *config.Config) ([]string, error) {
	var files []string
	for _, pat := range cfg.RuleFiles {
		fs, err := filepath.Glob(pat)
		if err != nil {
			return nil, fmt.Errorf("rule_files %q: %w", pat, err)
		}
		files = append(files, fs...)
	}
	return files, nil
}

// prefixed registers Prometheus' own component metrics under aerie_.
func prefixed(reg prometheus.Registerer) prometheus.Registerer {
	return prometheus.WrapRegistererWithPrefix("aerie_", reg)
}

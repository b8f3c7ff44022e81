package graphite

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/aerie-db/aerie/internal/graphite/expr"
)

// funcInfo is graphite-web's functionInfo: expr's description plus the
// call signature and module Grafana's editor shows.
type funcInfo struct {
	Name        string           `json:"name"`
	Function    string           `json:"function"`
	Description string           `json:"description"`
	Module      string           `json:"module"`
	Group       string           `json:"group"`
	Params      []expr.ParamInfo `json:"params"`
}

func newFuncInfo(fi expr.FuncInfo) funcInfo {
	var sig strings.Builder
	sig.WriteString(fi.Name + "(")
	for i, p := range fi.Params {
		if i > 0 {
			sig.WriteString(", ")
		}
		if p.Multiple {
			sig.WriteByte('*')
		}
		sig.WriteString(p.Name)
		if !p.Required && !p.Multiple && p.Default != nil {
			fmt.Fprintf(&sig, "=%v", p.Default)
		}
	}
	sig.WriteByte(')')
	params := fi.Params
	if params == nil {
		params = []expr.ParamInfo{}
	}
	return funcInfo{Name: fi.Name, Function: sig.String(), Module: "graphite.render.functions", Group: fi.Group, Params: params}
}

// handleFunctions answers the supported functions by name, or by group
// and name with grouped=1; group=G keeps one group.
func (a *API) handleFunctions(w http.ResponseWriter, r *http.Request) {
	q, err := a.params(w, r)
	if err != nil {
		writeJSONError(w, err)
		return
	}
	grouped := strings.EqualFold(q.Get("grouped"), "true") || q.Get("grouped") == "1"
	group, hasGroup := q["group"]
	flat := map[string]funcInfo{}
	byGroup := map[string]map[string]funcInfo{}
	for _, fi := range expr.Functions() {
		if hasGroup && fi.Group != group[0] {
			continue
		}
		info := newFuncInfo(fi)
		if grouped {
			if byGroup[fi.Group] == nil {
				byGroup[fi.Group] = map[string]funcInfo{}
			}
			byGroup[fi.Group][fi.Name] = info
		} else {
			flat[fi.Name] = info
		}
	}
	if grouped {
		writeJSON(w, q, byGroup)
		return
	}
	writeJSON(w, q, flat)
}

func (a *API) handleFunction(w http.ResponseWriter, r *http.Request) {
	q, err := a.params(w, r)
	if err != nil {
		writeJSONError(w, err)
		return
	}
	name := r.PathValue("name")
	for _, fi := range expr.Functions() {
		if fi.Name == name {
			writeJSON(w, q, newFuncInfo(fi))
			return
		}
	}
	b := fmt.Appendf(nil, `{"error":%q}`, "Function not found: "+name)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	w.Write(b)
}

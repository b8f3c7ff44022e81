package expr

import (
	"encoding/json"
	"math"
	"sort"
)

// ParamInfo describes one parameter of a function in the shape of
// graphite-web's /functions output (Param.toJSON).
type ParamInfo struct {
	Name        string `json:"name"`
	Type        string `json:"type"` // graphite-web's: seriesList, float, integer, interval, aggFunc …
	Required    bool   `json:"required,omitempty"`
	Default     any    `json:"default,omitempty"` // int64, float64 (maybe +Inf, see Infinity), string or bool
	Multiple    bool   `json:"multiple,omitempty"`
	Options     []any  `json:"options,omitempty"` // strings, or true/false/null where graphite-web lists them
	Suggestions []any  `json:"suggestions,omitempty"`

	// fallback is the value graphite-web's function defaults a required
	// parameter to: graphite-web (ENFORCE_INPUT_VALIDATION off, its
	// default) calls the function without it.
	fallback any
	// lenient skips the options check that graphite-web only logs and the
	// function tolerates.
	lenient bool
}

// Infinity is the default of parameters whose graphite-web default is
// float('inf'). It marshals to the JSON number 1e9999, which parses back
// as +Inf in JavaScript (graphite-web writes Python's non-JSON Infinity,
// which Grafana rewrites to 1e9999 before parsing).
type Infinity struct{}

// MarshalJSON implements json.Marshaler.
func (Infinity) MarshalJSON() ([]byte, error) { return []byte("1e9999"), nil }

// FuncInfo describes a supported function as graphite-web's /functions
// endpoint does.
type FuncInfo struct {
	Name string `json:"name"`
	// Function is the signature graphite-web shows, e.g.
	// "movingAverage(seriesList, windowSize, xFilesFactor=None)".
	Function string      `json:"function"`
	Group    string      `json:"group"` // Combine, Transform, Calculate, Filter Series, Filter Data, Sorting, Alias, Graph, Special
	Params   []ParamInfo `json:"params"`
}

// Functions describes every function Eval supports, sorted by name.
func Functions() []FuncInfo {
	out := make([]FuncInfo, 0, len(funcs)+1)
	for _, d := range funcs {
		fi := d.FuncInfo
		fi.Function = signatures[fi.Name]
		fi.Params = append([]ParamInfo(nil), fi.Params...)
		for i := range fi.Params {
			if f, ok := fi.Params[i].Default.(float64); ok && math.IsInf(f, 1) {
				fi.Params[i].Default = Infinity{}
			}
		}
		out = append(out, fi)
	}
	out = append(out, FuncInfo{Name: "seriesByTag", Function: signatures["seriesByTag"], Group: "Special", Params: []ParamInfo{
		{Name: "tagExpressions", Type: "string", Required: true, Multiple: true},
	}})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

var _ json.Marshaler = Infinity{}

type funcDef struct {
	FuncInfo
	// deprecatedAgg accepts "sumSeries" for "sum" in aggFunc parameters,
	// as graphite-web's aggregate does.
	deprecatedAgg bool
	params        []ParamInfo
	fn            func(c *callCtx) ([]*Series, error)
	// fnLists is set instead of fn by mapSeries, the one function whose
	// value is a list of series lists (for reduceSeries).
	fnLists func(c *callCtx) ([][]*Series, error)
}

// funcs is the function table, filled by init so that functions can call
// each other through it.
var funcs = map[string]*funcDef{}

func register(name, group string, fn func(c *callCtx) ([]*Series, error), params ...ParamInfo) {
	funcs[name] = &funcDef{FuncInfo: FuncInfo{Name: name, Group: group, Params: params}, params: params, fn: fn}
}

// Parameter constructors.

func req(name, typ string) ParamInfo { return ParamInfo{Name: name, Type: typ, Required: true} }

func opt(name, typ string, def any) ParamInfo { return ParamInfo{Name: name, Type: typ, Default: def} }

func multi(p ParamInfo) ParamInfo { p.Multiple = true; return p }

func withOptions(p ParamInfo, options ...string) ParamInfo {
	p.Options = nil
	for _, o := range options {
		p.Options = append(p.Options, o)
	}
	return p
}

func suggest(p ParamInfo, s ...any) ParamInfo { p.Suggestions = s; return p }

var (
	pSeriesList  = req("seriesList", "seriesList")
	pSeriesLists = multi(req("seriesLists", "seriesList"))
)

func aggFuncParam(name string, def any) ParamInfo {
	return choiceParam(name, "aggFunc", def, aggFuncNames...)
}

// choiceParam is a parameter taking one of options: def by default, or
// required if def is nil.
func choiceParam(name, typ string, def any, options ...string) ParamInfo {
	return withOptions(ParamInfo{Name: name, Type: typ, Default: def, Required: def == nil}, options...)
}

var intervalSuggestions = []any{"10min", "1h", "1d"}
var shiftSuggestions = []any{"1h", "6h", "12h", "1d", "2d", "7d", "14d", "30d"}
var intOrIntervalSuggestions = []any{int64(5), int64(7), int64(10), "1min", "5min", "10min", "30min", "1hour"}

package sensorbench

import "fmt"

// ratios returns the headline figures of the report, each with its goal
// where issue 13 §4 sets one (nothing asserts them).
func (rep *Report) ratios() []Ratio {
	var out []Ratio
	add := func(name string, v float64, goal string, met *bool) {
		if v != 0 {
			out = append(out, Ratio{Name: name, Value: v, Goal: goal, Met: met})
		}
	}
	atMost := func(v, g float64) *bool { b := v <= g; return &b }
	atLeast := func(v, g float64) *bool { b := v >= g; return &b }

	vmUpload := rep.upload(vm, loadVMImport)
	for _, u := range rep.Upload {
		if u.Peer == aerie && vmUpload != nil && vmUpload.RecordsPerSecond > 0 {
			add(fmt.Sprintf("upload records/s, %s ÷ vm %s", u.Path, vmUpload.Path), u.RecordsPerSecond/vmUpload.RecordsPerSecond, "", nil)
		}
	}
	for _, dr := range rep.Disk {
		add(fmt.Sprintf("stored ÷ raw CSV bytes, %s after %s", dr.Peer, dr.Load), dr.StoredOverRaw, fmt.Sprintf("Peregreen %.3f", PeregreenStoredOverRaw), nil)
	}
	for _, ir := range rep.Index {
		add(fmt.Sprintf("index bytes per sensor-year ÷ Peregreen's 110 KB, after %s", ir.Load), ir.PerSensorYear/PeregreenIndexBytesPerSensorYear, "", nil)
	}
	for _, s := range rep.Search {
		add(fmt.Sprintf("search median latency, %s, %s: aerie ÷ vm", s.Query, s.Condition), s.Ratio, fmt.Sprintf("≤ %g×", GoalSearchRatio), atMost(s.Ratio, GoalSearchRatio))
	}
	for _, e := range rep.Extract {
		if e.Peer != aerie || e.Mode != "full" {
			continue
		}
		ve := rep.extractOf(vm, e.Mode, e.Range)
		if ve == nil || ve.RecordsPerCPUSecond == 0 {
			continue
		}
		v := e.RecordsPerCPUSecond / ve.RecordsPerCPUSecond
		add(fmt.Sprintf("full extraction records per CPU second, %s, %s: aerie ÷ vm export", e.Range, e.Writer), v, fmt.Sprintf("≥ %g×", GoalExtractRatio), atLeast(v, GoalExtractRatio))
	}
	if d := rep.Decode; d != nil {
		add("decode samples per CPU second (M)", d.SamplesPerCPUSecond/1e6, fmt.Sprintf("≥ %g M", GoalDecodePerCoreRate/1e6), atLeast(d.SamplesPerCPUSecond, GoalDecodePerCoreRate))
	}
	return out
}

func (rep *Report) upload(peer, path string) *UploadResult {
	for i := range rep.Upload {
		if rep.Upload[i].Peer == peer && rep.Upload[i].Path == path {
			return &rep.Upload[i]
		}
	}
	return nil
}

func (rep *Report) extractOf(peer, mode, rng string) *ExtractResult {
	for i := range rep.Extract {
		e := &rep.Extract[i]
		if e.Peer == peer && e.Mode == mode && e.Range == rng {
			return e
		}
	}
	return nil
}

package encoding

import ("testing"; "fmt"; "math")

func TestExplore(t *testing.T) {
	d, _ := loadNode()
	for _, g := range d.groups {
		for _, s := range g.series {
			if len(s.ts) == len(g.rows) { continue }
			c := true
			for _, v := range s.vals { if math.Float64bits(v) != math.Float64bits(s.vals[0]) { c = false } }
			b, _ := AppendColumn(nil, s.col, s.present, 8, 10)
			fmt.Printf("%s n=%d/%d const=%v bytes=%d\n", g.name, len(s.ts), len(g.rows), c, len(b))
		}
	}
}

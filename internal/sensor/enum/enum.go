package enum

import "strconv"

// Name returns the name of v in names, or "typ(v)" if v has none, as
// "Mode(9)".
func Name[T ~uint8](names []string, v T, typ string) string {
	if int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return typ + "(" + strconv.Itoa(int(v)) + ")"
}

// Parse returns the value named s in names, and false if none is.
func Parse[T ~uint8](names []string, s string) (T, bool) {
	for v, name := range names {
		if name != "" && name == s {
			return T(v), true
		}
	}
	return 0, false
}

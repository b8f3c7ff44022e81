package positive

// Number is what Or takes: sizes, counts and durations.
type Number interface {
	~int | ~int64
}

// Or returns v if it is positive, else def.
func Or[T Number](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

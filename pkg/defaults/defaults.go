// Package defaults fills in the settings a caller left unset, for the
// settings where zero or less means "not set" (timeouts, intervals,
// limits). Where only zero means unset, the standard library's cmp.Or does
// the same.
package defaults

// Number is a signed integer or float type, time.Duration among them.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~float32 | ~float64
}

// Positive is v if it is above zero, else def.
func Positive[T Number](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

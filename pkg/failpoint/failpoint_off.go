//go:build !failpoints

package failpoint

import "net/http"

// Enabled reports whether this build contains failpoints.
const Enabled = false

// Inject marks the failpoint name. Without the failpoints tag it does
// nothing, and calls to it compile to nothing.
func Inject(name string) {}

// Mount returns h: without the failpoints tag there is no endpoint.
func Mount(h http.Handler) http.Handler { return h }

//go:build !unix

package httpapi

// fdLimit is not known on this platform; etcd reports 0 there too.
func fdLimit() uint64 { return 0 }

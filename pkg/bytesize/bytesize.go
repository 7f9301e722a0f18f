// Package bytesize formats byte counts the way etcd and its tools print
// them (go-humanize's SI style: "25 kB", "2.1 GB"), for logs and the
// outputs of cairnctl and cairnutl that must match etcdctl's and
// etcdutl's.
package bytesize

import (
	"fmt"
	"math"
)

var siUnits = []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}

// SI renders n in powers of 1000 with one decimal below 10 ("9.5 MB",
// "12 MB"); counts below 10 are exact ("7 B").
func SI(n uint64) string {
	if n < 10 {
		return fmt.Sprintf("%d B", n)
	}
	e := math.Floor(math.Log(float64(n)) / math.Log(1000))
	val := math.Floor(float64(n)/math.Pow(1000, e)*10+0.5) / 10
	if val < 10 {
		return fmt.Sprintf("%.1f %s", val, siUnits[int(e)])
	}
	return fmt.Sprintf("%.0f %s", val, siUnits[int(e)])
}

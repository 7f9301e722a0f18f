package utl

import (
	"strconv"
	"strings"
)

// normalizeVersion parses s as a semantic version "X.Y.Z[-pre][+meta]", as
// etcd's go-semver does for the storage version, and returns it re-rendered.
// Anything else (including etcd's two-part "X.Y") is not a version.
func normalizeVersion(s string) (string, bool) {
	rest, meta, hasMeta := strings.Cut(s, "+")
	core, pre, hasPre := strings.Cut(rest, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 || (hasPre && pre == "") || (hasMeta && meta == "") {
		return "", false
	}
	nums := make([]string, 3)
	for i, p := range parts {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return "", false
		}
		nums[i] = strconv.FormatInt(n, 10)
	}
	out := strings.Join(nums, ".")
	if hasPre {
		out += "-" + pre
	}
	if hasMeta {
		out += "+" + meta
	}
	return out, true
}

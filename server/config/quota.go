package config

import (
	"fmt"
	"math"

	"go.uber.org/zap"
)

// MaxSuggestedQuotaBackendBytes is the largest backend quota etcd
// recommends (8 GiB); a larger one works but is warned about.
const MaxSuggestedQuotaBackendBytes = 8 * 1024 * 1024 * 1024

// quotaName is the quota etcd reports in these lines: the apply path's.
const quotaName = "v3-applier"

// noteQuota records etcd's start-up lines about --quota-backend-bytes: a
// negative value disables the quota, zero means the 2 GiB default, and a
// value above 8 GiB is allowed with a warning.
func (c *Config) noteQuota() {
	q := c.QuotaBackendBytes
	switch {
	case q < 0:
		c.notice(zap.InfoLevel, "disabled backend quota",
			zap.String("quota-name", quotaName), zap.Int64("quota-size-bytes", q))
	case q == 0:
		c.notice(zap.InfoLevel, "enabled backend quota with default value",
			zap.String("quota-name", quotaName), zap.Int64("quota-size-bytes", DefaultQuotaBackendBytes),
			zap.String("quota-size", siBytes(DefaultQuotaBackendBytes)))
	default:
		if q > MaxSuggestedQuotaBackendBytes {
			c.notice(zap.WarnLevel, "quota exceeds the maximum value",
				zap.String("quota-name", quotaName), zap.Int64("quota-size-bytes", q),
				zap.String("quota-size", siBytes(q)),
				zap.Int64("quota-maximum-size-bytes", MaxSuggestedQuotaBackendBytes),
				zap.String("quota-maximum-size", siBytes(MaxSuggestedQuotaBackendBytes)))
		}
		c.notice(zap.InfoLevel, "enabled backend quota",
			zap.String("quota-name", quotaName), zap.Int64("quota-size-bytes", q), zap.String("quota-size", siBytes(q)))
	}
}

// siBytes renders n in decimal units with one significant decimal below
// ten ("2.1 GB", "17 GB", "512 B"), the way etcd's log lines show sizes.
func siBytes(n int64) string {
	if n < 10 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
	e := math.Floor(math.Log(float64(n)) / math.Log(1000))
	v := math.Floor(float64(n)/math.Pow(1000, e)*10+0.5) / 10
	if v < 10 {
		return fmt.Sprintf("%.1f %s", v, units[int(e)])
	}
	return fmt.Sprintf("%.0f %s", v, units[int(e)])
}

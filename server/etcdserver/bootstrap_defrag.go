package etcdserver

import (
	"fmt"
	"math"

	"go.uber.org/zap"
)

// maybeDefragBackend defragments the backend at start when that frees at
// least --bootstrap-defrag-threshold-megabytes, as etcd does before it
// serves; 0 turns the check off.
func (s *Server) maybeDefragBackend() error {
	if s.cfg.BootstrapDefragThresholdMegabytes == 0 {
		return nil
	}
	size, inUse := s.be.Size(), s.be.SizeInUse()
	threshold := uint64(s.cfg.BootstrapDefragThresholdMegabytes) * 1024 * 1024
	if uint64(size-inUse) < threshold {
		s.lg.Info("Skipping defragmentation",
			zap.Int64("current-db-size-bytes", size),
			zap.String("current-db-size", humanBytes(uint64(size))),
			zap.Int64("current-db-size-in-use-bytes", inUse),
			zap.String("current-db-size-in-use", humanBytes(uint64(inUse))),
			zap.Uint64("bootstrap-defrag-threshold-bytes", threshold),
			zap.String("bootstrap-defrag-threshold", humanBytes(threshold)),
		)
		return nil
	}
	return s.be.Defrag()
}

// humanBytes writes n in SI units as etcd's logs do ("25 kB", "2.1 GB").
func humanBytes(n uint64) string {
	if n < 10 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
	e := math.Floor(math.Log(float64(n)) / math.Log(1000))
	val := math.Floor(float64(n)/math.Pow(1000, e)*10+0.5) / 10
	format := "%.0f %s"
	if val < 10 {
		format = "%.1f %s"
	}
	return fmt.Sprintf(format, val, units[int(e)])
}

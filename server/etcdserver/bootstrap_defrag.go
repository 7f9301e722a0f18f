package etcdserver

import (
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/bytesize"
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
			zap.String("current-db-size", bytesize.SI(uint64(size))),
			zap.Int64("current-db-size-in-use-bytes", inUse),
			zap.String("current-db-size-in-use", bytesize.SI(uint64(inUse))),
			zap.Uint64("bootstrap-defrag-threshold-bytes", threshold),
			zap.String("bootstrap-defrag-threshold", bytesize.SI(threshold)),
		)
		return nil
	}
	return s.be.Defrag()
}

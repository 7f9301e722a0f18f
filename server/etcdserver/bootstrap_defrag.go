package etcdserver

import (
	"go.uber.org/zap"

	"github.com/cairnkv/cairn/pkg/bytesize"
	"github.com/cairnkv/cairn/server/storage/backend"
)

// defragAtStart defragments be before the member serves when that frees at
// least thresholdMB megabytes (--bootstrap-defrag-threshold-megabytes, as in
// etcd); 0 turns the check off.
func defragAtStart(be backend.Backend, thresholdMB uint, lg *zap.Logger) error {
	if thresholdMB == 0 {
		return nil
	}
	threshold := uint64(thresholdMB) << 20
	size, inUse := be.Size(), be.SizeInUse()
	if free := uint64(size - inUse); free >= threshold {
		return be.Defrag()
	}
	lg.Info("Skipping defragmentation",
		zap.Int64("current-db-size-bytes", size),
		zap.String("current-db-size", bytesize.SI(uint64(size))),
		zap.Int64("current-db-size-in-use-bytes", inUse),
		zap.String("current-db-size-in-use", bytesize.SI(uint64(inUse))),
		zap.Uint64("bootstrap-defrag-threshold-bytes", threshold),
		zap.String("bootstrap-defrag-threshold", bytesize.SI(threshold)),
	)
	return nil
}

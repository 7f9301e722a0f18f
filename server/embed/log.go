package embed

import (
	"time"

	"go.uber.org/zap/zapcore"
)

// zapISO8601 writes timestamps as etcd does: 2006-01-02T15:04:05.000000Z0700.
func zapISO8601(t time.Time, enc zapcore.PrimitiveArrayEncoder) {
	enc.AppendString(t.Format("2006-01-02T15:04:05.000000Z0700"))
}

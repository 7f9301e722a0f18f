package client

import (
	"context"

	"github.com/cairnkv/cairn/pkg/wait"
)

// workers runs the goroutines an API leaves behind its calls (a lease's
// keep-alive, a watch): each one's context ends with its caller's or when
// the API is closed, and closing waits until every one has returned.
type workers struct {
	ctx     context.Context // ends on close (or with the client)
	cancel  context.CancelFunc
	running wait.Group
}

func newWorkers(parent context.Context) *workers {
	ws := &workers{}
	ws.ctx, ws.cancel = context.WithCancel(parent)
	return ws
}

// start runs f in a goroutine of its own, with a context that ends when
// ctx ends or the workers are closed. It reports false, running nothing,
// once they are closed.
func (ws *workers) start(ctx context.Context, f func(ctx context.Context)) bool {
	return ws.running.Go(func() {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(ws.ctx, cancel)
		defer stop()
		f(ctx)
	})
}

// close ends every worker's context and waits for them to return.
func (ws *workers) close() { ws.running.Close(ws.cancel) }

package concurrency

import (
	"context"
	"errors"

	"github.com/cairnkv/cairn/client"
)

// errLostWatcher is returned when a watch ends without an error of its own
// while its context is still alive.
var errLostWatcher = errors.New("lost watcher waiting for delete")

// cleanupContext is for undoing a write after ctx failed: it keeps ctx's
// values (the caller's request metadata, such as an auth token) but not
// its cancellation, and ends when the client closes.
func cleanupContext(ctx context.Context, c *client.Client) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(c.Ctx(), cancel)
	return cctx, func() { stop(); cancel() }
}

// withFirstCreate selects the key under a prefix with the lowest create
// revision: the owner of a lock or election.
func withFirstCreate() []client.OpOption {
	return []client.OpOption{client.WithPrefix(),
		client.WithSort(client.SortByCreateRevision, client.SortAscend), client.WithLimit(1)}
}

// withLastCreate selects the key under a prefix with the highest create
// revision.
func withLastCreate() []client.OpOption {
	return []client.OpOption{client.WithPrefix(),
		client.WithSort(client.SortByCreateRevision, client.SortDescend), client.WithLimit(1)}
}

// waitDeletes returns once no key under pfx has a create revision of
// maxCreateRev or less. It waits for the youngest such key at a time: the
// waiter right ahead in the queue. When that key goes, the ones before it
// are checked again, so a waiter that gave up early never lets a later one
// skip the queue.
func waitDeletes(ctx context.Context, c *client.Client, pfx string, maxCreateRev int64) error {
	opts := append(withLastCreate(), client.WithMaxCreateRev(maxCreateRev))
	for {
		resp, err := c.Get(ctx, pfx, opts...)
		if err != nil {
			return err
		}
		if len(resp.Kvs) == 0 {
			return nil
		}
		if err := waitDelete(ctx, c, string(resp.Kvs[0].Key), resp.Header.Revision); err != nil {
			return err
		}
	}
}

// waitDelete watches key from rev, at which it existed, until it is deleted.
func waitDelete(ctx context.Context, c *client.Client, key string, rev int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var last client.WatchResponse
	for wr := range c.Watch(wctx, key, client.WithRev(rev)) {
		for _, ev := range wr.Events {
			if ev.Type == client.EventTypeDelete {
				return nil
			}
		}
		last = wr
	}
	if err := last.Err(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errLostWatcher
}

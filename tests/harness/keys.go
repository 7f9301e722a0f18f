package harness

import (
	"context"
	"testing"

	"github.com/cairnkv/cairn/client"
)

// WaitKey blocks until key exists (for the lock and election tests: a
// waiter has queued), failing t if ctx ends first.
func WaitKey(t testing.TB, ctx context.Context, c *client.Client, key string) {
	t.Helper()
	resp, err := c.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) > 0 {
		return
	}
	for wr := range c.Watch(ctx, key, client.WithRev(resp.Header.Revision+1)) {
		for _, ev := range wr.Events {
			if ev.Type == client.EventTypePut {
				return
			}
		}
	}
	t.Fatalf("key %q never appeared: %v", key, ctx.Err())
}

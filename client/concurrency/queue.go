package concurrency

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cairnkv/cairn/client"
)

// ticket is a session's place in a waiting line of keys under a prefix,
// which Mutex and Election share: each session owns the key prefix+<lease in
// hex>, the line is ordered by the keys' create revisions, and the session
// whose key is oldest is at the front (holds the lock, leads the election).
type ticket struct {
	key     string
	created int64 // create revision of key
}

// takeTicket creates the session's key under prefix with val, unless the
// session is in line already, in which case it keeps its place. The ops in
// alongside run in the same transaction; their answers follow the key's own
// in the response (Responses[1:]). held is the key as it stood when the
// session was in line already, nil when it was created now.
func takeTicket(ctx context.Context, s *Session, prefix, val string, alongside ...client.Op) (t ticket, held *mvccpb.KeyValue, resp *client.TxnResponse, err error) {
	key := fmt.Sprintf("%s%x", prefix, s.Lease())
	create := append([]client.Op{client.OpPut(key, val, client.WithLease(s.Lease()))}, alongside...)
	reread := append([]client.Op{client.OpGet(key)}, alongside...)
	resp, err = s.Client().Txn(ctx).
		If(client.Compare(client.CreateRevision(key), "=", 0)).
		Then(create...).
		Else(reread...).
		Commit()
	if err != nil {
		return ticket{}, nil, nil, err
	}
	if resp.Succeeded {
		return ticket{key: key, created: resp.Header.Revision}, nil, resp, nil
	}
	held = resp.Responses[0].GetResponseRange().Kvs[0]
	return ticket{key: key, created: held.CreateRevision}, held, resp, nil
}

// inLine reports whether the ticket names a key taken and not yet given up.
func (t ticket) inLine() bool {
	return t.key != "" && t.key != releasedKey && t.created > 0
}

// waitForFront returns once every key under prefix that is older than the
// ticket's is gone, or with ctx's error.
func (t ticket) waitForFront(ctx context.Context, c *client.Client, prefix string) error {
	return waitDeletes(ctx, c, prefix, t.created-1)
}

// stillHeld is a comparison that holds while the ticket's key is the one the
// session created (it was neither deleted nor re-created since).
func (t ticket) stillHeld() client.Cmp {
	return client.Compare(client.CreateRevision(t.key), "=", t.created)
}

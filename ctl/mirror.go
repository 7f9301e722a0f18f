package ctl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairnkv/cairn/client"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.uber.org/zap"
)

// mirrorOpts are make-mirror's flags.
type mirrorOpts struct {
	prefix, destPrefix string
	noDestPrefix       bool
	rev                int64
	maxTxnOps          uint
	cert, key, cacert  string
	insecureTransport  bool
	user, password     string
	reportEvery        time.Duration // a seam for tests; etcdctl's is 30s
	syncBaseLimit      int64         // keys per range of the initial copy
}

func init() {
	register(&command{path: "make-mirror", usage: "Makes a mirror at the destination etcd cluster", flags: mirrorFlags, run: makeMirrorCmd})
}

func mirrorFlags(fs *flag.FlagSet, o *opts) {
	m := &o.mirror
	m.reportEvery, m.syncBaseLimit = 30*time.Second, 1000
	fs.StringVar(&m.prefix, "prefix", "", "Key-value prefix to mirror")
	fs.Int64Var(&m.rev, "rev", 0, "Specify the kv revision to start to mirror")
	fs.UintVar(&m.maxTxnOps, "max-txn-ops", 128, "Maximum number of operations permitted in a transaction during syncing updates.")
	fs.StringVar(&m.destPrefix, "dest-prefix", "", "destination prefix to mirror a prefix to a different prefix in the destination cluster")
	fs.BoolVar(&m.noDestPrefix, "no-dest-prefix", false, "mirror key-values to the root of the destination cluster")
	fs.StringVar(&m.cert, "dest-cert", "", "Identify secure client using this TLS certificate file for the destination cluster")
	fs.StringVar(&m.key, "dest-key", "", "Identify secure client using this TLS key file")
	fs.StringVar(&m.cacert, "dest-cacert", "", "Verify certificates of TLS enabled secure servers using this CA bundle")
	fs.BoolVar(&m.insecureTransport, "dest-insecure-transport", true, "Disable transport security for client connections")
	fs.StringVar(&m.user, "dest-user", "", "Destination username[:password] for authentication (prompt if password is not supplied)")
	fs.StringVar(&m.password, "dest-password", "", "Destination password for authentication (if this option is used, --user option shouldn't include password)")
}

func makeMirrorCmd(c *cmdCtx) error {
	if len(c.args) != 1 {
		return fail(exitBadArgs, "make-mirror takes one destination argument")
	}
	m := &c.o.mirror
	dc, err := c.destClient(c.args[0])
	if err != nil {
		return err
	}
	defer dc.Close()
	sc, err := c.newClient()
	if err != nil {
		return err
	}
	defer sc.Close()
	if m.noDestPrefix && m.destPrefix != "" {
		return fail(exitBadArgs, "`--dest-prefix` and `--no-dest-prefix` cannot be set at the same time, choose one")
	}
	mr := &mirror{o: m, src: sc, dst: dc}
	stop := mr.reportTotal(c)
	defer stop()
	// etcdctl exits with "Error: <nil>" when the source ends the watch.
	return fail(exitError, "%v", mr.run(context.Background()))
}

// destClient connects to the destination cluster with the --dest-* flags
// and the global dial settings.
func (c *cmdCtx) destClient(dest string) (*client.Client, error) {
	m := &c.o.mirror
	// No DialTimeout: like etcd's client, New does not wait for the
	// destination, so argument errors come first.
	cfg := client.Config{
		Endpoints:            []string{dest},
		DialKeepAliveTime:    c.g.keepAlive,
		DialKeepAliveTimeout: c.g.keepAliveTO,
		MaxCallSendMsgSize:   c.g.maxReqBytes,
		MaxCallRecvMsgSize:   c.g.maxRecvBytes,
		Logger:               zap.NewNop(),
	}
	if m.cert != "" || m.cacert != "" || !m.insecureTransport {
		tc, err := destTLS(m.cert, m.key, m.cacert)
		if err != nil {
			return nil, fail(exitBadConn, "%v", err)
		}
		cfg.TLS = tc
	}
	if err := c.userCredentials(&cfg, m.user, m.password); err != nil {
		return nil, err
	}
	cl, err := client.New(cfg)
	if err != nil {
		return nil, fail(exitBadConn, "%v", err)
	}
	return cl, nil
}

func destTLS(cert, key, ca string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cert != "" {
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{kp}
	}
	if ca != "" {
		b, err := os.ReadFile(ca)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(b)
		tc.RootCAs = pool
	}
	return tc, nil
}

// mirror copies a prefix of the source cluster to the destination: the
// keys as of one revision, then every later event.
type mirror struct {
	o        *mirrorOpts
	src, dst *client.Client
	total    atomic.Int64
}

// reportTotal prints how many keys were synced so far, periodically,
// until the returned stop is called.
func (mr *mirror) reportTotal(c *cmdCtx) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(mr.o.reportEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintln(c.stdout, mr.total.Load())
			}
		}
	}()
	return func() { close(done); <-finished }
}

func (mr *mirror) run(ctx context.Context) error {
	startRev := max(mr.o.rev-1, 0)
	if startRev == 0 {
		// Without --dest-prefix the keys keep their prefix. (With --rev
		// etcdctl leaves the destination prefix empty, so the source prefix
		// is stripped; cairnctl does the same.)
		if !mr.o.noDestPrefix && mr.o.destPrefix == "" {
			mr.o.destPrefix = mr.o.prefix
		}
		rev, err := mr.syncBase(ctx)
		if err != nil {
			return err
		}
		startRev = rev
	}
	return mr.syncUpdates(ctx, startRev)
}

func (mr *mirror) destKey(k []byte) string {
	return strings.Replace(string(k), mr.o.prefix, mr.o.destPrefix, 1)
}

// syncBase copies the keys under the prefix as of the current revision,
// in key order, and returns that revision.
func (mr *mirror) syncBase(ctx context.Context) (int64, error) {
	probe := "foo" // any key: only the header's revision matters
	if mr.o.prefix != "" {
		probe = mr.o.prefix
	}
	r, err := mr.src.Get(ctx, probe)
	if err != nil {
		return 0, err
	}
	rev := r.Header.Revision
	key, ops := "\x00", []client.OpOption{client.WithFromKey()}
	if mr.o.prefix != "" {
		key, ops = mr.o.prefix, []client.OpOption{client.WithRange(client.GetPrefixRangeEnd(mr.o.prefix))}
	}
	ops = append(ops, client.WithLimit(mr.o.syncBaseLimit), client.WithRev(rev), client.WithSort(client.SortByKey, client.SortAscend))
	for {
		r, err := mr.src.Get(ctx, key, ops...)
		if err != nil {
			return 0, err
		}
		for _, kv := range r.Kvs {
			if _, err := mr.dst.Put(ctx, mr.destKey(kv.Key), string(kv.Value)); err != nil {
				return 0, err
			}
			mr.total.Add(1)
		}
		if !r.More || len(r.Kvs) == 0 {
			return rev, nil
		}
		key = string(append(r.Kvs[len(r.Kvs)-1].Key, 0))
	}
}

// syncUpdates replays the events after rev on the destination, one
// transaction per source revision (split at --max-txn-ops operations).
func (mr *mirror) syncUpdates(ctx context.Context, rev int64) error {
	for wr := range mr.src.Watch(ctx, mr.o.prefix, client.WithPrefix(), client.WithRev(rev+1)) {
		if wr.CompactRevision != 0 {
			return rpctypes.ErrCompacted
		}
		if err := mr.apply(ctx, wr.Events); err != nil {
			return err
		}
	}
	return nil
}

func (mr *mirror) apply(ctx context.Context, evs []*client.Event) error {
	var ops []client.Op
	var lastRev int64
	commit := func() error {
		if _, err := mr.dst.Txn(ctx).Then(ops...).Commit(); err != nil {
			return err
		}
		ops = nil
		return nil
	}
	for _, ev := range evs {
		next := ev.Kv.ModRevision
		if (lastRev != 0 && next > lastRev) || len(ops) == int(mr.o.maxTxnOps) {
			if err := commit(); err != nil {
				return err
			}
		}
		lastRev = next
		if ev.Type == mvccpb.DELETE {
			ops = append(ops, client.OpDelete(mr.destKey(ev.Kv.Key)))
		} else {
			ops = append(ops, client.OpPut(mr.destKey(ev.Kv.Key), string(ev.Kv.Value)))
		}
		mr.total.Add(1)
	}
	if len(ops) == 0 {
		return nil
	}
	return commit()
}

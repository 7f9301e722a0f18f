package e2e

import (
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestTLSCertCommonNameIsAuthUser: with --client-cert-auth and auth
// enabled, a request without a token is made by the user its client
// certificate names, as in etcd.
func TestTLSCertCommonNameIsAuthUser(t *testing.T) {
	ca := newTestCA(t)
	rootCert, rootKey, _ := ca.issue("root", certOpts{cn: "root"})
	aliceCert, aliceKey, _ := ca.issue("alice", certOpts{cn: "alice"})
	m := newTLSMember(t, tlsMemberOpts{args: ca.clientCertAuthArgs()})
	m.start()

	root := tlsClient(t, m.clientURL, ca.clientTLS(rootCert, rootKey))
	for _, step := range []func() error{
		func() error { _, err := root.UserAdd(ctx(t), "root", "rootpw"); return err },
		func() error { _, err := root.UserGrantRole(ctx(t), "root", "root"); return err },
		func() error { _, err := root.UserAdd(ctx(t), "alice", "alicepw"); return err },
		func() error { _, err := root.RoleAdd(ctx(t), "reader"); return err },
		func() error {
			_, err := root.RoleGrantPermission(ctx(t), "reader", "pub/", clientv3.GetPrefixRangeEnd("pub/"), clientv3.PermissionType(clientv3.PermRead))
			return err
		},
		func() error { _, err := root.UserGrantRole(ctx(t), "alice", "reader"); return err },
		func() error { _, err := root.Put(ctx(t), "pub/k", "v"); return err },
		func() error { _, err := root.AuthEnable(ctx(t)); return err },
	} {
		must(t, step())
	}

	// root, named by its certificate, may still write after auth is on.
	if _, err := root.Put(ctx(t), "pub/k2", "v2"); err != nil {
		t.Fatalf("root (by certificate) cannot write with auth enabled: %s", describeErr(err))
	}
	alice := tlsClient(t, m.clientURL, ca.clientTLS(aliceCert, aliceKey))
	resp, err := alice.Get(ctx(t), "pub/k")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("alice (by certificate) cannot read pub/k: %v %s", resp, describeErr(err))
	}
	_, err = alice.Put(ctx(t), "pub/k", "x")
	wantErr(t, err, rpctypes.ErrPermissionDenied)
	_, err = alice.Get(ctx(t), "private")
	wantErr(t, err, rpctypes.ErrPermissionDenied)
}

package ctl

import (
	"github.com/cairnkv/cairn/client"
	"go.etcd.io/etcd/api/v3/authpb"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

// Output of the auth, user and role commands. As with etcdctl, the table
// format supports none of them and the fields format not user get, user
// list and auth status; the request has been made when that is reported.

// authResult prints a response that the simple format reports with the
// line simple and the fields format with the header only.
func (p *printer) authResult(m proto.Message, h *pb.ResponseHeader, simple string) error {
	return p.show(shown{
		simple: func() { p.println(simple) },
		fields: func() { p.fieldHdr(h) },
		json:   m, pb: m,
	})
}

func (p *printer) authStatus(r *pb.AuthStatusResponse) error {
	return p.show(shown{
		simple: func() {
			p.println("Authentication Status:", r.GetEnabled())
			p.println("AuthRevision:", r.GetAuthRevision())
		},
		json: r, pb: r,
	})
}

func (p *printer) userGet(name string, r *pb.AuthUserGetResponse) error {
	return p.show(shown{
		simple: func() {
			p.printf("User: %s\n", name)
			p.printf("Roles:")
			for _, role := range r.GetRoles() {
				p.printf(" %s", role)
			}
			p.println()
		},
		json: r, pb: r,
	})
}

func (p *printer) userList(r *pb.AuthUserListResponse) error {
	return p.show(shown{
		simple: func() {
			for _, u := range r.GetUsers() {
				p.println(u)
			}
		},
		json: r, pb: r,
	})
}

func (p *printer) roleList(r *pb.AuthRoleListResponse) error {
	return p.show(shown{
		simple: func() {
			for _, role := range r.GetRoles() {
				p.println(role)
			}
		},
		fields: func() {
			p.fieldHdr(r.GetHeader())
			p.printf(`"Roles" :`)
			for _, role := range r.GetRoles() {
				p.printf(" %q", role)
			}
			p.println()
		},
		json: r, pb: r,
	})
}

// rootRole is the role that may do everything; it has no permissions of
// its own, and etcdctl shows it as reading and writing every key.
const rootRole = "root"

func (p *printer) roleGet(role string, r *pb.AuthRoleGetResponse) error {
	return p.show(shown{
		simple: func() { p.rolePerms(role, r.GetPerm()) },
		fields: func() {
			p.fieldHdr(r.GetHeader())
			for _, perm := range r.GetPerm() {
				p.println(`"PermType" : `, perm.GetPermType().String())
				p.printf("\"Key\" : %q\n", string(perm.GetKey()))
				p.printf("\"RangeEnd\" : %q\n", string(perm.GetRangeEnd()))
			}
		},
		json: r, pb: r,
	})
}

// rolePerms lists the keys a role may read, then those it may write.
func (p *printer) rolePerms(role string, perms []*authpb.Permission) {
	p.printf("Role %s\n", role)
	if role == rootRole && perms == nil {
		p.println("KV Read:")
		p.println("\t[, <open ended>")
		p.println("KV Write:")
		p.println("\t[, <open ended>")
		return
	}
	p.println("KV Read:")
	for _, perm := range perms {
		if t := perm.GetPermType(); t == client.PermRead || t == client.PermReadWrite {
			p.permission(perm)
		}
	}
	p.println("KV Write:")
	for _, perm := range perms {
		if t := perm.GetPermType(); t == client.PermWrite || t == client.PermReadWrite {
			p.permission(perm)
		}
	}
}

func (p *printer) permission(perm *authpb.Permission) {
	key, end := string(perm.GetKey()), string(perm.GetRangeEnd())
	switch {
	case end == "":
		p.printf("\t%s\n", key)
		return
	case end == "\x00":
		p.printf("\t[%s, <open ended>", key)
	default:
		p.printf("\t[%s, %s)", key, end)
	}
	if key != "" && client.GetPrefixRangeEnd(key) == end {
		p.printf(" (prefix %s)", key)
	}
	p.println()
}

// revokedPermission is the simple output of role revoke-permission.
func revokedPermission(role, key, end string) string {
	switch end {
	case "":
		return "Permission of key " + key + " is revoked from role " + role
	case "\x00":
		return "Permission of range [" + key + ", <open ended> is revoked from role " + role
	}
	return "Permission of range [" + key + ", " + end + ") is revoked from role " + role
}

package etcdserver

// memberView is the member as the concern types around the core see it:
// the core itself (leadership, raft status, headers), its stores (each
// read under the store lock), its proposer, its view of raft, its backend
// commits (the apply lock) and its KV service (the quota check). Each concern names the few methods it uses in an interface of
// its own (leaseMember, clusterMember, maintenanceMember, ...), and a test
// hands it a fake instead.
type memberView struct {
	*Server
	*stores
	*proposer
	*raftView
	*backendCommits
	*KVService
}

// view is the member as its concerns see it. It copies the parts
// pointers: New takes it only once they are set (KVService takes it before
// it exists itself, and uses none of its own methods through it).
func (s *Server) view() memberView {
	return memberView{s, s.stores, s.props, s.raftView, s.commits, s.kvs}
}

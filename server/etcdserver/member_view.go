package etcdserver

// memberView is the member as the concern types around the core see it:
// the core itself (leadership, raft status, proposals, headers), its
// stores (each read under the store lock) and its KV service (the quota
// check). Each concern names the few methods it uses in an interface of
// its own (leaseMember, clusterMember, maintenanceMember, ...), and a test
// hands it a fake instead.
type memberView struct {
	*Server
	*stores
	*KVService
}

func (s *Server) view() memberView { return memberView{s, s.stores, s.kvs} }

package etcdserver

import "go.etcd.io/raft/v3"

// RaftStatus reports raft's view of the cluster as this member sees it: on
// the leader it includes each member's replication progress. The
// dashboard shows it; MembershipAdmin judges a learner's progress by it.
func (s *Server) RaftStatus() (raft.Status, error) { return s.node.Status() }

// Package utl implements cairnutl, the offline counterpart of etcd v3.7's
// etcdutl: it reads and rewrites a member's files (the bbolt db, the WAL and
// the .snap files) without a running server. Commands, flags, output formats,
// exit codes and error texts follow etcdutl's so that scripts written for one
// work with the other.
package utl

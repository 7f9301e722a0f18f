// Package failpoint owns named fault-injection points: places in the
// server where a test can make the process crash, stall or print as it
// passes, to reproduce failures at exactly the moment crash-recovery bugs
// hide (between a WAL write and its fsync, between applying an entry and
// committing the backend, in the middle of a compaction...).
//
// A call site is one line:
//
//	failpoint.Inject("raftBeforeSave")
//
// In the production build (no build tag) Inject has an empty body and
// Mount returns its argument: the compiler inlines both away, so the
// binary contains neither the registry, nor the HTTP endpoint, nor the
// names of the points.
//
// Built with -tags failpoints, points are armed with etcd's gofail syntax.
// At start from the environment:
//
//	GOFAIL_FAILPOINTS='raftAfterSave=panic;beforeCommit=1*sleep(100)'
//
// and at run time over HTTP on the member's client URLs (Mount):
//
//	PUT    /failpoints/<name>        body: the terms, e.g. panic; 204
//	GET    /failpoints               name=terms lines of the armed points
//	GET    /failpoints/<name>        the point's terms; 404 if not armed
//	GET    /failpoints/<name>/count  how often the point has fired
//	DELETE /failpoints/<name>        disarms; 204, 404 if not armed
//
// Terms are one or more actions joined by "->", each with an optional
// count prefix N* (the action fires N times, then the next term takes
// over; a chain that runs out does nothing):
//
//	off              do nothing (a count of off skips that many passes)
//	panic            crash: write "failpoint panic: <name>" to stderr and
//	                 exit with status 2 at once, running no deferred code,
//	                 as a SIGKILL would
//	sleep(100)       sleep 100 ms; sleep("1.5s") takes a Go duration
//	print            write "failpoint print: <name>" to stderr
//
// gofail's probabilities (N%) and return values are not supported: no
// call site uses a value, and a probability would make a run that must be
// reproducible depend on chance.
//
// The package knows nothing of cairn; the names belong to the call sites.
package failpoint

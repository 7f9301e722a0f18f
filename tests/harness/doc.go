// Package harness is what every test under tests/ uses to run cairn (or the
// real etcd) as a process: binaries built once per test binary run, free
// loopback ports, the flags that make a member or a cluster, a Process that
// starts, waits for its ready line, stops, kills and restarts, and logs kept
// on disk and shown when a test fails.
//
// A package that runs processes wraps its tests in Main, which removes the
// binaries it built once the tests are done:
//
//	func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }
//
//	func TestX(t *testing.T) {
//		p := harness.StartMember(t, harness.Binary(t, "cairn"), harness.Flags{Name: "m0"})
//		cli := harness.Client(t, p.Endpoint())
//		...
//	}
//
// A package whose tests all talk to one member starts it once with
// StartShared from a setup of Main, which stops it after the tests; a
// package that runs clients in the test binary checks with NoLeaks that
// its tests leave no goroutine behind.
//
// Every wait is bounded by a give-up timeout; none of them is an assertion
// about speed.
package harness

// Package testcluster runs a real kube-apiserver backed by a real etcd on
// loopback ports, for integration tests of the informer library.
//
// # Binaries
//
// The package does not download anything. It runs the binaries built by
// hack/tools/build.sh (`make cluster-bin`) into <repo>/bin, or from the
// directory named by the TESTCLUSTER_BIN_DIR environment variable. The
// repository root is found by walking up from the working directory to the
// go.mod of module github.com/typedinformer/informer. When a binary is
// missing, [Start] fails the test (it never skips) and says how to build it.
//
// # Usage
//
// Integration tests carry the build tag "integration" and start one cluster
// per test:
//
//	c := testcluster.Start(t, testcluster.Options{})
//	client := kubernetes.NewForConfigOrDie(c.AdminConfig())
//
// A cluster takes about 5 to 10 seconds to become ready on a 2-core
// machine. Tests that can share one start it from TestMain instead:
//
//	var cluster *testcluster.Cluster
//
//	func TestMain(m *testing.M) {
//		c, err := testcluster.Launch(context.Background(), testcluster.Options{})
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		cluster = c
//		code := m.Run()
//		if err := c.Stop(); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//		}
//		os.Exit(code)
//	}
//
// The methods that take a testing.TB, such as [Cluster.RestartAPIServer],
// work with the *testing.T of whichever test calls them.
//
// [Cluster.AdminConfig] authenticates as a member of system:masters,
// [Cluster.UserConfig] as the unprivileged user "alice", who has no RBAC
// bindings and therefore gets Forbidden for everything beyond discovery.
// Both configs trust the API server's self-signed serving certificate.
//
// Every start uses fresh temporary directories and free loopback ports. The
// processes write their output to log files in that directory; when a test
// fails, the tails of those logs are added to the test output. Set
// TESTCLUSTER_KEEP=1 to keep the directory after the test.
//
// # Getting a reliable 410 Gone
//
// [Cluster.CompactEtcd] compacts etcd so that every resourceVersion handed
// out before the call is gone from etcd. (It first writes twice to a key
// outside the API server's /registry prefix: the API server starts a watch
// from resourceVersion X at etcd revision X+1, so compacting at the current
// revision alone would leave the newest resourceVersion watchable.)
//
// Whether the API server then answers 410 Gone ("too old resource
// version"; apierrors.IsResourceExpired or IsGone) depends on where it
// serves the request from:
//
//   - By default it serves watches, and lists with a resourceVersion, from
//     its watch cache, which keeps recent history in memory and knows
//     nothing about a compaction done behind its back. A watch from a
//     resourceVersion within the cache's window keeps working after
//     CompactEtcd. Do not rely on 410 in this mode.
//   - With APIServerFlags: []string{"--watch-cache=false"}, or
//     "--watch-cache-sizes=pods#0" to bypass the cache for one resource
//     only, the API server reads from etcd: after CompactEtcd, a watch from
//     any earlier resourceVersion and a list with
//     resourceVersionMatch=Exact at one both fail with 410. This is the
//     reliable way.
//   - With the watch cache on, stop the API server, call CompactEtcd, and
//     start it again ([Cluster.StopAPIServer], [Cluster.StartAPIServer]):
//     the new cache starts past every earlier resourceVersion, so watches
//     from them fail with 410 as well. A plain [Cluster.RestartAPIServer]
//     usually has the same effect, but only because the API server writes
//     to etcd while starting; it is not guaranteed.
//
// For a watch, the 410 does not come as an error from Watch: the watch is
// established and its first event is of type watch.Error, carrying a
// *metav1.Status with code 410 (apierrors.FromObject turns it into an
// error). Tests should accept both forms; see cluster_test.go.
//
// The cluster turns off the API server's own periodic compaction
// (--etcd-compaction-interval=0) so that tests control when compaction
// happens; pass the flag again in APIServerFlags to override it.
//
// # Processes
//
// etcd and kube-apiserver run in their own process groups and get SIGKILL
// from the kernel if the process that started them dies (Linux parent-death
// signal), so a crashed test binary does not leave them behind; their
// temporary directory is only removed by a normal cleanup, though.
// Stopping sends SIGTERM and then SIGKILL after a grace period. The API
// server is always stopped before etcd, since it does not exit on SIGTERM
// once etcd is gone.
//
// Outside of go test, [Launch] and [Cluster.Stop] do the same work;
// cmd/localcluster wraps them in a program that runs a cluster until it is
// interrupted.
package testcluster

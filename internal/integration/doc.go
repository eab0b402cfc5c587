// Package integration holds the integration suite of the typed informer
// against a real kube-apiserver and etcd (package testcluster). Its tests
// carry the build tag "integration"; run them one cluster at a time:
//
//	go test -tags integration -race -count=1 -v ./internal/integration/
//
// The suite uses the module's shared test harness, package informertest
// (its recorder, Run, Eventually and ConvergeTo), and package leakcheck:
// each test checks that it leaves no goroutine behind, and TestMain checks
// the whole run once the shared cluster is stopped.
//
// Scenarios, each checking the invariants of docs/reliability.md that apply
// (I1 convergence, I2 last event is the truth, I3 no time travel, I4 no
// phantom or duplicate Add, I5 no goroutine left after Run, I8 bounded LIST
// calls):
//
//   - TestInitialSync: 5,000 pods in 10 namespaces; the cache, the lister's
//     selectors and Get agree exactly with a LIST from the server.
//   - TestChurn: 2,000 creates, updates and deletes under two handlers, one
//     added before Run and one after sync.
//   - TestAPIServerRestart: kube-apiserver restarted (same etcd) mid-churn;
//     the informer reconnects (connection errors and 503s are retried from
//     the same resourceVersion), relists a bounded number of times and
//     converges; then stopped, etcd compacted, started: the re-watch gets
//     410 Gone and the informer relists.
//   - TestGoneAfterCompaction: the informer's watch is held back while pods
//     are deleted and etcd is compacted; the re-watch gets 410 Gone, the
//     informer relists once, and every pod deleted in the gap yields
//     exactly one final-state-unknown Delete with its last known state (a
//     pod re-created with a new UID: that Delete and an Add); with the
//     streaming initial list and with LIST.
//   - TestForbiddenThenGranted: an informer without RBAC reports Forbidden
//     at once without a tight retry loop, syncs once a ClusterRole is
//     bound, without a restart, and reports Forbidden again in
//     Status().LastError when the binding is revoked, without a relist.
//   - TestRewatchAfterRevokeAndGrant: the binding is revoked while a watch
//     is open; the re-watch is refused (403) and retried from the same
//     resourceVersion; once the binding is back the informer watches again
//     from it, without a relist, gets the changes of the gap as ordinary
//     events, and LastError clears as soon as the watch is established.
//   - TestBookmarksAndWatchList: the streaming initial list is used, watch
//     bookmarks advance the resourceVersion of a quiet informer, and the
//     LIST fallback (Options.NoWatchList) works.
//   - TestCustomResources: an informer on a CRD that does not exist yet
//     reports NotFound, then syncs once the CRD is established, and
//     follows its custom resources through the dynamic client.
//   - TestWatcherStopDuringNext (no cluster): regression test for a bug the
//     suite found in source.FromClient.
//
// The tests log their measured figures (sync times, LIST and watch request
// counts, informer Stats) with the prefix "figures:"; they assert only
// bounded counts and correctness, never wall-clock times. Random choices
// (the churn's) come from a seed derived from the test's name, logged as
// "random seed".
package integration

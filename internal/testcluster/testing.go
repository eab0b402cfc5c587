package testcluster

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Start launches a cluster for the test and stops it in t.Cleanup: the API
// server first, then etcd, then the temporary directory is removed. If the
// test has failed by then, the tails of both process logs are logged.
//
// Start fails the test (it never skips it) if the binaries are missing or
// the cluster does not become ready; the failure message carries the tail
// of the failing process's log.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	// Messages are logged here rather than through Logf, so that they are
	// attributed to the caller's line and never logged after the test.
	opts.Logf = nil
	c, err := Launch(context.Background(), opts)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	t.Logf("testcluster: %s", c.startupSummary)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("testcluster: test failed; process logs:\n%s", c.LogTails(logTailLines))
		}
		if err := c.Stop(); err != nil {
			t.Errorf("testcluster: %v", err)
		}
		if os.Getenv(KeepEnv) != "" {
			t.Logf("testcluster: kept %s (%s is set)", c.dir, KeepEnv)
		}
	})
	return c
}

// StopAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after the grace
// period) and leaves etcd running. Requests fail until
// [Cluster.StartAPIServer].
func (c *Cluster) StopAPIServer(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.stopAPIServerLocked(); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
}

// StartAPIServer starts kube-apiserver again, on the same port and etcd,
// after [Cluster.StopAPIServer], and waits until it is ready.
func (c *Cluster) StartAPIServer(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	took, err := c.startAPIServerLocked(context.Background())
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	t.Logf("testcluster: kube-apiserver ready after %v", took.Round(time.Millisecond))
}

// RestartAPIServer stops kube-apiserver and starts it again on the same
// port and etcd, waiting until it is ready. Watches break and the new API
// server begins with an empty watch cache.
func (c *Cluster) RestartAPIServer(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.stopAPIServerLocked(); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	took, err := c.startAPIServerLocked(context.Background())
	if err != nil {
		t.Fatalf("testcluster: restart: %v", err)
	}
	t.Logf("testcluster: kube-apiserver restarted, ready after %v", took.Round(time.Millisecond))
}

// CompactEtcd compacts etcd physically at its current revision and returns
// that revision. Every resourceVersion below it is gone from etcd; see the
// package documentation for when the API server answers 410 Gone for them.
func (c *Cluster) CompactEtcd(t testing.TB) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rev, err := c.compactEtcd(ctx)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	return rev
}

// EtcdRevision returns etcd's current revision, which equals the
// resourceVersion of the latest write through the API server.
func (c *Cluster) EtcdRevision(t testing.TB) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rev, err := c.etcdRevision(ctx)
	if err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	return rev
}

// Kubeconfig writes a kubeconfig for the admin user into a temporary
// directory of the test and returns its path.
func (c *Cluster) Kubeconfig(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := c.WriteKubeconfig(path); err != nil {
		t.Fatalf("testcluster: %v", err)
	}
	return path
}

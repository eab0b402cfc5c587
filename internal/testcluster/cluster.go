package testcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

const (
	defaultStartTimeout    = 90 * time.Second
	defaultStopGracePeriod = 5 * time.Second
	logTailLines           = 40
)

// Options configures a cluster. The zero value is a working default.
type Options struct {
	// APIServerFlags are appended to the kube-apiserver command line after
	// the defaults, so they can add flags (for example
	// "--feature-gates=WatchList=true" or "--watch-cache=false") and
	// override single-valued defaults.
	APIServerFlags []string

	// EtcdFlags are appended to the etcd command line after the defaults.
	EtcdFlags []string

	// BinDir is the directory holding the etcd and kube-apiserver
	// binaries. Empty means $TESTCLUSTER_BIN_DIR, or <repo>/bin if that is
	// unset too.
	BinDir string

	// StartTimeout bounds how long each of etcd and kube-apiserver may take
	// to become ready, on every start. Zero means 90 seconds.
	StartTimeout time.Duration

	// StopGracePeriod is how long a process gets to exit after SIGTERM
	// before it is sent SIGKILL. Zero means 5 seconds.
	StopGracePeriod time.Duration

	// Logf, if set, receives progress messages such as start-up times.
	// Start logs those messages to the test itself and ignores Logf.
	Logf func(format string, args ...any)
}

// Cluster is a running etcd plus kube-apiserver. Create one with [Start] in
// tests or [Launch] elsewhere. Its methods are safe for concurrent use,
// though stopping or restarting the API server while requests are in flight
// makes those requests fail, as it would against a real cluster.
type Cluster struct {
	opts         Options
	dir          string
	certDir      string
	etcdBin      string
	apiserverBin string
	adminToken   string
	userToken    string
	etcdURL      string // fixed once etcd has started

	mu            sync.Mutex // guards the fields below
	etcd          *process
	apiserver     *process
	apiserverPort int // fixed after the first start; restarts reuse it
	caData        []byte
	stopped       bool

	startupSummary string // how long the first start took
}

// Launch starts etcd and kube-apiserver and waits until the API server's
// /readyz reports ready. The caller must call [Cluster.Stop]. Tests should
// use [Start] instead, which ties the cluster to the test's lifetime.
//
// ctx bounds the start-up only; the processes outlive it.
func Launch(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = defaultStartTimeout
	}
	if opts.StopGracePeriod <= 0 {
		opts.StopGracePeriod = defaultStopGracePeriod
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	etcdBin, apiserverBin, err := findBinaries(opts.BinDir)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "testcluster-")
	if err != nil {
		return nil, fmt.Errorf("create cluster directory: %w", err)
	}
	c := &Cluster{
		opts:         opts,
		dir:          dir,
		certDir:      filepath.Join(dir, "certs"),
		etcdBin:      etcdBin,
		apiserverBin: apiserverBin,
	}
	if err := c.launch(ctx); err != nil {
		if stopErr := c.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		if os.Getenv(KeepEnv) == "" {
			err = fmt.Errorf("%w\n(%s was removed; set %s=1 to keep it)", err, dir, KeepEnv)
		}
		return nil, err
	}
	return c, nil
}

// launch prepares the files and starts both processes.
func (c *Cluster) launch(ctx context.Context) error {
	if err := os.MkdirAll(c.certDir, 0o700); err != nil {
		return fmt.Errorf("create certificate directory: %w", err)
	}
	var err error
	if c.adminToken, err = randomToken(); err != nil {
		return err
	}
	if c.userToken, err = randomToken(); err != nil {
		return err
	}
	if err := writeTokenFile(c.tokenFile(), c.adminToken, c.userToken); err != nil {
		return err
	}
	if err := writeServiceAccountKey(c.serviceAccountKeyFile()); err != nil {
		return err
	}

	start := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.startEtcd(ctx); err != nil {
		return err
	}
	etcdReady := time.Since(start)
	took, err := c.startAPIServerLocked(ctx)
	if err != nil {
		return err
	}
	c.startupSummary = fmt.Sprintf("etcd ready after %v, kube-apiserver ready %v later (total %v); logs in %s",
		etcdReady.Round(time.Millisecond), took.Round(time.Millisecond),
		time.Since(start).Round(time.Millisecond), c.dir)
	c.opts.Logf("testcluster: %s", c.startupSummary)
	return nil
}

// Stop stops the API server, then etcd, and removes the cluster's
// temporary directory (unless $TESTCLUSTER_KEEP is set). It is idempotent.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true
	var errs []error
	if c.apiserver != nil {
		errs = append(errs, c.apiserver.stop(c.opts.StopGracePeriod))
	}
	if c.etcd != nil {
		errs = append(errs, c.etcd.stop(c.opts.StopGracePeriod))
	}
	if os.Getenv(KeepEnv) != "" {
		c.opts.Logf("testcluster: keeping %s (%s is set)", c.dir, KeepEnv)
	} else if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove cluster directory: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stop cluster: %w", err)
	}
	return nil
}

// Host returns the API server URL, https://127.0.0.1:<port>. The port
// stays the same across API server restarts.
func (c *Cluster) Host() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hostLocked()
}

func (c *Cluster) hostLocked() string {
	return fmt.Sprintf("https://127.0.0.1:%d", c.apiserverPort)
}

// EtcdURL returns the client URL of etcd, http://127.0.0.1:<port>.
func (c *Cluster) EtcdURL() string {
	return c.etcdURL
}

// Dir returns the cluster's temporary directory, which holds the etcd data,
// the certificates and the logs etcd.log and kube-apiserver.log.
func (c *Cluster) Dir() string {
	return c.dir
}

// AdminConfig returns a client config for a member of system:masters.
func (c *Cluster) AdminConfig() *rest.Config {
	return c.config(c.adminToken)
}

// UserConfig returns a client config for the unprivileged user "alice",
// who is authenticated but bound to no RBAC role.
func (c *Cluster) UserConfig() *rest.Config {
	return c.config(c.userToken)
}

// config returns a config for the bearer token, trusting the API server's
// self-signed certificate, with limits high enough for tests.
func (c *Cluster) config(token string) *rest.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &rest.Config{
		Host:            c.hostLocked(),
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), c.caData...)},
		QPS:             1000,
		Burst:           2000,
	}
}

// WriteKubeconfig writes a kubeconfig for the admin user to path.
func (c *Cluster) WriteKubeconfig(path string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return writeKubeconfig(path, c.hostLocked(), AdminUser, c.adminToken, c.caData)
}

// LogTails returns the last n lines of the kube-apiserver and etcd logs,
// labelled, for failure messages.
func (c *Cluster) LogTails(n int) string {
	return fmt.Sprintf("--- kube-apiserver log tail (%s):\n%s\n--- etcd log tail (%s):\n%s",
		c.apiserverLog(), tailFile(c.apiserverLog(), n), c.etcdLog(), tailFile(c.etcdLog(), n))
}

func (c *Cluster) tokenFile() string             { return filepath.Join(c.dir, "tokens.csv") }
func (c *Cluster) serviceAccountKeyFile() string { return filepath.Join(c.dir, "sa.key") }
func (c *Cluster) apiserverLog() string          { return filepath.Join(c.dir, "kube-apiserver.log") }
func (c *Cluster) etcdLog() string               { return filepath.Join(c.dir, "etcd.log") }

// waitReady polls probe every 100ms until it succeeds, p exits, ctx is
// done or timeout passes.
func waitReady(ctx context.Context, p *process, timeout time.Duration, probe func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	var lastErr error
	for {
		if p.exited() {
			return p.exitError()
		}
		probeCtx, probeCancel := context.WithTimeout(ctx, 5*time.Second)
		err := probe(probeCtx)
		probeCancel()
		if err == nil {
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v: %w (last probe: %w)", timeout, ctx.Err(), lastErr)
		case <-p.done:
		case <-ticker.C:
		}
	}
}

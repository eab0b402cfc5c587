package testcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// apiserverArgs returns the kube-apiserver command line for port.
func (c *Cluster) apiserverArgs(port int) []string {
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--secure-port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		// The address the API server advertises to itself and in its
		// serving certificate. Being loopback, it cannot go into the
		// "kubernetes" Endpoints (validation rejects loopback IPs), so the
		// endpoint reconciler is off, as in upstream's test server.
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + c.certDir,
		"--token-auth-file=" + c.tokenFile(),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + c.serviceAccountKeyFile(),
		"--service-account-signing-key-file=" + c.serviceAccountKeyFile(),
		"--service-cluster-ip-range=10.0.0.0/24",
		// No controller manager runs, so nothing would create the default
		// service account that this plugin waits for when admitting pods.
		"--disable-admission-plugins=ServiceAccount",
		// Tests decide when etcd is compacted (CompactEtcd).
		"--etcd-compaction-interval=0",
	}
	return append(args, c.opts.APIServerFlags...)
}

// startAPIServerLocked starts kube-apiserver and waits for /readyz. On the
// first start it picks a free port, retrying with another one if the bind
// loses a race; later starts reuse that port. It returns how long the API
// server took to become ready. c.mu must be held.
func (c *Cluster) startAPIServerLocked(ctx context.Context) (time.Duration, error) {
	if c.stopped {
		return 0, errors.New("start kube-apiserver: cluster is stopped")
	}
	if c.apiserver != nil && !c.apiserver.exited() {
		return 0, errors.New("start kube-apiserver: already running")
	}
	if c.etcd == nil || c.etcd.exited() {
		return 0, errors.New("start kube-apiserver: etcd is not running")
	}
	firstStart := c.apiserverPort == 0
	var lastErr error
	for attempt := range bindRetries {
		if firstStart {
			ports, err := freePorts(1)
			if err != nil {
				return 0, err
			}
			c.apiserverPort = ports[0]
		} else if attempt > 0 {
			// The port is ours; whatever holds it should let go soon.
			select {
			case <-ctx.Done():
				return 0, fmt.Errorf("start kube-apiserver: %w", ctx.Err())
			case <-time.After(time.Second):
			}
		}
		start := time.Now()
		p, err := startProcess("kube-apiserver", c.apiserverBin, c.apiserverArgs(c.apiserverPort), c.apiserverLog())
		if err != nil {
			return 0, err
		}
		c.apiserver = p
		host := c.hostLocked()
		lastErr = waitReady(ctx, p, c.opts.StartTimeout, func(ctx context.Context) error {
			return c.apiserverReady(ctx, host)
		})
		if lastErr == nil {
			took := time.Since(start)
			ca, err := readServingCA(c.certDir)
			if err != nil {
				return took, err
			}
			c.caData = ca
			return took, nil
		}
		if !p.exited() || !p.logContains(addrInUse) {
			if stopErr := p.stop(c.opts.StopGracePeriod); stopErr != nil {
				lastErr = errors.Join(lastErr, stopErr)
			}
			return 0, fmt.Errorf("kube-apiserver did not become ready: %w\n--- kube-apiserver log tail (%s):\n%s",
				lastErr, p.logPath, p.tail(logTailLines))
		}
	}
	return 0, fmt.Errorf("kube-apiserver: port %d stayed in use after %d attempts: %w", c.apiserverPort, bindRetries, lastErr)
}

// insecureClient probes /readyz before the serving certificate is known.
var insecureClient = &http.Client{
	Timeout: 5 * time.Second,
	Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // readiness probe of a local test server
		DisableKeepAlives: true,
	},
}

// apiserverReady returns nil once GET /readyz answers 200 "ok".
func (c *Cluster) apiserverReady(ctx context.Context, host string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, host+"/readyz", nil)
	if err != nil {
		return fmt.Errorf("build readyz request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.adminToken)
	resp, err := insecureClient.Do(req)
	if err != nil {
		return fmt.Errorf("readyz: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz: %s: %s", resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// stopAPIServerLocked stops kube-apiserver if it runs. c.mu must be held.
func (c *Cluster) stopAPIServerLocked() error {
	if c.apiserver == nil {
		return nil
	}
	if err := c.apiserver.stop(c.opts.StopGracePeriod); err != nil {
		return fmt.Errorf("stop kube-apiserver: %w", err)
	}
	return nil
}

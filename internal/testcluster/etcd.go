package testcluster

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// bindRetries is how often a process is started again on new ports after
// losing a race for a port that was free when it was picked.
const bindRetries = 5

// addrInUse is the text both etcd and kube-apiserver log when a listener
// cannot bind.
const addrInUse = "address already in use"

// startEtcd starts etcd on free loopback ports and waits for it to be
// healthy, retrying on new ports when a bind fails.
func (c *Cluster) startEtcd(ctx context.Context) error {
	var lastErr error
	for range bindRetries {
		ports, err := freePorts(2)
		if err != nil {
			return err
		}
		// A failed attempt may have left a data directory that names the
		// old peer URL; start from scratch.
		dataDir := filepath.Join(c.dir, "etcd-data")
		if err := os.RemoveAll(dataDir); err != nil {
			return fmt.Errorf("reset etcd data directory: %w", err)
		}
		clientURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
		args := []string{
			"--name=testcluster",
			"--data-dir=" + dataDir,
			"--listen-client-urls=" + clientURL,
			"--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=testcluster=" + peerURL,
			"--initial-cluster-state=new",
			// The data is thrown away after the test: skip fsync, it
			// dominates write latency on small VMs.
			"--unsafe-no-fsync=true",
			"--enable-grpc-gateway=true",
			"--log-level=warn",
		}
		args = append(args, c.opts.EtcdFlags...)
		p, err := startProcess("etcd", c.etcdBin, args, filepath.Join(c.dir, "etcd.log"))
		if err != nil {
			return err
		}
		c.etcd = p
		c.etcdURL = clientURL
		lastErr = waitReady(ctx, p, c.opts.StartTimeout, func(ctx context.Context) error {
			return etcdHealthy(ctx, clientURL)
		})
		if lastErr == nil {
			return nil
		}
		if !p.exited() || !p.logContains(addrInUse) {
			return fmt.Errorf("etcd did not become healthy: %w\n--- etcd log tail (%s):\n%s",
				lastErr, p.logPath, p.tail(logTailLines))
		}
		// Lost the race for a port; try again on fresh ones.
	}
	return fmt.Errorf("etcd: no free ports after %d attempts: %w", bindRetries, lastErr)
}

// etcdHealthy asks etcd's /health endpoint.
func etcdHealthy(ctx context.Context, clientURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
	if err != nil {
		return fmt.Errorf("build health request: %w", err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("etcd health: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var health struct {
		Health string `json:"health"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &health) != nil || health.Health != "true" {
		return fmt.Errorf("etcd health: %s: %s", resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// httpClient is used for plain-HTTP calls to etcd.
var httpClient = &http.Client{Timeout: 5 * time.Second}

// jsonInt64 decodes an int64 that the etcd JSON gateway encodes as a string
// (proto3 JSON mapping), also accepting a bare number.
type jsonInt64 int64

// UnmarshalJSON implements json.Unmarshaler.
func (n *jsonInt64) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	if s == "" || s == "null" {
		*n = 0
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("parse int64 %s: %w", b, err)
	}
	*n = jsonInt64(v)
	return nil
}

// etcdResponseHeader is the header of every etcd KV response.
type etcdResponseHeader struct {
	Revision jsonInt64 `json:"revision"`
}

// etcdCall POSTs a JSON request to the etcd v3 gRPC gateway at path and
// decodes the response into out.
func (c *Cluster) etcdCall(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("etcd %s: encode request: %w", path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.etcdURL+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("etcd %s: build request: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("etcd %s: read response: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, bytes.TrimSpace(respBody))
	}
	if err := json.Unmarshal(respBody, out); err != nil {
		return fmt.Errorf("etcd %s: decode response %q: %w", path, respBody, err)
	}
	return nil
}

// etcdRevision returns etcd's current revision, read from the header of a
// range request for a key that does not exist.
func (c *Cluster) etcdRevision(ctx context.Context) (int64, error) {
	var resp struct {
		Header etcdResponseHeader `json:"header"`
	}
	// Key "\x00", base64-encoded; only the header is of interest.
	req := map[string]any{"key": "AA==", "count_only": true}
	if err := c.etcdCall(ctx, "/v3/kv/range", req, &resp); err != nil {
		return 0, err
	}
	if resp.Header.Revision <= 0 {
		return 0, fmt.Errorf("etcd /v3/kv/range: response has no revision")
	}
	return int64(resp.Header.Revision), nil
}

// compactionMarkerKey is written to advance etcd's revision before a
// compaction. It lies outside the API server's /registry prefix, so the API
// server never sees it.
const compactionMarkerKey = "/testcluster/compaction-marker"

// bumpEtcdRevision writes the compaction marker key once, advancing etcd's
// revision by one, and returns the new revision.
func (c *Cluster) bumpEtcdRevision(ctx context.Context) (int64, error) {
	req := map[string]any{
		"key":   base64.StdEncoding.EncodeToString([]byte(compactionMarkerKey)),
		"value": base64.StdEncoding.EncodeToString([]byte(time.Now().Format(time.RFC3339Nano))),
	}
	var resp struct {
		Header etcdResponseHeader `json:"header"`
	}
	if err := c.etcdCall(ctx, "/v3/kv/put", req, &resp); err != nil {
		return 0, err
	}
	return int64(resp.Header.Revision), nil
}

// compactEtcd compacts etcd physically and returns the compaction
// revision. It first writes the marker key twice, so that every revision
// handed out before the call is compacted for watches as well as for
// lists: the API server starts a watch from resourceVersion X at etcd
// revision X+1, so X is only gone once the compaction revision exceeds X+1.
// The compaction is physical: it returns once the old revisions are
// removed from the backend.
func (c *Cluster) compactEtcd(ctx context.Context) (int64, error) {
	var rev int64
	for range 2 {
		var err error
		if rev, err = c.bumpEtcdRevision(ctx); err != nil {
			return 0, fmt.Errorf("compact etcd: advance revision: %w", err)
		}
	}
	req := map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}
	var resp struct {
		Header etcdResponseHeader `json:"header"`
	}
	if err := c.etcdCall(ctx, "/v3/kv/compaction", req, &resp); err != nil {
		return 0, fmt.Errorf("compact etcd at revision %d: %w", rev, err)
	}
	return rev, nil
}

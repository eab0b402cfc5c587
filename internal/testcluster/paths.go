package testcluster

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

const (
	// rootModule is the module path whose go.mod marks the repository root.
	rootModule = "github.com/typedinformer/informer"

	// BinDirEnv names the environment variable that overrides the directory
	// holding the etcd and kube-apiserver binaries.
	BinDirEnv = "TESTCLUSTER_BIN_DIR"

	// KeepEnv names the environment variable that, when set to a non-empty
	// value, keeps a cluster's temporary directory (data, logs, certificates)
	// after it is stopped.
	KeepEnv = "TESTCLUSTER_KEEP"

	etcdBinary      = "etcd"
	apiserverBinary = "kube-apiserver"
)

// buildHint tells the reader how to produce the binaries.
const buildHint = "run `make cluster-bin` (or hack/tools/build.sh) in the repository root to build them"

// findBinaries returns the paths of the etcd and kube-apiserver binaries.
// The directory is dir if set, else $TESTCLUSTER_BIN_DIR, else <repo>/bin.
func findBinaries(dir string) (etcd, apiserver string, err error) {
	if dir == "" {
		dir = os.Getenv(BinDirEnv)
	}
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return "", "", fmt.Errorf("locate cluster binaries: %w; set %s or %s", err, BinDirEnv, buildHint)
		}
		dir = filepath.Join(root, "bin")
	}
	var missing []string
	check := func(name string) string {
		p := filepath.Join(dir, name)
		info, err := os.Stat(p)
		if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			missing = append(missing, name)
		}
		return p
	}
	etcd = check(etcdBinary)
	apiserver = check(apiserverBinary)
	if len(missing) > 0 {
		return "", "", fmt.Errorf("%s not found (or not executable) in %s: %s",
			strings.Join(missing, " and "), dir, buildHint)
	}
	return etcd, apiserver, nil
}

// repoRoot walks up from the working directory to the directory whose
// go.mod declares rootModule.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("get working directory: %w", err)
	}
	for dir := wd; ; {
		mod, err := modulePath(filepath.Join(dir, "go.mod"))
		if err == nil && mod == rootModule {
			return dir, nil
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s in %s or its parents", rootModule, wd)
		}
		dir = parent
	}
}

// modulePath returns the module path declared in the go.mod at path.
func modulePath(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read go.mod: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return "", nil
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago, holding each listener open until all are chosen so the same
// port is not returned twice. Another process may take a port before it is
// used; callers start again on new ports when a bind fails.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

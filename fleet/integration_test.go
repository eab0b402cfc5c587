//go:build integration

package fleet_test

import (
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/fleet"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/internal/testcluster"
)

// TestFleetRealServer: a fleet over a real kube-apiserver, in-process
// servers and four broken clusters: one with a CA that did not sign the
// server's certificate, one whose user has no RBAC (Forbidden), one that
// accepts connections and never answers, and the real server again under
// another name. Each broken one is reported for itself; the good ones
// sync while they are broken; disengaging the real one returns the
// goroutines to their count before it was engaged.
func TestFleetRealServer(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{})
	leakcheck.Check(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	kube := kubernetes.NewForConfigOrDie(c.AdminConfig())
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"real-0", "real-1"} {
		p := pod("shop", name, "web")
		p.Spec.Containers = []corev1.Container{{Name: "c", Image: "nginx"}}
		if _, err := kube.CoreV1().Pods("shop").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// A server whose certificate another CA signed.
	other := httptest.NewTLSServer(nil)
	defer other.Close()
	// The broken clusters reach the real server through TCP forwarders of
	// their own, since a fleet refuses a second name for one server.
	wrongCA := rest.CopyConfig(c.AdminConfig())
	wrongCA.Host = forward(t, wrongCA.Host)
	wrongCA.TLSClientConfig.CAData = pemCert(other.Certificate().Raw)
	forbidden := c.UserConfig()
	forbidden.Host = forward(t, forbidden.Host)
	// A server that accepts and never answers.
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			conn, err := hang.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- conn
		}
	}()
	defer func() {
		hang.Close()
		for conn := range accepted {
			conn.Close()
		}
	}()

	var errs clusterErrors
	fl, err := fleet.New(fleet.Options{ErrorHandler: errs.handle})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := fleet.InformerFor[*corev1.Pod](fl, factory.Scope{Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	local := podCluster(t, pod("shop", "local-0", "web"))
	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx) }()
	for name, cfg := range map[string]*rest.Config{
		"real": c.AdminConfig(), "local": local.Config(),
		"wrong-ca": wrongCA, "forbidden": forbidden,
		"hangs": {Host: "https://" + hang.Addr().String(), TLSClientConfig: rest.TLSClientConfig{Insecure: true}},
	} {
		if err := fl.Engage(name, cfg); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if err := fl.Engage("real-again", c.AdminConfig()); err == nil || !strings.Contains(err.Error(), `"real"`) {
		t.Errorf("the real server under a second name: %v, want ErrSameServer naming real", err)
	}

	start := time.Now()
	for _, name := range []string{"real", "local"} {
		if _, err := pods.WaitForCluster(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("real and local synced in %v beside three broken clusters", time.Since(start).Round(time.Millisecond))
	if got, want := items(pods.List(nil)), []string{"local/shop/local-0", "real/shop/real-0", "real/shop/real-1"}; !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
	in, err := pods.WaitForCluster(ctx, "forbidden")
	if !apierrors.IsForbidden(err) {
		t.Errorf("WaitForCluster(forbidden) = %v, %v; want Forbidden", in, err)
	}
	eventually(t, "wrong-ca and forbidden reported", func() bool {
		got := errs.clusters()
		return slices.Contains(got, "wrong-ca") && slices.Contains(got, "forbidden")
	})
	errs.mu.Lock()
	for cluster, es := range errs.got {
		if cluster == "real" || cluster == "local" {
			t.Errorf("the healthy cluster %s reported %v", cluster, es)
		}
		for _, e := range es {
			if cluster == "wrong-ca" && !strings.Contains(e.Error(), "certificate") {
				t.Errorf("wrong-ca: %v", e)
			}
		}
	}
	errs.mu.Unlock()

	// Disengaging the real cluster gives back its goroutines.
	for _, name := range []string{"wrong-ca", "forbidden", "hangs"} {
		if err := fl.Disengage(name); err != nil {
			t.Fatal(err)
		}
	}
	if err := fl.Disengage("real"); err != nil {
		t.Fatal(err)
	}
	goroutinesAcross(t, ctx, fl, pods, "real", c.AdminConfig()).check(t, "real")
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}

// forward listens on a port of its own and copies every connection to and
// from the server of host, an https URL; it returns the URL of the port.
func forward(t *testing.T, host string) string {
	t.Helper()
	u, err := url.Parse(host)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	track := func(cs ...net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if conns == nil {
			return false
		}
		conns = append(conns, cs...)
		return true
	}
	conns = []net.Conn{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", u.Host)
			if err != nil {
				in.Close()
				continue
			}
			if !track(in, out) {
				in.Close()
				out.Close()
				return
			}
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(out, in); out.Close() }()
			go func() { defer wg.Done(); io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		conns = nil
		mu.Unlock()
		wg.Wait()
	})
	return "https://" + l.Addr().String()
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

package fleet_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/fleet"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/source"
)

// kubeconfig is a kubeconfig of the server at host.
func kubeconfig(t *testing.T, host string) []byte {
	t.Helper()
	b, err := clientcmd.Write(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: host}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": {}},
		Contexts:       map[string]*clientcmdapi.Context{"x": {Cluster: "c", AuthInfo: "u"}},
		CurrentContext: "x",
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func kubeconfigSecret(name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: name, Labels: map[string]string{"fleet": "yes"}}, Data: data}
}

// TestSecretsProvider: clusters from kubeconfig Secrets of a hub, as
// cluster-api keeps them: engaged when added, engaged again when the
// kubeconfig changes, disengaged when deleted; a Secret without a
// kubeconfig, or with one that does not parse, or with a server engaged
// under another name is reported for its cluster and the others go on.
func TestSecretsProvider(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	east := podCluster(t, pod("shop", "web-0", "web"))
	west := podCluster(t, pod("shop", "web-1", "web"))
	moved := podCluster(t, pod("lab", "moved", "x"))
	hub := fake.NewClientset(
		kubeconfigSecret("east-kubeconfig", map[string][]byte{"value": kubeconfig(t, east.URL)}),
		kubeconfigSecret("west-kubeconfig", map[string][]byte{"value": kubeconfig(t, west.URL)}),
		kubeconfigSecret("empty-kubeconfig", map[string][]byte{"other": []byte("x")}),
		kubeconfigSecret("bad-kubeconfig", map[string][]byte{"value": []byte("clusters: [oops")}),
		kubeconfigSecret("twin-kubeconfig", map[string][]byte{"value": kubeconfig(t, east.URL)}),
	)
	var errs clusterErrors
	fl, err := fleet.New(fleet.Options{ErrorHandler: errs.handle})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := fleet.InformerFor[*corev1.Pod](fl, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	src, err := source.FromClient[*corev1.Secret](hub.CoreV1().Secrets("clusters"))
	if err != nil {
		t.Fatal(err)
	}
	flDone, provDone := make(chan error, 1), make(chan error, 1)
	go func() { flDone <- fl.Run(ctx) }()
	go func() { provDone <- fleet.Secrets{Source: src, LabelSelector: "fleet=yes"}.Run(ctx, fl) }()

	eventually(t, "east and west engaged, twin refused", func() bool {
		c := fl.Clusters()
		return slices.Contains(c, "east") != slices.Contains(c, "twin") && slices.Contains(c, "west") && len(c) == 2
	})
	eventually(t, "empty, bad and the twin of east reported", func() bool {
		got := errs.clusters()
		return slices.Contains(got, "empty") && slices.Contains(got, "bad") && (slices.Contains(got, "twin") || slices.Contains(got, "east"))
	})
	errs.mu.Lock()
	for _, e := range errs.got["empty"] {
		if !strings.Contains(e.Error(), `no kubeconfig under the key "value"`) {
			t.Errorf("empty: %v", e)
		}
	}
	errs.mu.Unlock()
	if err := pods.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}

	// The west Secret now points at another server: west is engaged again
	// with it.
	sec, _ := hub.CoreV1().Secrets("clusters").Get(ctx, "west-kubeconfig", metav1.GetOptions{})
	sec.Data["value"] = kubeconfig(t, moved.URL)
	if _, err := hub.CoreV1().Secrets("clusters").Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "west's objects are the moved server's", func() bool {
		got := items(pods.List(nil))
		return slices.Contains(got, "west/lab/moved") && !slices.Contains(got, "west/shop/web-1")
	})

	// A Secret deleted disengages its cluster.
	if err := hub.CoreV1().Secrets("clusters").Delete(ctx, "west-kubeconfig", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "west disengaged", func() bool { return !slices.Contains(fl.Clusters(), "west") })

	cancel()
	if err := <-provDone; err != nil {
		t.Errorf("Secrets.Run = %v", err)
	}
	if err := <-flDone; err != nil {
		t.Errorf("Run = %v", err)
	}
	if err := (fleet.Secrets{}).Run(ctx, fl); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("Secrets without a Source: %v", err)
	}
}

// TestKubeconfigsProvider: each file's cluster engaged; a file missing or
// not parsing reported with its cluster's name.
func TestKubeconfigsProvider(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	east := podCluster(t, pod("shop", "web-0", "web"))
	dir := t.TempDir()
	good, bad := dir+"/east", dir+"/bad"
	if err := writeFile(good, kubeconfig(t, east.URL)); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(bad, []byte("{{not yaml")); err != nil {
		t.Fatal(err)
	}
	var errs clusterErrors
	fl, _ := fleet.New(fleet.Options{ErrorHandler: errs.handle})
	pods, _ := fleet.InformerFor[*corev1.Pod](fl, factory.Scope{})
	flDone, provDone := make(chan error, 1), make(chan error, 1)
	go func() { flDone <- fl.Run(ctx) }()
	go func() {
		provDone <- fleet.Kubeconfigs{"east": good, "bad": bad, "missing": dir + "/none"}.Run(ctx, fl)
	}()
	eventually(t, "east engaged", func() bool { return slices.Equal(fl.Clusters(), []string{"east"}) })
	if _, err := pods.WaitForCluster(ctx, "east"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bad and missing reported", func() bool { return slices.Equal(errs.clusters(), []string{"bad", "missing"}) })
	cancel()
	if err := <-provDone; err != nil {
		t.Errorf("Kubeconfigs.Run = %v", err)
	}
	<-flDone
}

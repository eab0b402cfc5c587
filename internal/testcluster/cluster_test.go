//go:build integration

package testcluster_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/tools/clientcmd/api/latest"

	"github.com/typedinformer/informer/internal/testcluster"
)

const namespace = "smoke"

// TestSmoke exercises the whole cluster life cycle: writes as admin, RBAC
// for an unprivileged user, an API server restart, and etcd compaction
// turning every earlier resourceVersion into 410 Gone.
func TestSmoke(t *testing.T) {
	start := time.Now()
	c := testcluster.Start(t, testcluster.Options{
		// Serve watches from etcd so that a compaction is visible at once;
		// see the package documentation.
		APIServerFlags: []string{"--watch-cache=false"},
	})
	t.Logf("cluster ready in %v at %s", time.Since(start).Round(time.Millisecond), c.Host())
	ctx := t.Context()

	admin := kubernetes.NewForConfigOrDie(c.AdminConfig())
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: namespace},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	pod1 := createPod(ctx, t, admin, "pod-1")

	alice := kubernetes.NewForConfigOrDie(c.UserConfig())
	_, err := alice.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("alice listing pods: got %v, want Forbidden", err)
	}

	c.RestartAPIServer(t)
	pods, err := admin.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list pods after restart: %v", err)
	}
	if len(pods.Items) != 1 || pods.Items[0].Name != pod1.Name {
		t.Fatalf("pods after restart = %v, want [%s]", names(pods.Items), pod1.Name)
	}

	// A write after pod-1 so that a watch from pod-1's RV has something to
	// replay: without the compaction it would see pod-2 being added.
	pod2 := createPod(ctx, t, admin, "pod-2")
	expectEvent(ctx, t, admin, pod1.ResourceVersion, pod2.Name)

	rev := c.CompactEtcd(t)
	pod2RV, err := strconv.ParseInt(pod2.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatalf("pod-2 resourceVersion: %v", err)
	}
	if rev <= pod2RV+1 {
		t.Fatalf("compacted at revision %d, want > %d (pod-2's resourceVersion + 1)", rev, pod2RV+1)
	}
	t.Logf("compacted etcd at revision %d", rev)
	// kube-apiserver may write (a lease, after its restart) between the
	// compaction and this read, so the revision can only have moved on.
	if again := c.EtcdRevision(t); again < rev {
		t.Errorf("etcd revision after compaction = %d, want %d or later", again, rev)
	}
	// Both an older RV and the newest one handed out before the
	// compaction are gone.
	expectGone(ctx, t, admin, pod1.ResourceVersion)
	expectGone(ctx, t, admin, pod2.ResourceVersion)
	_, err = admin.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
		ResourceVersion:      pod2.ResourceVersion,
		ResourceVersionMatch: metav1.ResourceVersionMatchExact,
	})
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("list at compacted RV %s: got %v, want 410 Gone", pod2.ResourceVersion, err)
	}

	// The kubeconfig written for demos must work too.
	cfg := restConfigFromKubeconfig(t, c.Kubeconfig(t))
	viaKubeconfig := kubernetes.NewForConfigOrDie(cfg)
	if _, err := viaKubeconfig.CoreV1().Pods(namespace).Get(ctx, pod2.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("get pod via kubeconfig: %v", err)
	}
}

// TestStopStartAPIServer checks that a stopped API server refuses
// connections and comes back on the same address with the same data, and
// that, with the watch cache on, compacting etcd while the API server is
// down makes every earlier resourceVersion 410 Gone.
func TestStopStartAPIServer(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{})
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(c.AdminConfig())
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: namespace},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	pod := createPod(ctx, t, admin, "pod-1")
	host := c.Host()

	c.StopAPIServer(t)
	shortCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := admin.CoreV1().Namespaces().Get(shortCtx, namespace, metav1.GetOptions{}); err == nil {
		t.Fatal("get namespace with the API server stopped succeeded")
	}
	c.CompactEtcd(t)

	c.StartAPIServer(t)
	if c.Host() != host {
		t.Errorf("host after restart = %s, want %s", c.Host(), host)
	}
	if _, err := admin.CoreV1().Pods(namespace).Get(ctx, pod.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("get pod after start: %v", err)
	}
	expectGone(ctx, t, admin, pod.ResourceVersion)
}

func createPod(ctx context.Context, t *testing.T, client kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	pod, err := client.CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "example.invalid/never-pulled"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	return pod
}

// expectEvent watches pods from rv and expects the first event to be the
// addition of the pod named want.
func expectEvent(ctx context.Context, t *testing.T, client kubernetes.Interface, rv, want string) {
	t.Helper()
	ev := firstEvent(ctx, t, client, rv)
	pod, ok := ev.Object.(*corev1.Pod)
	if ev.Type != watch.Added || !ok || pod.Name != want {
		t.Fatalf("first event from RV %s = %s %T, want ADDED %s", rv, ev.Type, ev.Object, want)
	}
}

// expectGone watches pods from rv and expects 410 Gone, either from Watch
// itself or as an Error event, which is how the API server reports a
// compacted revision on a watch stream.
func expectGone(ctx context.Context, t *testing.T, client kubernetes.Interface, rv string) {
	t.Helper()
	w, err := client.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Fatalf("watch from compacted RV %s: got %v, want 410 Gone", rv, err)
		}
		return
	}
	defer w.Stop()
	ev := nextEvent(t, w, rv)
	if ev.Type != watch.Error {
		t.Fatalf("watch from compacted RV %s: first event %s %T, want an Error event", rv, ev.Type, ev.Object)
	}
	err = apierrors.FromObject(ev.Object)
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("watch from compacted RV %s: got error event %v, want 410 Gone", rv, err)
	}
	t.Logf("watch from compacted RV %s: %v", rv, err)
}

func firstEvent(ctx context.Context, t *testing.T, client kubernetes.Interface, rv string) watch.Event {
	t.Helper()
	w, err := client.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatalf("watch from RV %s: %v", rv, err)
	}
	defer w.Stop()
	return nextEvent(t, w, rv)
}

func nextEvent(t *testing.T, w watch.Interface, rv string) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch from RV %s closed without events", rv)
		}
		return ev
	case <-time.After(15 * time.Second):
		t.Fatalf("watch from RV %s: no event within 15s", rv)
	}
	return watch.Event{}
}

func restConfigFromKubeconfig(t *testing.T, path string) *rest.Config {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := runtime.Decode(latest.Codec, data)
	if err != nil {
		t.Fatalf("decode kubeconfig: %v", err)
	}
	cfg := obj.(*clientcmdapi.Config)
	kctx := cfg.Contexts[cfg.CurrentContext]
	return &rest.Config{
		Host:            cfg.Clusters[kctx.Cluster].Server,
		BearerToken:     cfg.AuthInfos[kctx.AuthInfo].Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cfg.Clusters[kctx.Cluster].CertificateAuthorityData},
	}
}

func names(pods []corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

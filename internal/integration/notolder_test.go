//go:build integration

package integration

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/internal/testcluster"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

// podWrites are the writes the scenario makes, to a server or to the fake;
// create and update return the object as stored.
type podWrites struct {
	create func(p *corev1.Pod) *corev1.Pod
	update func(p *corev1.Pod) *corev1.Pod
	delete func(p *corev1.Pod)
}

// TestListNotOlderThanInPages: a LIST "not older than" a version the
// server has since moved past, with a limit, is one snapshot at a version
// no older than asked, in pages that its continue tokens chain: the same
// on kube-apiserver with its watch cache, without it (from etcd, also once
// the version is compacted away), and on the fake. The informer's
// consistency check relies on it after an exact read answers 410.
func TestListNotOlderThanInPages(t *testing.T) {
	t.Run("watch cache", func(t *testing.T) {
		c := sharedCluster(t)
		leakcheck.Check(t)
		notOlderThanInPages(t, serverPodsOf(t, c), nil)
	})
	t.Run("etcd, compacted", func(t *testing.T) {
		leakcheck.Check(t)
		c := testcluster.Start(t, testcluster.Options{APIServerFlags: []string{"--watch-cache=false"}})
		notOlderThanInPages(t, serverPodsOf(t, c), func() { c.CompactEtcd(t) })
	})
	t.Run("fake", func(t *testing.T) {
		leakcheck.Check(t)
		fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})
		must := func(p *corev1.Pod, err error) *corev1.Pod {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		w := podWrites{
			create: func(p *corev1.Pod) *corev1.Pod { return must(fake.Create(p)) },
			update: func(p *corev1.Pod) *corev1.Pod { return must(fake.Update(p)) },
			delete: func(p *corev1.Pod) { must(fake.Delete(cache.KeyOf(p))) },
		}
		notOlderThanInPages(t, func(string) (source.Source[*corev1.Pod], podWrites) { return fake, w }, fake.Compact)
	})
}

// serverPodsOf returns, for a namespace of c it creates, a source of its
// pods and the writes to make to them.
func serverPodsOf(t *testing.T, c *testcluster.Cluster) func(ns string) (source.Source[*corev1.Pod], podWrites) {
	return func(ns string) (source.Source[*corev1.Pod], podWrites) {
		ctx := t.Context()
		cs := clientset(t, c.AdminConfig())
		createNamespaces(ctx, t, cs, ns)
		pods := cs.CoreV1().Pods(ns)
		return podSource(t, cs, ns), podWrites{
			create: func(p *corev1.Pod) *corev1.Pod {
				out, err := pods.Create(ctx, p, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return out
			},
			update: func(p *corev1.Pod) *corev1.Pod {
				out, err := pods.Update(ctx, p, metav1.UpdateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return out
			},
			delete: func(p *corev1.Pod) {
				if err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			},
		}
	}
}

func notOlderThanInPages(t *testing.T, open func(ns string) (source.Source[*corev1.Pod], podWrites), compact func()) {
	ctx := t.Context()
	ns := uniqueName("notolder")
	src, w := open(ns)
	var pods []*corev1.Pod
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		pods = append(pods, w.create(newPod(ns, name, nil)))
	}
	asked := pods[len(pods)-1].ResourceVersion
	// The server moves past the version asked for.
	for _, name := range []string{"h", "i", "j"} {
		w.create(newPod(ns, name, nil))
	}
	changed := pods[0].DeepCopy()
	changed.Labels = map[string]string{"changed": "yes"}
	w.update(changed)
	w.delete(pods[1])
	if compact != nil {
		compact()
		// The version asked for is gone: an exact read of it is refused.
		_, err := src.List(ctx, metav1.ListOptions{ResourceVersion: asked, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Fatalf("exact list at %s after compaction: %v, want 410", asked, err)
		}
	}

	const limit = 3
	opts := metav1.ListOptions{ResourceVersion: asked, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: limit}
	var got []*corev1.Pod
	var listRV string
	pages := 0
	for {
		l, err := src.List(ctx, opts)
		if err != nil {
			t.Fatalf("page %d of a list not older than %s: %v", pages+1, asked, err)
		}
		pages++
		if len(l.Items) > limit {
			t.Errorf("page %d has %d items, over the limit %d", pages, len(l.Items), limit)
		}
		if listRV == "" {
			listRV = l.ResourceVersion
		} else if l.ResourceVersion != listRV {
			t.Errorf("page %d is at %s, the first at %s: not one snapshot", pages, l.ResourceVersion, listRV)
		}
		got = append(got, l.Items...)
		if l.Continue == "" {
			break
		}
		opts = metav1.ListOptions{Limit: limit, Continue: l.Continue}
	}
	if rvNum(listRV) < rvNum(asked) {
		t.Errorf("listed at %s, older than the %s asked for", listRV, asked)
	}
	if pages < 2 {
		t.Errorf("%d items came in %d page, want pages of at most %d", len(got), pages, limit)
	}
	// The snapshot at the list's version, read whole.
	at, err := src.List(ctx, metav1.ListOptions{ResourceVersion: listRV, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil {
		t.Fatalf("exact list at %s: %v", listRV, err)
	}
	if diff := cmp.Diff(informertest.StateOf(at.Items), informertest.StateOf(got)); diff != "" {
		t.Errorf("the pages differ from the snapshot at %s (-snapshot +pages):\n%s", listRV, diff)
	}
	// A server whose watch cache lagged may list at a version between
	// the one asked for and the last write; at the last write the
	// namespace has 9 pods.
	now, err := src.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("quorum list: %v", err)
	}
	if now.ResourceVersion == listRV && len(got) != 9 {
		t.Errorf("%d pods listed at %s, the last write, want 9", len(got), listRV)
	}
	t.Logf("not older than %s, limit %d: %d pods in %d pages at %s (last write at %s)", asked, limit, len(got), pages, listRV, now.ResourceVersion)
}

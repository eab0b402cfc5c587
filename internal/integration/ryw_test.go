//go:build integration

package integration

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// TestReadYourWritesRealServer: 1,000 write -> WaitForResourceVersion ->
// lister read cycles against kube-apiserver (updates of 10 ConfigMaps in
// turn), with 0 stale reads; the wait's p50 and p99 are logged.
func TestReadYourWritesRealServer(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	cs := clientset(t, c.AdminConfig())
	ns := uniqueName("ryw")
	createNamespaces(ctx, t, cs, ns)
	cms := cs.CoreV1().ConfigMaps(ns)
	var cur []*corev1.ConfigMap
	for i := range 10 {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm-", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur = append(cur, cm)
	}
	src, err := source.FromConfig[*corev1.ConfigMap](c.AdminConfig(), source.RESTOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	inf := newInformer(t, src, typed.Options[*corev1.ConfigMap]{})
	it.Run(t, inf)
	if err := inf.WaitForSync(waitCtxFor(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	const cycles = 1000
	waits := make([]time.Duration, 0, cycles)
	stale := 0
	for i := range cycles {
		cm := cur[i%len(cur)].DeepCopy()
		cm.Data = map[string]string{"n": fmt.Sprint(i)}
		got, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur[i%len(cur)] = got
		start := time.Now()
		if err := inf.WaitForResourceVersion(waitCtxFor(t, time.Minute), got.ResourceVersion); err != nil {
			t.Fatal(err)
		}
		waits = append(waits, time.Since(start))
		cached, err := inf.Lister().Namespace(ns).Get(got.Name)
		if err != nil || cached.Data["n"] != fmt.Sprint(i) {
			stale++
		}
	}
	if stale != 0 {
		t.Errorf("%d stale reads in %d write, wait, read cycles", stale, cycles)
	}
	slices.Sort(waits)
	t.Logf("read-your-writes, %d cycles: %d stale reads; wait p50 %v, p99 %v, max %v",
		cycles, stale, waits[cycles/2], waits[cycles*99/100], waits[cycles-1])
}

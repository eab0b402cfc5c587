package file_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/informertest"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/file"
	"github.com/typedinformer/informer/typed"
)

// TestInformer runs an informer over a directory, syncs it, then edits the
// files and checks the handler calls and the cache, with the streaming
// initial list and with paged LISTs.
func TestInformer(t *testing.T) {
	for _, noWatchList := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoWatchList=%v", noWatchList), func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "a.yaml", docs(podYAML("ns", "p1", "app=web"), podYAML("ns", "p2", "app=db")))
			writeFile(t, dir, "bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p4\n  namespace: ns\n  labels: [\n")
			src, sink := newPods(t, dir, file.Options{})
			inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{NoWatchList: noWatchList, PageSize: 1})
			if err != nil {
				t.Fatal(err)
			}
			rec := it.NewRecorder()
			reg, err := inf.AddHandler(rec)
			if err != nil {
				t.Fatal(err)
			}
			stop := it.Run(t, inf)
			defer stop()
			if err := typed.WaitForCacheSync(waitCtx(t), inf, reg); err != nil {
				t.Fatal(err)
			}
			if got := inf.Store().ListKeys(); !cmp.Equal(keyStrings(got), []string{"ns/p1", "ns/p2"}) {
				t.Errorf("synced keys = %v", got)
			}
			if got := fileErrors(sink.all()); !cmp.Equal(got, []string{"bad.yaml:6: file: syntax error"}) {
				t.Errorf("reported = %v", got)
			}

			lastEvent := func(name string) informertest.Event {
				evs := rec.Events(cache.Key{Namespace: "ns", Name: name})
				if len(evs) == 0 {
					return informertest.Event{}
				}
				return evs[len(evs)-1]
			}
			steps := []struct {
				what   string
				change func()
				name   string // the pod whose last handler call is then kind
				kind   string
			}{
				{"new file", func() { writeFile(t, dir, "b.yaml", podYAML("ns", "p3")) }, "p3", "add"},
				{"rename-style save", func() {
					renameInto(t, dir, "a.yaml", docs(podYAML("ns", "p1", "app=web", "v=2"), podYAML("ns", "p2", "app=db")))
				}, "p1", "update"},
				{"object removed from its file", func() { writeFile(t, dir, "a.yaml", podYAML("ns", "p1", "app=web", "v=2")) }, "p2", "delete"},
				{"file deleted", func() { removeFile(t, dir, "b.yaml") }, "p3", "delete"},
				{"bad file fixed", func() { renameInto(t, dir, "bad.yaml", podYAML("ns", "p4", "app=web")) }, "p4", "add"},
			}
			for _, s := range steps {
				s.change()
				it.Eventually(t, s.what, func() bool { return lastEvent(s.name).Kind == s.kind })
			}
			l, err := src.List(waitCtx(t), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			it.ConvergeTo(t, informertest.StateOf(l.Items), inf.Store(), rec)
			web, err := inf.Lister().Namespace("ns").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
			if err != nil {
				t.Fatal(err)
			}
			if got := podNames(web); !cmp.Equal(got, []string{"p1", "p4"}) {
				t.Errorf("lister app=web = %v, want [p1 p4]", got)
			}
			if p, ok := inf.Store().GetByKey(cache.Key{Namespace: "ns", Name: "p1"}); !ok || p.Labels["v"] != "2" {
				t.Errorf("cached p1 = %v, want v=2", p)
			}
			if st := inf.Status(); st.LastError != nil {
				t.Errorf("informer status: %v, want healthy", st.LastError)
			}
			if errs := src.Errors(); len(errs) != 0 {
				t.Errorf("Errors() = %v, want none once fixed", errs)
			}
		})
	}
}

func keyStrings(keys []cache.Key) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k.String())
	}
	slices.Sort(out)
	return out
}

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

package cache_test

// These tests call back into the cache from user code the cache runs: a
// custom selector, an iterator's loop body. A lock held across that user
// code would deadlock them; such a deadlock shows as the test binary's
// timeout, with every goroutine's stack. No test here measures time.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/typedinformer/informer/cache"
)

// callbackSelector is a custom selector that lists no requirements, so the
// Lister must call its Matches, and that runs a callback from each of the
// methods the Lister calls.
type callbackSelector struct {
	labels.Selector // nil: any method not below panics
	f               func(where string)
	match           labels.Selector
}

func (s callbackSelector) Matches(ls labels.Labels) bool {
	s.f("Matches")
	return s.match.Matches(ls)
}

func (s callbackSelector) Empty() bool {
	s.f("Empty")
	return false
}

func (s callbackSelector) Requirements() (labels.Requirements, bool) {
	s.f("Requirements")
	return nil, false
}

func (s callbackSelector) String() string { return "callback(" + s.match.String() + ")" }

// TestSelectorMayCallCache runs a custom selector that reads and writes the
// cache from inside the query.
func TestSelectorMayCallCache(t *testing.T) {
	queries := map[string]func(l *podLister, sel labels.Selector) ([]*corev1.Pod, error){
		"List": func(l *podLister, sel labels.Selector) ([]*corev1.Pod, error) { return l.List(sel) },
		"ListSeq": func(l *podLister, sel labels.Selector) ([]*corev1.Pod, error) {
			return collect(l.ListSeq(sel)), nil
		},
		"Namespace.List": func(l *podLister, sel labels.Selector) ([]*corev1.Pod, error) { return l.Namespace("a").List(sel) },
		"Namespace.ListSeq": func(l *podLister, sel labels.Selector) ([]*corev1.Pod, error) {
			return collect(l.Namespace("a").ListSeq(sel)), nil
		},
	}
	for name, query := range queries {
		t.Run(name, func(t *testing.T) {
			w := mustWriter(t, podOptions{LabelIndexes: []string{"app"}, Indexers: podIndexes{"app": byLabel("app")}})
			st := w.Store()
			mustPut(t, w, listerPods()...)
			l := st.Lister()
			calls := map[string]int{}
			n := 0
			sel := callbackSelector{match: mustSelector(t, "app=web"), f: func(where string) {
				calls[where]++
				// Every read, and a write, from inside the query.
				_ = st.Len()
				_, _ = st.GetByKey(cache.Key{Namespace: "a", Name: "web-0"})
				_, _ = st.ByIndex("app", "web")
				_, _ = st.Snapshot()
				_, _ = l.List(mustSelector(t, "app=web"))
				for range st.All() {
					break
				}
				if where == "Matches" {
					n++
					mustPut(t, w, newPod("a", "written-"+strconv.Itoa(n), "1", "app", "web"))
				}
			}}
			got, err := query(l, sel)
			if err != nil {
				t.Fatal(err)
			}
			for _, where := range []string{"Matches", "Requirements"} {
				if calls[where] == 0 {
					t.Errorf("the selector's %s was not called: calls %v", where, calls)
				}
			}
			// The answer is the content when the query started.
			if len(got) == 0 {
				t.Errorf("query returned nothing")
			}
			for _, p := range got {
				if p.Labels["app"] != "web" || strings.HasPrefix(p.Name, "written-") {
					t.Errorf("query returned %s", podDesc(p))
				}
			}
			if n == 0 || st.Len() != len(listerPods())+n {
				t.Errorf("the writes from Matches: %d, Len %d", n, st.Len())
			}
		})
	}
}

// TestPanickingSelectorReleasesLock checks that a selector that panics
// inside a query leaves the cache usable: no lock is held while it runs.
func TestPanickingSelectorReleasesLock(t *testing.T) {
	queries := map[string]func(l *podLister, sel labels.Selector){
		"List":              func(l *podLister, sel labels.Selector) { _, _ = l.List(sel) },
		"ListSeq":           func(l *podLister, sel labels.Selector) { collect(l.ListSeq(sel)) },
		"Namespace.List":    func(l *podLister, sel labels.Selector) { _, _ = l.Namespace("a").List(sel) },
		"Namespace.ListSeq": func(l *podLister, sel labels.Selector) { collect(l.Namespace("a").ListSeq(sel)) },
	}
	for name, query := range queries {
		for _, where := range []string{"Empty", "Requirements", "Matches"} {
			t.Run(name+"/"+where, func(t *testing.T) {
				w := mustWriter(t, podOptions{LabelIndexes: []string{"app"}})
				mustPut(t, w, listerPods()...)
				l := w.Store().Lister()
				sel := callbackSelector{match: labels.Everything(), f: func(at string) {
					if at == where {
						panic("selector panic in " + at)
					}
				}}
				func() {
					defer func() {
						if recover() == nil {
							t.Errorf("query did not panic")
						}
					}()
					query(l, sel)
				}()
				// A write needs the lock free.
				mustPut(t, w, newPod("a", "after", "1"))
				if _, ok := w.Store().GetByKey(cache.Key{Namespace: "a", Name: "after"}); !ok {
					t.Errorf("Apply after the panic did not store the object")
				}
				// And the query works with a sane selector.
				got, err := l.Namespace("a").List(mustSelector(t, "app=web"))
				if diff := cmp.Diff([]string{"a/web-0@1", "a/web-1@1"}, ids(got)); err != nil || diff != "" {
					t.Errorf("Namespace(a).List(app=web) after the panic: %v (-want +got):\n%s", err, diff)
				}
			})
		}
	}
}

// TestIteratorBodyMayWrite runs every iterator with a loop body that writes
// to the same cache, and one that panics.
func TestIteratorBodyMayWrite(t *testing.T) {
	web := mustSelector(t, "app=web")
	type seq = func(func(*corev1.Pod) bool)
	iterators := map[string]func(st *podStore) seq{
		"All": func(st *podStore) seq {
			return func(yield func(*corev1.Pod) bool) {
				for _, p := range st.All() {
					if !yield(p) {
						return
					}
				}
			}
		},
		"ByIndexSeq":                 func(st *podStore) seq { return st.ByIndexSeq("app", "web") },
		"ByIndexSeq(namespace)":      func(st *podStore) seq { return st.ByIndexSeq(cache.NamespaceIndex, "a") },
		"ListSeq(app=web)":           func(st *podStore) seq { return st.Lister().ListSeq(web) },
		"ListSeq(everything)":        func(st *podStore) seq { return st.Lister().ListSeq(labels.Everything()) },
		"Namespace.ListSeq(app=web)": func(st *podStore) seq { return st.Lister().Namespace("a").ListSeq(web) },
	}
	writes := map[string]func(t *testing.T, w *podWriter, p *corev1.Pod, i int){
		"Apply": func(t *testing.T, w *podWriter, p *corev1.Pod, i int) {
			mustApply(t, w,
				put(newPod(p.Namespace, p.Name, "2", "app", "web")),
				put(newPod("a", fmt.Sprintf("new-%d", i), "1", "app", "web")),
				delPod(p))
		},
		"Replace": func(t *testing.T, w *podWriter, _ *corev1.Pod, _ int) {
			if _, err := w.Replace(entries(listerPods()...)); err != nil {
				t.Error(err)
			}
		},
		"AddIndexers": func(t *testing.T, w *podWriter, _ *corev1.Pod, i int) {
			if err := w.AddIndexers(podIndexes{fmt.Sprintf("idx-%d", i): byTags}); err != nil {
				t.Error(err)
			}
		},
		"nested reads": func(t *testing.T, w *podWriter, _ *corev1.Pod, _ int) {
			st := w.Store()
			_ = st.List()
			_, _ = st.ByIndex("app", "web")
			_ = collect(st.ByIndexSeq("app", "web"))
			_, _ = st.Lister().List(labels.Everything())
			_ = collect(st.Lister().ListSeq(web))
		},
	}
	for iname, it := range iterators {
		for wname, write := range writes {
			t.Run(iname+"/"+wname, func(t *testing.T) {
				w := mustWriter(t, podOptions{Indexers: podIndexes{"app": byLabel("app")}, LabelIndexes: []string{"app"}})
				mustPut(t, w, listerPods()...)
				want := ids(collect(it(w.Store())))
				var got []*corev1.Pod
				for p := range it(w.Store()) {
					write(t, w, p, len(got))
					got = append(got, p)
				}
				// The loop saw the content when it started.
				if diff := cmp.Diff(want, ids(got)); diff != "" {
					t.Errorf("yielded during writes (-want +got):\n%s", diff)
				}
			})
		}
		t.Run(iname+"/panic", func(t *testing.T) {
			w := mustWriter(t, podOptions{Indexers: podIndexes{"app": byLabel("app")}, LabelIndexes: []string{"app"}})
			mustPut(t, w, listerPods()...)
			before := ids(collect(it(w.Store())))
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("loop body did not panic")
					}
				}()
				for range it(w.Store()) {
					panic("loop body panic")
				}
			}()
			after := newPod("a", "after", "1")
			mustApply(t, w, put(after))
			mustApply(t, w, delPod(after))
			// The next iteration yields what the first did: the buffer
			// the panic abandoned was not reused half full.
			if diff := cmp.Diff(before, ids(collect(it(w.Store())))); diff != "" {
				t.Errorf("iteration after the panic (-want +got):\n%s", diff)
			}
		})
	}
}

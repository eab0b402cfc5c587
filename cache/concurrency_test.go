package cache_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/typedinformer/informer/cache"
)

// TestConcurrentReadersAndWriters runs writers and readers of every kind in
// parallel; run it with -race. Readers check invariants that hold at any
// instant, and the final state is checked against the model.
func TestConcurrentReadersAndWriters(t *testing.T) {
	const (
		writers   = 3
		readers   = 3
		writesPer = 400
		nsCount   = 4
		nameCount = 40
	)
	w := mustWriter(t, podOptions{
		Indexers:     podIndexes{"app": byLabel("app"), "tags": byTags},
		LabelIndexes: []string{"app"},
		Resource:     podsResource,
	})
	st, l := w.Store(), w.Store().Lister()
	apps := []string{"web", "db", "cache"}
	genPod := func(r *rand.Rand, w, i int) *corev1.Pod {
		p := newPod("ns-"+strconv.Itoa(r.IntN(nsCount)), "p"+strconv.Itoa(r.IntN(nameCount)), fmt.Sprintf("%d-%d", w, i), "app", apps[r.IntN(len(apps))])
		withAnn(p, "tags", []string{"x", "x,y", "y,z"}[r.IntN(3)])
		if r.IntN(20) == 0 {
			withAnn(p, "fail", "true") // left out of the tags index
		}
		return p
	}

	var writes atomic.Uint64 // Apply and Replace calls: the final revision
	var addedMu sync.Mutex
	added := podIndexes{}
	var writersWG sync.WaitGroup
	for wr := range writers {
		writersWG.Add(1)
		go func() {
			defer writersWG.Done()
			r := rand.New(rand.NewPCG(uint64(wr), 42))
			for i := range writesPer {
				p := genPod(r, wr, i)
				wantFail := p.Annotations["fail"] == "true"
				var err error
				switch op := r.IntN(100); {
				case op < 40:
					_, err = w.Apply([]podChange{put(p)})
					writes.Add(1)
				case op < 60:
					e, perr := w.Prepare(p)
					if perr != nil {
						if !wantFail {
							t.Errorf("writer %d op %d: Prepare: %v", wr, i, perr)
						}
						continue
					}
					q := genPod(r, wr, i+writesPer)
					_, err = w.Apply([]podChange{{Entry: e}, put(q)})
					writes.Add(1)
					wantFail = q.Annotations["fail"] == "true"
				case op < 85:
					_, err = w.Apply([]podChange{delPod(p), del(cache.Key{Namespace: p.Namespace, Name: "p0"})})
					writes.Add(1)
					wantFail = true // nothing to check
				case op < 98:
					es := make([]podEntry, 0, 20)
					for j := range 20 {
						q := genPod(r, wr, i*100+j)
						delete(q.Annotations, "fail")
						es = append(es, podEntry{Object: q})
					}
					_, err = w.Replace(es)
					writes.Add(1)
					wantFail = false
				default:
					name := fmt.Sprintf("w%d-%d", wr, i)
					f := func(p *corev1.Pod) ([]string, error) { return []string{p.Namespace}, nil }
					if err = w.AddIndexers(podIndexes{name: f}); err == nil {
						addedMu.Lock()
						added[name] = f
						addedMu.Unlock()
					}
					wantFail = false
				}
				if err != nil && !wantFail {
					t.Errorf("writer %d op %d: %v", wr, i, err)
				}
			}
		}()
	}
	web := mustSelector(t, "app=web")
	notWeb := mustSelector(t, "app!=web")
	check := func(what string, pods []*corev1.Pod, ok func(*corev1.Pod) bool) {
		for _, p := range pods {
			if !ok(p) {
				t.Errorf("%s returned %s", what, podDesc(p))
				return
			}
		}
	}
	isWeb := func(p *corev1.Pod) bool { return p.Labels["app"] == "web" }
	var wg sync.WaitGroup
	stop := make(chan struct{})
	reads := make([]int, readers)
	for rd := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(rd), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				reads[rd]++
				ns := "ns-" + strconv.Itoa(r.IntN(nsCount))
				switch r.IntN(11) {
				case 0:
					_ = st.List()
					_ = st.ListKeys()
					_ = st.Len()
				case 1:
					got, _ := l.List(web)
					check("Lister.List(app=web)", got, isWeb)
					got, _ = l.List(notWeb)
					check("Lister.List(app!=web)", got, func(p *corev1.Pod) bool { return !isWeb(p) })
				case 2:
					got, _ := l.Namespace(ns).List(labels.Everything())
					check("Namespace.List", got, func(p *corev1.Pod) bool { return p.Namespace == ns })
				case 3:
					for p := range l.ListSeq(web) {
						check("Lister.ListSeq(app=web)", []*corev1.Pod{p}, isWeb)
					}
				case 4:
					for p := range l.Namespace(ns).ListSeq(web) {
						check("Namespace.ListSeq(app=web)", []*corev1.Pod{p}, func(p *corev1.Pod) bool { return isWeb(p) && p.Namespace == ns })
					}
				case 5:
					for k, p := range st.All() {
						if k != cache.KeyOf(p) {
							t.Errorf("All yielded %v with %s", k, id(p))
						}
					}
				case 6:
					objs, rev := st.Snapshot()
					if len(objs) > 0 && rev == 0 {
						t.Errorf("Snapshot: %d objects at revision 0", len(objs))
					}
				case 7:
					got, err := st.ByIndex("app", "web")
					if err != nil {
						t.Error(err)
					}
					check("ByIndex(app, web)", got, isWeb)
					for p := range st.ByIndexSeq(cache.NamespaceIndex, ns) {
						check("ByIndexSeq(namespace)", []*corev1.Pod{p}, func(p *corev1.Pod) bool { return p.Namespace == ns })
					}
				case 8:
					if _, err := st.ByIndex("tags", "x"); err != nil {
						t.Error(err)
					}
					if _, err := st.IndexValues("app"); err != nil {
						t.Error(err)
					}
				case 9:
					k := cache.Key{Namespace: ns, Name: "p" + strconv.Itoa(r.IntN(nameCount))}
					if p, ok := st.GetByKey(k); ok && cache.KeyOf(p) != k {
						t.Errorf("GetByKey(%v) = %s", k, id(p))
					}
					if p, err := l.Namespace(k.Namespace).Get(k.Name); err == nil && cache.KeyOf(p) != k {
						t.Errorf("Namespace(%q).Get(%q) = %s", k.Namespace, k.Name, id(p))
					}
				case 10:
					// A reader that writes from inside an iterator.
					for p := range l.Namespace(ns).ListSeq(web) {
						if r.IntN(4) == 0 {
							_, _ = w.Apply([]podChange{delPod(p)})
							writes.Add(1)
						}
						break
					}
				}
			}
		}()
	}
	writersWG.Wait()
	close(stop)
	wg.Wait()
	total := 0
	for _, n := range reads {
		total += n
	}
	t.Logf("%d writers x %d writes, %d reads", writers, writesPer, total)

	// The final state is consistent with a model built from it.
	m := newModel()
	m.funcs["app"], m.funcs["tags"] = byLabel("app"), byTags
	for name, f := range added {
		m.funcs[name] = f
	}
	m.labelKeys, m.resource, m.rev = []string{"app"}, podsResource, writes.Load()
	for _, p := range st.List() {
		m.items[cache.KeyOf(p)] = p
	}
	s := &script{t: t, w: w, st: st, l: l, m: m, sels: parseSelectors(t)}
	s.check(nil)
}

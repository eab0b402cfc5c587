package cache_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
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
	x := mustIndexer(t, cache.IndexerOptions[*corev1.Pod]{Indexers: cache.Indexers[*corev1.Pod]{
		appIndex: cache.IndexByLabel[*corev1.Pod]("app"),
		"tags":   byTags,
	}})
	l := cache.NewLister(x, podsResource)
	apps := []string{"web", "db", "cache"}
	genPod := func(r *rand.Rand, w, i int) *corev1.Pod {
		p := newPod("ns-"+strconv.Itoa(r.IntN(nsCount)), "p"+strconv.Itoa(r.IntN(nameCount)), fmt.Sprintf("%d-%d", w, i), "app", apps[r.IntN(len(apps))])
		withAnn(p, "tags", []string{"x", "x,y", "y,z"}[r.IntN(3)])
		if r.IntN(20) == 0 {
			withAnn(p, "fail", "true") // rejected by the tags index
		}
		return p
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	var writersWG sync.WaitGroup
	for w := range writers {
		writersWG.Add(1)
		go func() {
			defer writersWG.Done()
			r := rand.New(rand.NewPCG(uint64(w), 42))
			for i := range writesPer {
				p := genPod(r, w, i)
				var err error
				switch op := r.IntN(100); {
				case op < 45:
					err = x.Add(p)
				case op < 75:
					err = x.Update(p)
				case op < 95:
					err = x.Delete(p)
				case op < 98:
					list := make([]*corev1.Pod, 0, 20)
					for j := range 20 {
						q := genPod(r, w, i*100+j)
						delete(q.Annotations, "fail")
						list = append(list, q)
					}
					err = x.Replace(list, strconv.Itoa(i))
				default:
					err = x.AddIndexers(cache.Indexers[*corev1.Pod]{fmt.Sprintf("w%d-%d", w, i): cache.IndexByNamespace[*corev1.Pod]})
				}
				if wantFail := p.Annotations["fail"] == "true"; err != nil && !wantFail {
					t.Errorf("writer %d op %d: %v", w, i, err)
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
				switch r.IntN(12) {
				case 0:
					_ = x.List()
					_ = x.ListKeys()
					_ = x.Len()
				case 1:
					got, _ := l.List(web)
					check("Lister.List(app=web)", got, isWeb)
					got, _ = l.List(notWeb)
					check("Lister.List(app!=web)", got, func(p *corev1.Pod) bool { return !isWeb(p) })
				case 2:
					got, _ := l.Namespace(ns).List(labels.Everything())
					check("Namespace.List", got, func(p *corev1.Pod) bool { return p.Namespace == ns })
				case 3:
					for p := range l.Seq(web) {
						check("Lister.Seq(app=web)", []*corev1.Pod{p}, isWeb)
					}
				case 4:
					for p := range l.Namespace(ns).Seq(web) {
						check("Namespace.Seq(app=web)", []*corev1.Pod{p}, func(p *corev1.Pod) bool { return isWeb(p) && p.Namespace == ns })
					}
				case 5:
					for k, p := range x.All() {
						if k != cache.KeyOf(p) {
							t.Errorf("All yielded %v with %s", k, id(p))
						}
					}
				case 6:
					n := 0
					for range x.Values() {
						n++
					}
					for range x.Keys() {
						n++
					}
				case 7:
					got, err := x.ByIndex(appIndex, "web")
					if err != nil {
						t.Error(err)
					}
					check("ByIndex(app, web)", got, isWeb)
					for p := range x.ByIndexValues(cache.NamespaceIndex, ns) {
						check("ByIndexValues(namespace)", []*corev1.Pod{p}, func(p *corev1.Pod) bool { return p.Namespace == ns })
					}
				case 8:
					if _, err := x.IndexKeys("tags", "x"); err != nil {
						t.Error(err)
					}
					_ = x.ListIndexFuncValues(appIndex)
					_ = x.GetIndexers()
				case 9:
					got, err := x.Index("tags", withAnn(newPod(ns, "probe", ""), "tags", "x,y"))
					if err != nil {
						t.Error(err)
					}
					_ = got
				case 10:
					k := cache.Key{Namespace: ns, Name: "p" + strconv.Itoa(r.IntN(nameCount))}
					if p, ok, _ := x.GetByKey(k); ok && cache.KeyOf(p) != k {
						t.Errorf("GetByKey(%v) = %s", k, id(p))
					}
					_, _ = l.Namespace(k.Namespace).Get(k.Name)
				case 11:
					// A reader that writes from inside an iterator.
					for p := range l.Namespace(ns).Seq(web) {
						if r.IntN(4) == 0 {
							_ = x.Delete(p)
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
	m := newModel(true)
	for name, f := range x.GetIndexers() {
		if name != cache.NamespaceIndex {
			m.funcs[name] = f
		}
	}
	for _, p := range x.List() {
		m.items[cache.KeyOf(p)] = p
	}
	s := &script{t: t, x: x, l: l, m: m}
	for _, str := range modelSelectors {
		s.sels = append(s.sels, mustSelector(t, str))
	}
	s.sels = append(s.sels, nil)
	s.check(nil)
}

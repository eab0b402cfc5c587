package cache_test

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
)

func examplePod(ns, name, app string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns,
		Name:      name,
		Labels:    map[string]string{"app": app},
	}}
}

func names(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, cache.KeyOf(p).String())
	}
	slices.Sort(out)
	return out
}

func ExampleNewWriter() {
	byNode := func(p *corev1.Pod) ([]string, error) {
		if p.Spec.NodeName == "" {
			return nil, nil // unscheduled pods are not indexed
		}
		return []string{p.Spec.NodeName}, nil
	}
	w, err := cache.NewWriter(cache.Options[*corev1.Pod]{
		Indexers: cache.Indexers[*corev1.Pod]{"node": byNode},
	})
	if err != nil {
		panic(err)
	}
	a := examplePod("default", "a", "web")
	a.Spec.NodeName = "node-1"
	b := examplePod("default", "b", "web")
	b.Spec.NodeName = "node-1"
	c := examplePod("kube-system", "c", "dns")
	// Three objects in one write.
	var changes []cache.Change[*corev1.Pod]
	for _, p := range []*corev1.Pod{a, b, c} {
		changes = append(changes, cache.Change[*corev1.Pod]{Entry: cache.Entry[*corev1.Pod]{Object: p}})
	}
	rev, err := w.Apply(changes)
	if err != nil {
		panic(err)
	}
	fmt.Println("revision:", rev)

	st := w.Store()
	onNode, _ := st.ByIndex("node", "node-1")
	fmt.Println("on node-1:", names(onNode))
	inNS, _ := st.ByIndex(cache.NamespaceIndex, "kube-system")
	fmt.Println("in kube-system:", names(inNS))
	got, ok := st.GetByKey(cache.Key{Namespace: "default", Name: "b"})
	fmt.Println("get default/b:", got.Spec.NodeName, ok)
	nodes, _ := st.IndexValues("node")
	fmt.Println("nodes:", nodes)
	// Output:
	// revision: 1
	// on node-1: [default/a default/b]
	// in kube-system: [kube-system/c]
	// get default/b: node-1 true
	// nodes: [node-1]
}

func ExampleWriter_Apply() {
	w, err := cache.NewWriter(cache.Options[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	put := func(p *corev1.Pod) cache.Change[*corev1.Pod] {
		return cache.Change[*corev1.Pod]{Entry: cache.Entry[*corev1.Pod]{Object: p}}
	}
	old := examplePod("default", "web-0", "web")
	if _, err := w.Apply([]cache.Change[*corev1.Pod]{put(old)}); err != nil {
		panic(err)
	}
	changes := []cache.Change[*corev1.Pod]{
		put(examplePod("default", "web-0", "web-v2")), // replaces old
		put(examplePod("default", "web-1", "web")),    // new
		{Entry: cache.Entry[*corev1.Pod]{Key: cache.Key{Namespace: "default", Name: "gone"}}, Delete: true},
	}
	rev, err := w.Apply(changes)
	if err != nil {
		panic(err)
	}
	for _, ch := range changes {
		fmt.Printf("%v: existed=%v replaced old=%v\n", ch.Key, ch.Existed, ch.Prev == old)
	}
	fmt.Println("revision:", rev, "objects:", w.Store().Len())
	// Output:
	// default/web-0: existed=true replaced old=true
	// default/web-1: existed=false replaced old=false
	// default/gone: existed=false replaced old=false
	// revision: 2 objects: 2
}

func ExampleWriter_Prepare() {
	byOwner := func(p *corev1.Pod) ([]string, error) {
		if len(p.OwnerReferences) > 1 {
			return nil, errors.New("more than one owner")
		}
		if len(p.OwnerReferences) == 0 {
			return nil, nil
		}
		return []string{p.OwnerReferences[0].Name}, nil
	}
	w, err := cache.NewWriter(cache.Options[*corev1.Pod]{
		Indexers: cache.Indexers[*corev1.Pod]{"owner": byOwner},
	})
	if err != nil {
		panic(err)
	}
	good := examplePod("default", "web-0", "web")
	good.OwnerReferences = []metav1.OwnerReference{{Name: "web"}}
	bad := examplePod("default", "odd", "web")
	bad.OwnerReferences = []metav1.OwnerReference{{Name: "a"}, {Name: "b"}}

	// Index values are computed here, once, without any lock; an object
	// an index function fails on is refused before anything is written.
	var changes []cache.Change[*corev1.Pod]
	for _, p := range []*corev1.Pod{good, bad} {
		e, err := w.Prepare(p)
		if err != nil {
			fmt.Printf("refused %v: %v\n", cache.KeyOf(p), err)
			continue
		}
		changes = append(changes, cache.Change[*corev1.Pod]{Entry: e})
	}
	if _, err := w.Apply(changes); err != nil {
		panic(err)
	}
	owned, _ := w.Store().ByIndex("owner", "web")
	fmt.Println("owned by web:", names(owned))
	// Output:
	// refused default/odd: index "owner": more than one owner
	// owned by web: [default/web-0]
}

func ExampleWriter_Replace() {
	w, err := cache.NewWriter(cache.Options[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	list := func(pods ...*corev1.Pod) []cache.Entry[*corev1.Pod] {
		var out []cache.Entry[*corev1.Pod]
		for _, p := range pods {
			out = append(out, cache.Entry[*corev1.Pod]{Object: p})
		}
		return out
	}
	if _, err := w.Replace(list(examplePod("a", "x", "web"), examplePod("a", "y", "web"))); err != nil {
		panic(err)
	}
	// A relist: readers see the old content or the new, never a mix.
	rev, err := w.Replace(list(examplePod("a", "y", "web"), examplePod("b", "z", "db")))
	if err != nil {
		panic(err)
	}
	objs, snapRev := w.Store().Snapshot()
	fmt.Println(names(objs), rev, snapRev)
	// Output:
	// [a/y b/z] 2 2
}

func ExampleStore_Lister() {
	w, err := cache.NewWriter(cache.Options[*corev1.Pod]{
		// Selectors on app are answered from the index, not by scanning.
		LabelIndexes: []string{"app"},
		Resource:     schema.GroupResource{Resource: "pods"},
		Scope:        cache.ScopeNamespaced,
	})
	if err != nil {
		panic(err)
	}
	var changes []cache.Change[*corev1.Pod]
	for _, p := range []*corev1.Pod{
		examplePod("default", "web-0", "web"),
		examplePod("default", "web-1", "web"),
		examplePod("default", "db-0", "db"),
		examplePod("staging", "web-0", "web"),
	} {
		changes = append(changes, cache.Change[*corev1.Pod]{Entry: cache.Entry[*corev1.Pod]{Object: p}})
	}
	if _, err := w.Apply(changes); err != nil {
		panic(err)
	}
	l := w.Store().Lister()

	web, _ := l.List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	fmt.Println("app=web:", names(web))
	sel, _ := labels.Parse("app in (db,web)")
	both, _ := l.Namespace("default").List(sel)
	fmt.Println("default, app in (db,web):", names(both))
	p, _ := l.Namespace("staging").Get("web-0")
	fmt.Println("got:", cache.KeyOf(p))
	_, err = l.Namespace("staging").Get("db-0")
	fmt.Println(err, apierrors.IsNotFound(err))
	_, err = l.Get("web-0")
	fmt.Println(errors.Is(err, cache.ErrWrongScope))
	_, err = l.List(nil)
	fmt.Println(err)
	// Output:
	// app=web: [default/web-0 default/web-1 staging/web-0]
	// default, app in (db,web): [default/db-0 default/web-0 default/web-1]
	// got: staging/web-0
	// pods "db-0" not found true
	// true
	// cache: nil selector (use labels.Everything())
}

func ExampleStore_All() {
	w, err := cache.NewWriter(cache.Options[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	if _, err := w.Replace([]cache.Entry[*corev1.Pod]{
		{Object: examplePod("default", "a", "web")},
		{Object: examplePod("default", "b", "db")},
	}); err != nil {
		panic(err)
	}
	var keys []string
	// The loop runs on a snapshot, with no lock held: it may write.
	for k, p := range w.Store().All() {
		keys = append(keys, k.String()+"="+p.Labels["app"])
		if _, err := w.Apply([]cache.Change[*corev1.Pod]{{Entry: cache.Entry[*corev1.Pod]{Key: k}, Delete: true}}); err != nil {
			panic(err)
		}
	}
	slices.Sort(keys)
	fmt.Println(keys, w.Store().Len())
	// Output:
	// [default/a=web default/b=db] 0
}

func ExampleParseKey() {
	for _, s := range []string{"default/web-0", "node-1", "a/b/c"} {
		k, err := cache.ParseKey(s)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Printf("namespace=%q name=%q string=%q\n", k.Namespace, k.Name, k.String())
	}
	// Output:
	// namespace="default" name="web-0" string="default/web-0"
	// namespace="" name="node-1" string="node-1"
	// error: cache: malformed key: "a/b/c"
}

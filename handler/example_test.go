package handler_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
)

// EnqueueKeys feeds client-go's typed workqueue with cache.Key items.
func ExampleEnqueueKeys() {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[cache.Key]())
	defer q.ShutDown()
	h := handler.EnqueueKeys[*corev1.Pod](q)

	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}}
	h.OnAdd(p, true)
	h.OnUpdate(p, p) // same key: the queue de-duplicates it
	key, _ := q.Get()
	fmt.Println(key, q.Len())
	q.Done(key)
	// Output:
	// default/web-0 0
}

// Filter narrows a handler; an update that leaves the predicate is a
// delete for the filtered handler.
func ExampleFilter() {
	h := handler.Filter[*corev1.Pod]{
		Predicate: func(p *corev1.Pod) bool { return p.Labels["app"] == "web" },
		Handler: handler.Funcs[*corev1.Pod]{
			AddFunc:    func(p *corev1.Pod, _ bool) { fmt.Println("add", p.Name) },
			UpdateFunc: func(_, p *corev1.Pod) { fmt.Println("update", p.Name) },
			DeleteFunc: func(d handler.Deleted[*corev1.Pod]) { fmt.Println("delete", d.Key) },
		},
	}
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", Labels: map[string]string{"app": "web"}}}
	db := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", Labels: map[string]string{"app": "db"}}}
	h.OnAdd(web, false)
	h.OnUpdate(web, web)
	h.OnUpdate(web, db)
	h.OnUpdate(db, db)
	// Output:
	// add a
	// update a
	// delete default/a
}

package intern_test

import (
	"fmt"
	"strings"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/internal/intern"
)

// Two pods decoded separately hold their own copies of equal strings;
// once interned, they share one. Names are unique to each object and are
// left alone.
func ExampleNew() {
	in, err := intern.New[*corev1.Pod](intern.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	mk := func(name string) *corev1.Pod {
		// strings.Clone stands for a decoder's fresh allocation.
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: strings.Clone(name), Namespace: strings.Clone("shop"),
			Labels: map[string]string{strings.Clone("app"): strings.Clone("cart")},
		}}
	}
	a, b := mk("cart-1"), mk("cart-1")
	for _, p := range []*corev1.Pod{a, b} {
		if err := in.Strings(p); err != nil {
			fmt.Println(err)
			return
		}
	}
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	fmt.Println("namespace shared:", same(a.Namespace, b.Namespace))
	fmt.Println("label shared:", same(a.Labels["app"], b.Labels["app"]))
	fmt.Println("name shared:", same(a.Name, b.Name))
	_, err = intern.New[corev1.Pod](intern.Options{})
	fmt.Println(err)
	// Output:
	// namespace shared: true
	// label shared: true
	// name shared: false
	// intern: not a pointer to a struct: v1.Pod
}

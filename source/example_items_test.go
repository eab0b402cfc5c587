package source_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

// A source that lists item by item hands over each object as it is
// decoded; the page's metadata comes at the end. Here the server answers
// the LIST whole, as a watch cache does, and the caller keeps only the
// names.
func ExampleItemLister() {
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: []*corev1.Pod{
		pod("shop", "web-1", nil), pod("shop", "web-2", nil), pod("shop", "db-1", nil),
	}})
	server := podserver.Start(fake)
	defer server.Close()
	server.Whole = true

	src, err := source.FromConfig[*corev1.Pod](&rest.Config{Host: server.URL}, source.RESTOptions{Mapper: podserver.Mapper()})
	if err != nil {
		fmt.Println(err)
		return
	}
	il, ok := src.(source.ItemLister[*corev1.Pod])
	if !ok {
		fmt.Println("lists with List only")
		return
	}
	var names []string
	page, err := il.ListItems(context.Background(), metav1.ListOptions{Limit: 2}, func(p *corev1.Pod) error {
		names = append(names, p.Name)
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(names)
	fmt.Printf("resourceVersion %s, continue %q\n", page.ResourceVersion, page.Continue)
	// Output:
	// [db-1 web-1 web-2]
	// resourceVersion 103, continue ""
}

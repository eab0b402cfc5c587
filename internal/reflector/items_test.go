package reflector

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/fifo"
	"github.com/typedinformer/informer/source"
)

// itemSource is a scriptSource that is a source.ItemLister: it hands over
// a scripted page's items one at a time, and counts how many it handed
// over that the sink has not received yet (its List counts a page's items
// as handed over at once). A page may be cut: after cut items, the list
// fails with a 503.
type itemSource struct {
	*scriptSource
	lists   int // ListItems calls
	handed  int // items handed over, by List or ListItems
	maxHeld int // the most items handed over and not yet in the sink
	cut     int // if positive, the next ListItems fails after that many items
}

func (s *itemSource) List(ctx context.Context, opts metav1.ListOptions) (source.List[*corev1.Pod], error) {
	l, err := s.scriptSource.List(ctx, opts)
	s.hand(len(l.Items))
	return l, err
}

func (s *itemSource) ListItems(ctx context.Context, opts metav1.ListOptions, yield func(*corev1.Pod) error) (source.List[*corev1.Pod], error) {
	s.lists++
	l, err := s.scriptSource.List(ctx, opts)
	if err != nil {
		return source.List[*corev1.Pod]{}, err
	}
	items := l.Items
	l.Items = nil
	for i, p := range items {
		if s.cut > 0 && i == s.cut {
			s.cut = 0
			return source.List[*corev1.Pod]{}, listErr(unavailable())
		}
		s.hand(1)
		if err := yield(p); err != nil {
			return source.List[*corev1.Pod]{}, err
		}
	}
	return l, nil
}

// hand counts n items handed over.
func (s *itemSource) hand(n int) {
	s.handed += n
	replaced := 0
	for _, d := range s.sink.deltas() {
		if d.Type == fifo.Replaced || d.Type == fifo.Refused {
			replaced++
		}
	}
	s.maxHeld = max(s.maxHeld, s.handed-replaced)
}

// A source that lists item by item gets a page the server sends whole
// (here 1000 pods, with a page size of 100) pushed in batches of the page
// size as its items are decoded: the reflector never holds more than a
// batch of them, where with List it holds the whole list. The objects that
// did not decode follow the items, as from List.
func TestListItemByItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var pods []*corev1.Pod
		want := []string{"start"}
		for i := range 1000 {
			pods = append(pods, pod(fmt.Sprint("p", i), fmt.Sprint(i+1)))
			want = append(want, fmt.Sprintf("replaced p%d@%d", i, i+1))
		}
		want = append(want, "refused bad@7: "+undecodableItem("bad", "7").Error(), "end@1000")
		var items *itemSource
		h := newHarnessOf(t, opts{NoWatchList: true, PageSize: 100, PushRefused: true}, func(s *scriptSource) source.Source[*corev1.Pod] {
			items = &itemSource{scriptSource: s}
			return items
		})
		whole := page("1000", "", pods...)
		whole.page.Undecodable = []*source.UndecodableError{undecodableItem("bad", "7")}
		h.src.lists, h.src.watches = []step{whole}, []step{hangs().final()}
		h.run()
		if diff := cmp.Diff(want, h.sink.recorded()); diff != "" {
			t.Errorf("deltas (-want +got):\n%s", diff)
		}
		if items.maxHeld > 100 {
			t.Errorf("the reflector held up to %d listed pods not yet pushed, want at most a page (100)", items.maxHeld)
		}
	})
}

// A list that fails midway after some of its items were pushed is never
// closed: the next attempt opens a new one, which the consumer applies
// instead (all or nothing).
func TestListItemsFailMidway(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b, c := pod("a", "1"), pod("b", "2"), pod("c", "3")
		h := newHarnessOf(t, opts{NoWatchList: true, PageSize: 1}, func(s *scriptSource) source.Source[*corev1.Pod] {
			return &itemSource{scriptSource: s, cut: 2}
		})
		h.src.lists, h.src.watches = []step{page("10", "", a, b, c), page("11", "", a, c)}, []step{hangs().final()}
		h.run()
		want := []string{"start", "replaced a@1", "replaced b@2", "start", "replaced a@1", "replaced c@3", "end@11"}
		if diff := cmp.Diff(want, h.sink.recorded()); diff != "" {
			t.Errorf("deltas (-want +got):\n%s", diff)
		}
		if errs := h.reported(); len(errs) != 1 {
			t.Errorf("Errors delivered %v, want the 503", errs)
		}
	})
}

// A sharded reflector lists with List, item-by-item lister or not: its
// filter needs the page's ShardInfo before the items.
func TestShardedListsWithList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var items *itemSource
		h := newHarnessOf(t, opts{NoWatchList: true, Shard: shardOf("s", "a")}, func(s *scriptSource) source.Source[*corev1.Pod] {
			items = &itemSource{scriptSource: s}
			return items
		})
		h.src.lists, h.src.watches = []step{page("10", "", pod("a", "1"))}, []step{hangs().final()}
		h.run()
		if items.lists != 0 {
			t.Errorf("ListItems called %d times, want List", items.lists)
		}
	})
}

// undecodableItem is a list item that did not decode, named name.
func undecodableItem(name, rv string) *source.UndecodableError {
	return &source.UndecodableError{Name: name, ResourceVersion: rv, Err: errTransform}
}

package typed

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/handler"
)

func lpod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

// render names what a listener has queued: "+a" initial add, "a" live add,
// "~a" update, "-a" delete, "synced".
func render(l *listener[*corev1.Pod]) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, n := range l.buf {
		switch n.kind {
		case notifyAdd:
			if n.initial {
				out = append(out, "+"+n.obj.Name)
			} else {
				out = append(out, n.obj.Name)
			}
		case notifyUpdate:
			out = append(out, "~"+n.obj.Name)
		case notifyDelete:
			out = append(out, "-"+n.key().Name)
		case notifySynced:
			out = append(out, "synced")
		}
	}
	return strings.Join(out, " ")
}

func adds(initial bool, names ...string) []notification[*corev1.Pod] {
	var out []notification[*corev1.Pod]
	for _, n := range names {
		out = append(out, notification[*corev1.Pod]{kind: notifyAdd, initial: initial, obj: lpod(n)})
	}
	return out
}

// The rules that give a handler added while the writer runs every change
// exactly once: a batch whose revision the snapshot holds is dropped, a
// later one kept, and the sync marker follows the first list wherever it
// ended up (in the snapshot or after it), exactly once. Every interleaving
// of the writer (apply at revision r, then push) and AddHandler (register,
// snapshot at revision s, start) comes down to one of these cases.
func TestListenerStartAndPush(t *testing.T) {
	type push struct {
		ns    []notification[*corev1.Pod]
		rev   uint64
		first bool
	}
	first := push{adds(true, "a", "b"), 3, true}
	live := push{adds(false, "c"), 4, false}
	cases := []struct {
		name            string
		early           []push // pushed before start
		snap            []string
		snapRev, listed uint64
		late            []push // pushed after start
		want            string
	}{
		{name: "before any list: the first list arrives later", snap: nil, late: []push{first, live}, want: "+a +b synced c"},
		{name: "first list pushed before the snapshot that holds it", early: []push{first}, snap: []string{"a", "b"}, snapRev: 3, listed: 3, late: []push{live}, want: "+a +b synced c"},
		{name: "first list pushed after the snapshot that holds it", snap: []string{"a", "b"}, snapRev: 3, late: []push{first, live}, want: "+a +b synced c"},
		{name: "first list known from listedRev only (registered after the push)", snap: []string{"a", "b"}, snapRev: 3, listed: 3, late: []push{live}, want: "+a +b synced c"},
		{name: "snapshot before the first list, list pushed early", early: []push{first}, snap: nil, snapRev: 0, late: []push{live}, want: "+a +b synced c"},
		{name: "snapshot holds a later batch too", early: []push{first, live}, snap: []string{"a", "b", "c"}, snapRev: 4, listed: 3, want: "+a +b +c synced"},
		{name: "a later batch after a snapshot taken between two pushes", early: []push{first}, snap: []string{"a", "b"}, snapRev: 3, listed: 3, late: []push{live}, want: "+a +b synced c"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newListener[*corev1.Pod](handler.Funcs[*corev1.Pod]{}, "test", func(error) {}, HandlerOptions{})
			for _, p := range tc.early {
				l.push(nil, p.ns, p.rev, p.first)
			}
			var objs []*corev1.Pod
			for _, n := range tc.snap {
				objs = append(objs, lpod(n))
			}
			l.start(objs, tc.snapRev, tc.listed)
			for _, p := range tc.late {
				l.push(nil, p.ns, p.rev, p.first)
			}
			if got := render(l); got != tc.want {
				t.Errorf("queued %q, want %q", got, tc.want)
			}
			if got := strings.Count(render(l), "synced"); got != 1 {
				t.Errorf("%d sync markers", got)
			}
		})
	}
}

// The listener runs the handler in order and syncs at the marker; a
// removed listener calls nothing more.
func TestListenerRun(t *testing.T) {
	var got []string
	sawB := make(chan struct{})
	h := handler.Funcs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, initial bool) {
		got = append(got, fmt.Sprintf("%s/%v", p.Name, initial))
		if p.Name == "b" {
			close(sawB)
		}
	}}
	l := newListener[*corev1.Pod](h, "test", func(error) {}, HandlerOptions{})
	l.start([]*corev1.Pod{lpod("a")}, 1, 1)
	l.push(nil, adds(false, "b"), 2, false)
	done := make(chan struct{})
	go func() { l.run(); close(done) }()
	<-l.synced
	<-sawB
	l.shutdown()
	<-done
	if want := []string{"a/true", "b/false"}; !slices.Equal(got, want) {
		t.Errorf("handler calls %v, want %v", got, want)
	}
}

// TestBacklogArrays: a handler's backlog grows by doubling; a large array
// is kept while the handler is behind (many notifications pending) and
// let go once it caught up; small arrays are always kept.
func TestBacklogArrays(t *testing.T) {
	s := make([]int, 0, 8)
	for range 5 {
		s = append(grow(s, 8), make([]int, 8)...)
	}
	if cap(s) != 64 { // 8 -> 16 -> 32 -> 64
		t.Errorf("grew to capacity %d, want 64", cap(s))
	}
	big := make([]*corev1.Pod, keepCap, 4*keepCap)
	big[0] = lpod("a")
	if got := reuse(big, keepCap+1); cap(got) != 4*keepCap || len(got) != 0 || big[0] != nil {
		t.Errorf("behind: cap %d len %d, first %v; want the array kept, empty and cleared", cap(got), len(got), big[0])
	}
	if got := reuse(big, 10); got != nil {
		t.Errorf("caught up: the large array was kept (cap %d)", cap(got))
	}
	if got := reuse(make([]int, 1, keepCap), 0); cap(got) != keepCap {
		t.Errorf("a small array was dropped")
	}
}

package typed

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
)

// TestCoalesceMerges: every pair of notifications of one key folds as
// CoalesceByKey documents, and the counters say what happened.
func TestCoalesceMerges(t *testing.T) {
	p := func(rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: rv}}
	}
	add := func(rv string, initial bool) notification[*corev1.Pod] {
		return notification[*corev1.Pod]{kind: notifyAdd, initial: initial, obj: p(rv)}
	}
	upd := func(old, cur string) notification[*corev1.Pod] {
		return notification[*corev1.Pod]{kind: notifyUpdate, old: p(old), obj: p(cur)}
	}
	del := func(rv string, fsu bool) notification[*corev1.Pod] {
		return notification[*corev1.Pod]{kind: notifyDelete, fsu: fsu, obj: p(rv)}
	}
	// Objects with a UID: the rv is "<uid>/<rv>".
	pu := func(uid, rv string) *corev1.Pod {
		o := p(uid + "/" + rv)
		o.UID = types.UID(uid)
		return o
	}
	addU := func(uid, rv string) notification[*corev1.Pod] {
		return notification[*corev1.Pod]{kind: notifyAdd, obj: pu(uid, rv)}
	}
	updU := func(uid, old, cur string) notification[*corev1.Pod] {
		return notification[*corev1.Pod]{kind: notifyUpdate, old: pu(uid, old), obj: pu(uid, cur)}
	}
	// delU: a Delete of uid at rv, of the cached object at had.
	delU := func(uid, rv, had string) notification[*corev1.Pod] {
		return notification[*corev1.Pod]{kind: notifyDelete, obj: pu(uid, rv), old: pu(uid, had)}
	}
	for _, tc := range []struct {
		name   string
		in     []notification[*corev1.Pod]
		want   string // the pending notifications, rendered
		merged int64
	}{
		{"add, update", []notification[*corev1.Pod]{add("1", false), upd("1", "2")}, "add 2", 1},
		{"initial add, updates", []notification[*corev1.Pod]{add("1", true), upd("1", "2"), upd("2", "3")}, "add(initial) 3", 2},
		{"updates", []notification[*corev1.Pod]{upd("1", "2"), upd("2", "3"), upd("3", "4")}, "update 1->4", 2},
		{"update, delete", []notification[*corev1.Pod]{upd("1", "2"), del("3", false)}, "delete 3", 1},
		{"update, inferred delete", []notification[*corev1.Pod]{upd("1", "2"), del("2", true)}, "delete(fsu) 2", 1},
		{"add, delete", []notification[*corev1.Pod]{add("1", false), del("2", false)}, "", 2},
		{"add, update, delete", []notification[*corev1.Pod]{add("1", false), upd("1", "2"), del("3", false)}, "", 3},
		{"delete, add", []notification[*corev1.Pod]{del("1", false), add("2", false)}, "update 1->2", 1},
		{"add, delete, add", []notification[*corev1.Pod]{add("1", false), del("2", false), add("3", false)}, "add 3", 2},
		{"update, delete, add", []notification[*corev1.Pod]{upd("1", "2"), del("3", false), add("4", false)}, "update 1->4", 2},
		// The same UID back: an Update from what the handler holds (the
		// cached object, not the Delete's), of one UID.
		{"delete, add of one UID", []notification[*corev1.Pod]{delU("u1", "2", "1"), addU("u1", "3")}, "update u1/1->u1/3", 1},
		{"update, delete, add of one UID", []notification[*corev1.Pod]{updU("u1", "1", "2"), delU("u1", "3", "2"), addU("u1", "4")}, "update u1/1->u1/4", 2},
		// A new UID: a Delete then an Add, never an Update between two UIDs.
		{"delete, add of a new UID", []notification[*corev1.Pod]{delU("u1", "2", "1"), addU("u2", "3")}, "delete u1/2; add u2/3", 0},
		{"update, delete, add of a new UID", []notification[*corev1.Pod]{updU("u1", "1", "2"), delU("u1", "3", "2"), addU("u2", "4")}, "delete u1/3; add u2/4", 1},
		{"delete, add of a new UID, updates", []notification[*corev1.Pod]{delU("u1", "2", "1"), addU("u2", "3"), updU("u2", "3", "4"), updU("u2", "4", "5")}, "delete u1/2; add u2/5", 2},
		{"delete, add of a new UID, delete", []notification[*corev1.Pod]{delU("u1", "2", "1"), addU("u2", "3"), delU("u2", "4", "3")}, "delete u1/2", 2},
		{"delete, add, delete, add of new UIDs", []notification[*corev1.Pod]{delU("u1", "2", "1"), addU("u2", "3"), delU("u2", "4", "3"), addU("u3", "5")}, "delete u1/2; add u3/5", 2},
		{"add, delete, add of a new UID", []notification[*corev1.Pod]{addU("u1", "1"), delU("u1", "2", "1"), addU("u2", "3")}, "add u2/3", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newListener[*corev1.Pod](handler.Funcs[*corev1.Pod]{}, "test", func(error) {}, HandlerOptions{Buffer: CoalesceByKey})
			l.ready = true
			l.push(nil, tc.in, 0, false)
			var got string
			for _, n := range l.buf {
				if n.kind == 0 {
					continue
				}
				if got != "" {
					got += "; "
				}
				got += renderNote(n)
			}
			if got != tc.want {
				t.Errorf("pending %q, want %q", got, tc.want)
			}
			if m := l.merged.Load(); m != tc.merged {
				t.Errorf("Merged = %d, want %d", m, tc.merged)
			}
			// One pending call per rendered notification.
			wantDepth := int64(0)
			if tc.want != "" {
				wantDepth = int64(strings.Count(tc.want, ";") + 1)
			}
			if d := l.depth.Load(); d != wantDepth {
				t.Errorf("depth = %d, want %d", d, wantDepth)
			}
		})
	}
}

func renderNote(n notification[*corev1.Pod]) string {
	switch n.kind {
	case notifyAdd:
		if n.initial {
			return "add(initial) " + n.obj.ResourceVersion
		}
		return "add " + n.obj.ResourceVersion
	case notifyUpdate:
		return fmt.Sprintf("update %s->%s", n.old.ResourceVersion, n.obj.ResourceVersion)
	case notifyDelete:
		if n.fsu {
			return "delete(fsu) " + n.obj.ResourceVersion
		}
		return "delete " + n.obj.ResourceVersion
	case notifyReplace:
		return "delete " + n.old.ResourceVersion + "; add " + n.obj.ResourceVersion
	}
	return "?"
}

// TestCoalesceCompacts: churn that creates and deletes keys while the
// handler lags leaves no cancelled entries piling up in the buffer.
func TestCoalesceCompacts(t *testing.T) {
	l := newListener[*corev1.Pod](handler.Funcs[*corev1.Pod]{}, "test", func(error) {}, HandlerOptions{Buffer: CoalesceByKey})
	l.ready = true
	for i := range 10000 {
		k := cache.Key{Namespace: "ns", Name: fmt.Sprint("p", i)}
		o := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}
		l.push(nil, []notification[*corev1.Pod]{
			{kind: notifyAdd, obj: o},
			{kind: notifyDelete, obj: o},
		}, 0, false)
	}
	if len(l.buf) > 200 {
		t.Errorf("buffer holds %d entries after 10000 cancelled pairs, want compaction", len(l.buf))
	}
	if d := l.depth.Load(); d != 0 {
		t.Errorf("depth = %d, want 0", d)
	}
}

// TestBlockedPushEnds: a push waiting for room under Block returns when
// the writer's run ends or the listener stops, so neither Run nor
// RemoveHandler waits for a stalled handler's buffer.
func TestBlockedPushEnds(t *testing.T) {
	o := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	n := []notification[*corev1.Pod]{{kind: notifyAdd, obj: o}}
	for _, how := range []string{"run ends", "listener stops"} {
		t.Run(how, func(t *testing.T) {
			l := newListener[*corev1.Pod](handler.Funcs[*corev1.Pod]{}, "test", func(error) {}, HandlerOptions{Buffer: Block, Size: 1})
			l.ready = true
			l.push(nil, n, 0, false) // the buffer is full: nobody runs l
			done := make(chan struct{})
			returned := make(chan struct{})
			go func() { l.push(done, n, 0, false); close(returned) }()
			select {
			case <-returned:
				t.Fatal("push into a full Block buffer returned at once")
			case <-time.After(50 * time.Millisecond): // not a timing assertion: the push must still wait
			}
			if how == "run ends" {
				close(done)
			} else {
				l.shutdown()
			}
			select {
			case <-returned:
			case <-time.After(time.Minute): // a deadlock guard
				t.Fatal("push still waits")
			}
			if got := len(l.buf); got != 1 {
				t.Errorf("%d pending after the given-up push, want 1", got)
			}
		})
	}
}

package source_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// next reads one event, failing the test after a few seconds.
func next(t *testing.T, w podWatcher) source.Event[*corev1.Pod] {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	ev, err := w.Next(ctx)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return ev
}

func TestFromClientClientset(t *testing.T) {
	ctx := t.Context()
	cs := fake.NewClientset(pod("ns", "a", nil), pod("ns", "b", nil))
	src := source.FromClient[*corev1.Pod](cs.CoreV1().Pods(metav1.NamespaceAll))
	l, err := src.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, p := range l.Items {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" {
		t.Errorf("list (-want +got)\n%s", diff)
	}
	w, err := src.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cs.CoreV1().Pods("ns").Create(ctx, pod("ns", "c", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The clientset's tracker starts a watch without a resourceVersion with
	// the current objects, as a server does, then sends the new pod.
	got := []string{}
	for range 3 {
		ev := next(t, w)
		got = append(got, string(ev.Type)+" "+ev.Object.Name)
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"ADDED a", "ADDED b", "ADDED c"}, got); diff != "" {
		t.Errorf("events (-want +got)\n%s", diff)
	}
}

func TestAs(t *testing.T) {
	var nilPod *corev1.Pod
	tests := []struct {
		name    string
		obj     runtime.Object
		wantErr error
		wantMsg []string
	}{
		{name: "pod", obj: pod("ns", "a", nil)},
		{name: "service", obj: &corev1.Service{}, wantErr: source.ErrWrongType, wantMsg: []string{"*v1.Pod", "*v1.Service"}},
		{name: "nil", obj: nil, wantErr: cache.ErrNilObject, wantMsg: []string{"*v1.Pod", "nil"}},
		{name: "typed nil", obj: nilPod, wantErr: cache.ErrNilObject, wantMsg: []string{"*v1.Pod", "nil *v1.Pod"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := source.As[*corev1.Pod](tt.obj)
			if tt.wantErr == nil {
				if err != nil || got != tt.obj {
					t.Fatalf("As = %v, %v", got, err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || got != nil {
				t.Fatalf("As = %v, %v; want %v", got, err, tt.wantErr)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not name %q", err, m)
				}
			}
		})
	}
}

// TestFromListerWatcherEvents feeds raw watch events through the adapter.
func TestFromListerWatcherEvents(t *testing.T) {
	gone := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 1 (2)"}
	tests := []struct {
		name  string
		in    watch.Event
		check func(t *testing.T, ev source.Event[*corev1.Pod])
	}{
		{name: "pod", in: watch.Event{Type: watch.Modified, Object: pod("ns", "a", nil)}, check: func(t *testing.T, ev source.Event[*corev1.Pod]) {
			if ev.Type != watch.Modified || ev.Object.Name != "a" || ev.Err != nil {
				t.Errorf("event = %+v", ev)
			}
		}},
		{name: "wrong type", in: watch.Event{Type: watch.Added, Object: &corev1.Service{}}, check: func(t *testing.T, ev source.Event[*corev1.Pod]) {
			wantWatchError(t, ev, source.ErrWrongType)
			for _, m := range []string{"*v1.Pod", "*v1.Service"} {
				if !strings.Contains(ev.Err.Error(), m) {
					t.Errorf("error %q does not name %s", ev.Err, m)
				}
			}
		}},
		{name: "gone status", in: watch.Event{Type: watch.Error, Object: gone}, check: func(t *testing.T, ev source.Event[*corev1.Pod]) {
			wantWatchError(t, ev, nil)
			if !apierrors.IsGone(ev.Err) && !apierrors.IsResourceExpired(ev.Err) {
				t.Errorf("error %v is not 410", ev.Err)
			}
		}},
		{name: "error without status", in: watch.Event{Type: watch.Error, Object: pod("ns", "a", nil)}, check: func(t *testing.T, ev source.Event[*corev1.Pod]) {
			wantWatchError(t, ev, source.ErrMalformed)
		}},
		{name: "error without object", in: watch.Event{Type: watch.Error}, check: func(t *testing.T, ev source.Event[*corev1.Pod]) {
			wantWatchError(t, ev, source.ErrMalformed)
		}},
		{name: "unknown type", in: watch.Event{Type: "WEIRD", Object: pod("ns", "a", nil)}, check: func(t *testing.T, ev source.Event[*corev1.Pod]) {
			wantWatchError(t, ev, source.ErrMalformed)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fw := watch.NewFake()
			lw := &clientcache.ListWatch{
				ListFunc: func(metav1.ListOptions) (runtime.Object, error) { return &corev1.PodList{}, nil },
				WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
					return fw, nil
				},
			}
			w, err := source.FromListerWatcher[*corev1.Pod](lw).Watch(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			go fw.Action(tt.in.Type, tt.in.Object)
			tt.check(t, next(t, w))
		})
	}
}

// wantWatchError checks that ev is an ERROR event in phase watch whose
// error wraps target (if not nil).
func wantWatchError(t *testing.T, ev source.Event[*corev1.Pod], target error) {
	t.Helper()
	var serr *source.Error
	if ev.Type != watch.Error || ev.Object != nil || !errors.As(ev.Err, &serr) || serr.Phase != source.PhaseWatch {
		t.Fatalf("event = %+v, want an error event in phase watch", ev)
	}
	if target != nil && !errors.Is(ev.Err, target) {
		t.Errorf("error %v does not wrap %v", ev.Err, target)
	}
}

func TestFromListerWatcherList(t *testing.T) {
	lw := &clientcache.ListWatch{
		ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "next"}, Items: []corev1.Pod{*pod("ns", "a", nil)}}, nil
		},
	}
	l, err := source.FromListerWatcher[*corev1.Pod](lw).List(t.Context(), metav1.ListOptions{})
	if err != nil || l.ResourceVersion != "7" || l.Continue != "next" || len(l.Items) != 1 || l.Items[0].Name != "a" {
		t.Fatalf("List = %+v, %v", l, err)
	}
	wrong := &clientcache.ListWatch{
		ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
			return &corev1.ServiceList{Items: []corev1.Service{{}}}, nil
		},
	}
	_, err = source.FromListerWatcher[*corev1.Pod](wrong).List(t.Context(), metav1.ListOptions{})
	var serr *source.Error
	if !errors.Is(err, source.ErrWrongType) || !errors.As(err, &serr) || serr.Phase != source.PhaseList {
		t.Errorf("list of services: %v, want ErrWrongType in phase list", err)
	}
}

func TestTypedNilsDoNotPanic(t *testing.T) {
	var nilList *corev1.PodList
	src := source.FromListerWatcher[*corev1.Pod](&clientcache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return nilList, nil },
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			fw := watch.NewFake()
			go func() {
				var nilStatus *metav1.Status
				fw.Error(nilStatus)
			}()
			return fw, nil
		},
	})
	if _, err := src.List(context.Background(), metav1.ListOptions{}); !errors.Is(err, cache.ErrNilObject) {
		t.Errorf("List of a typed nil list = %v, want ErrNilObject", err)
	}
	w, err := src.Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev, err := w.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != watch.Error || !errors.Is(ev.Err, source.ErrMalformed) {
		t.Errorf("typed nil Status event = %+v, want a malformed error event", ev)
	}
	w.Stop()
	if _, err := w.Next(context.Background()); !errors.Is(err, source.ErrWatchClosed) {
		t.Errorf("Next after Stop = %v, want ErrWatchClosed", err)
	}
}

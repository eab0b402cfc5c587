package source_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/source"
)

func TestFromClientClientset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		cs := fake.NewClientset(pod("ns", "a", nil), pod("ns", "b", nil))
		src, err := source.FromClient[*corev1.Pod](cs.CoreV1().Pods(metav1.NamespaceAll))
		if err != nil {
			t.Fatal(err)
		}
		if err := source.Check(src); err != nil {
			t.Fatal(err)
		}
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
		// The clientset's tracker starts a watch without a resourceVersion
		// with the current objects, as a server does, then sends the new pod.
		got := []string{}
		for range 3 {
			ev := next(t, w)
			got = append(got, string(ev.Type)+" "+ev.Object.Name)
		}
		slices.Sort(got)
		if diff := cmp.Diff([]string{"ADDED a", "ADDED b", "ADDED c"}, got); diff != "" {
			t.Errorf("events (-want +got)\n%s", diff)
		}
	})
}

func TestConstructorErrors(t *testing.T) {
	cs := fake.NewClientset()
	var nilClient *podClient
	var nilLW *clientcache.ListWatch
	tests := []struct {
		name    string
		make    func() (source.Source[*corev1.Pod], error)
		wantErr error
		wantMsg []string
	}{
		{name: "FromClient nil", make: func() (source.Source[*corev1.Pod], error) {
			return source.FromClient[*corev1.Pod, *corev1.PodList](nil)
		}, wantErr: source.ErrNilSource, wantMsg: []string{"FromClient"}},
		{name: "FromClient typed nil", make: func() (source.Source[*corev1.Pod], error) {
			return source.FromClient[*corev1.Pod](nilClient)
		}, wantErr: source.ErrNilSource, wantMsg: []string{"FromClient"}},
		{name: "FromClient services for pods", make: func() (source.Source[*corev1.Pod], error) {
			return source.FromClient[*corev1.Pod](cs.CoreV1().Services("ns"))
		}, wantErr: source.ErrWrongType, wantMsg: []string{"*v1.ServiceList", "v1.Service", "*v1.Pod"}},
		{name: "FromListerWatcher nil", make: func() (source.Source[*corev1.Pod], error) {
			return source.FromListerWatcher[*corev1.Pod](nil)
		}, wantErr: source.ErrNilSource, wantMsg: []string{"FromListerWatcher"}},
		{name: "FromListerWatcher typed nil", make: func() (source.Source[*corev1.Pod], error) {
			return source.FromListerWatcher[*corev1.Pod](nilLW)
		}, wantErr: source.ErrNilSource, wantMsg: []string{"FromListerWatcher"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := tt.make()
			if !errors.Is(err, tt.wantErr) || src != nil {
				t.Fatalf("got %v, %v; want no source and an error wrapping %v", src, err, tt.wantErr)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not name %q", err, m)
				}
			}
		})
	}
	// The list type check accepts the list types of every kind of client.
	if _, err := source.FromClient[*corev1.Pod](cs.CoreV1().Pods("")); err != nil {
		t.Errorf("pods client: %v", err)
	}
	if _, err := source.FromClient[*corev1.Service](cs.CoreV1().Services("")); err != nil {
		t.Errorf("services client: %v", err)
	}
}

// plainSource is a Source that says nothing about its resource.
type plainSource[T interface {
	comparable
	metav1.Object
	runtime.Object
}] struct{}

func (plainSource[T]) Info() source.Info { return source.Info{} }

func (plainSource[T]) List(context.Context, metav1.ListOptions) (source.List[T], error) {
	return source.List[T]{}, nil
}

func (plainSource[T]) Watch(context.Context, metav1.ListOptions) (source.Watcher[T], error) {
	return nil, errors.New("no watch")
}

func TestCheck(t *testing.T) {
	var typedNil *plainSource[*corev1.Pod]
	for name, src := range map[string]source.Source[*corev1.Pod]{"nil": nil, "typed nil": typedNil} {
		err := source.Check(src)
		if !errors.Is(err, source.ErrNilSource) || !strings.Contains(err.Error(), "Source[*v1.Pod]") {
			t.Errorf("Check(%s) = %v, want ErrNilSource naming Source[*v1.Pod]", name, err)
		}
	}
	if err := source.Check[*corev1.Pod](plainSource[*corev1.Pod]{}); err != nil {
		t.Errorf("Check(a source) = %v", err)
	}
	if err := source.Check[*corev1.Pod](&plainSource[*corev1.Pod]{}); err != nil {
		t.Errorf("Check(a pointer to a source) = %v", err)
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
		{name: "nil", obj: nil, wantErr: source.ErrNilObject, wantMsg: []string{"*v1.Pod", "nil"}},
		{name: "typed nil", obj: nilPod, wantErr: source.ErrNilObject, wantMsg: []string{"*v1.Pod", "nil *v1.Pod"}},
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

// TestFromListerWatcherEvents feeds raw watch events through the adapter:
// events come out typed, everything else is the error Next returns.
func TestFromListerWatcherEvents(t *testing.T) {
	gone := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 1 (2)"}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no")).Status()
	var nilStatus *metav1.Status
	tests := []struct {
		name    string
		in      watch.Event
		want    string           // the event, as "TYPE name", if it is one
		wantErr error            // what the error wraps, if not only an API status
		check   func(error) bool // the API status, if any
		wantMsg []string
	}{
		{name: "pod", in: watch.Event{Type: watch.Modified, Object: pod("ns", "a", nil)}, want: "MODIFIED a"},
		{name: "bookmark", in: watch.Event{Type: watch.Bookmark, Object: pod("", "", nil)}, want: "BOOKMARK "},
		{name: "wrong type", in: watch.Event{Type: watch.Added, Object: &corev1.Service{}}, wantErr: source.ErrWrongType, wantMsg: []string{"ADDED", "*v1.Pod", "*v1.Service"}},
		{name: "no object", in: watch.Event{Type: watch.Deleted}, wantErr: source.ErrNilObject},
		{name: "gone status", in: watch.Event{Type: watch.Error, Object: gone}, check: apierrors.IsResourceExpired},
		{name: "forbidden status", in: watch.Event{Type: watch.Error, Object: &forbidden}, check: apierrors.IsForbidden},
		{name: "error with a pod", in: watch.Event{Type: watch.Error, Object: pod("ns", "a", nil)}, wantErr: source.ErrMalformed, wantMsg: []string{"*v1.Pod"}},
		{name: "error without object", in: watch.Event{Type: watch.Error}, wantErr: source.ErrMalformed},
		{name: "error with a nil status", in: watch.Event{Type: watch.Error, Object: nilStatus}, wantErr: source.ErrMalformed},
		{name: "unknown type", in: watch.Event{Type: "WEIRD", Object: pod("ns", "a", nil)}, wantErr: source.ErrMalformed, wantMsg: []string{"WEIRD"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fw := watch.NewFakeWithChanSize(1, false)
				lw := &clientcache.ListWatch{
					ListFunc:  func(metav1.ListOptions) (runtime.Object, error) { return &corev1.PodList{}, nil },
					WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return fw, nil },
				}
				src, err := source.FromListerWatcher[*corev1.Pod](lw)
				if err != nil {
					t.Fatal(err)
				}
				w, err := src.Watch(t.Context(), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				fw.Action(tt.in.Type, tt.in.Object)
				ev, err := nextErr(t, w)
				if tt.want != "" {
					if err != nil {
						t.Fatalf("Next: %v", err)
					}
					if got := string(ev.Type) + " " + ev.Object.Name; got != tt.want {
						t.Errorf("event = %q, want %q", got, tt.want)
					}
					return
				}
				if ev != (podEvent{}) {
					t.Errorf("Next returned an event with its error: %+v", ev)
				}
				wantStreamError(t, err, tt.wantErr)
				if tt.check != nil && !tt.check(err) {
					t.Errorf("error %v is not the event's API status", err)
				}
				for _, m := range tt.wantMsg {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("error %q does not name %s", err, m)
					}
				}
			})
		})
	}
}

func TestFromListerWatcherList(t *testing.T) {
	lw := &clientcache.ListWatch{
		ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
			return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "next"}, Items: []corev1.Pod{*pod("ns", "a", nil)}}, nil
		},
	}
	src, err := source.FromListerWatcher[*corev1.Pod](lw)
	if err != nil {
		t.Fatal(err)
	}
	l, err := src.List(t.Context(), metav1.ListOptions{})
	if err != nil || l.ResourceVersion != "7" || l.Continue != "next" || len(l.Items) != 1 || l.Items[0].Name != "a" {
		t.Fatalf("List = %+v, %v", l, err)
	}
	tests := []struct {
		name    string
		list    func() (runtime.Object, error)
		wantErr func(error) bool
	}{
		{name: "services", list: func() (runtime.Object, error) {
			return &corev1.ServiceList{Items: []corev1.Service{{}}}, nil
		}, wantErr: func(err error) bool { return errors.Is(err, source.ErrWrongType) }},
		{name: "not a list", list: func() (runtime.Object, error) {
			return pod("ns", "a", nil), nil
		}, wantErr: func(err error) bool { return errors.Is(err, source.ErrWrongType) }},
		{name: "nil", list: func() (runtime.Object, error) {
			return nil, nil
		}, wantErr: func(err error) bool { return errors.Is(err, source.ErrNilObject) }},
		{name: "api error", list: func() (runtime.Object, error) {
			return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
		}, wantErr: apierrors.IsForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := source.FromListerWatcher[*corev1.Pod](&clientcache.ListWatch{
				ListFunc: func(metav1.ListOptions) (runtime.Object, error) { return tt.list() },
			})
			if err != nil {
				t.Fatal(err)
			}
			l, err := src.List(t.Context(), metav1.ListOptions{})
			var serr *source.Error
			if !tt.wantErr(err) || !errors.As(err, &serr) || serr.Phase != source.PhaseList || l.Items != nil {
				t.Errorf("List = %+v, %v; want a matching *source.Error in phase list", l, err)
			}
		})
	}
}

func TestFromListerWatcherWatchStart(t *testing.T) {
	var nilWatch *watch.FakeWatcher
	tests := []struct {
		name    string
		watch   func() (watch.Interface, error)
		wantErr func(error) bool
	}{
		{name: "api error", watch: func() (watch.Interface, error) {
			return nil, apierrors.NewTooManyRequests("slow down", 1)
		}, wantErr: apierrors.IsTooManyRequests},
		{name: "nil watch", watch: func() (watch.Interface, error) {
			return nil, nil
		}, wantErr: func(err error) bool { return errors.Is(err, source.ErrNilObject) }},
		{name: "typed nil watch", watch: func() (watch.Interface, error) {
			return nilWatch, nil
		}, wantErr: func(err error) bool { return errors.Is(err, source.ErrNilObject) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := source.FromListerWatcher[*corev1.Pod](&clientcache.ListWatch{
				WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return tt.watch() },
			})
			if err != nil {
				t.Fatal(err)
			}
			w, err := src.Watch(t.Context(), metav1.ListOptions{})
			var serr *source.Error
			if !tt.wantErr(err) || !errors.As(err, &serr) || serr.Phase != source.PhaseWatchStart || w != nil {
				t.Errorf("Watch = %v, %v; want a matching *source.Error in phase watch start", w, err)
			}
		})
	}
}

// TestFromListerWatcherStop checks Stop and the contexts: nothing the
// stream still holds is delivered after Stop, and a cancelled context
// ends only the call.
func TestFromListerWatcherStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fw := watch.NewFakeWithChanSize(3, false)
		var gotCtx context.Context
		src, err := source.FromListerWatcher[*corev1.Pod](&clientcache.ListWatch{
			WatchFuncWithContext: func(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
				gotCtx = ctx
				return fw, nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		type key struct{}
		ctx := context.WithValue(t.Context(), key{}, "caller")
		w, err := src.Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if gotCtx == nil || gotCtx.Value(key{}) != "caller" {
			t.Error("the lister-watcher did not get the caller's context")
		}
		fw.Add(pod("ns", "a", nil))
		fw.Add(pod("ns", "b", nil))
		cancelled, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := w.Next(cancelled); !errors.Is(err, context.Canceled) {
			t.Errorf("Next with a cancelled context = %v, want context.Canceled", err)
		}
		if ev := next(t, w); ev.Object.Name != "a" {
			t.Errorf("Next after a cancelled Next = %+v, want ADDED a", ev)
		}
		// Next blocked on an empty stream returns when its context ends.
		blocked := make(chan error, 1)
		nextCtx, cancelNext := context.WithCancel(t.Context())
		fw2 := watch.NewFakeWithChanSize(0, false)
		src2, _ := source.FromListerWatcher[*corev1.Pod](&clientcache.ListWatch{
			WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return fw2, nil },
		})
		w2, err := src2.Watch(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			_, err := w2.Next(nextCtx)
			blocked <- err
		}()
		synctest.Wait()
		cancelNext()
		if err := <-blocked; !errors.Is(err, context.Canceled) {
			t.Errorf("blocked Next = %v, want context.Canceled", err)
		}
		w2.Stop()

		w.Stop()
		w.Stop() // idempotent
		if !fw.IsStopped() {
			t.Error("Stop did not stop the underlying watch")
		}
		if _, err := w.Next(t.Context()); !errors.Is(err, source.ErrWatchClosed) {
			t.Errorf("Next after Stop with an event pending = %v, want ErrWatchClosed", err)
		}
	})
}

func TestTypedNilsDoNotPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var nilList *corev1.PodList
		src, err := source.FromListerWatcher[*corev1.Pod](&clientcache.ListWatch{
			ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return nilList, nil },
			WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
				fw := watch.NewFakeWithChanSize(1, false)
				var nilStatus *metav1.Status
				fw.Error(nilStatus)
				return fw, nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := src.List(t.Context(), metav1.ListOptions{}); !errors.Is(err, source.ErrNilObject) {
			t.Errorf("List of a typed nil list = %v, want ErrNilObject", err)
		}
		w, err := src.Watch(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		_, err = nextErr(t, w)
		wantStreamError(t, err, source.ErrMalformed)
		w.Stop()
		if _, err := w.Next(t.Context()); !errors.Is(err, source.ErrWatchClosed) {
			t.Errorf("Next after Stop = %v, want ErrWatchClosed", err)
		}
	})
}

package typed_test

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// TestMutationDetector: a handler that changes the cached pod it is handed
// is reported, once, with the pod's key and the path of the changed
// field, by the check when Run returns (ErrorHandler and
// Status().Checks); a handler that only reads is not. The detector is on
// through Options.DetectMutations or the environment variable.
func TestMutationDetector(t *testing.T) {
	target := cache.Key{Namespace: "ns-0", Name: "p-0"}
	cases := []struct {
		name       string
		env        bool
		mutate     func(p *corev1.Pod)
		wantFields []string
	}{
		{name: "label added", mutate: func(p *corev1.Pod) { p.Labels = map[string]string{"team": "x"} },
			wantFields: []string{`ObjectMeta.Labels`}},
		{name: "label added, detector from the environment", env: true, mutate: func(p *corev1.Pod) { p.Labels = map[string]string{"team": "x"} },
			wantFields: []string{`ObjectMeta.Labels`}},
		{name: "container image", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "changed" },
			wantFields: []string{`Spec.Containers[0].Image`}},
		{name: "reads only", mutate: func(p *corev1.Pod) {
			q := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
			_ = q.String()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env {
				t.Setenv(typed.MutationDetectorEnv, "true")
			}
			synctest.Test(t, func(t *testing.T) {
				pods := it.Pods(10)
				for _, p := range pods {
					p.Spec.Containers = []corev1.Container{{Name: "c", Image: "i", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}
				}
				fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, pods...)
				var errs it.ErrSink
				inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle, DetectMutations: !tc.env})
				handled := make(chan struct{})
				if _, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, _ bool) {
					if cache.KeyOf(p) == target {
						tc.mutate(p)
						close(handled)
					}
				}}); err != nil {
					t.Fatal(err)
				}
				stop := startSynced(t, inf)
				<-handled
				stop() // Run's last check: no handler runs any more
				var got []*typed.MutationError
				for _, err := range errs.All() {
					var me *typed.MutationError
					if errors.As(err, &me) {
						got = append(got, me)
					}
				}
				if tc.wantFields == nil {
					if len(got) > 0 {
						t.Fatalf("reported %v for a handler that only reads", got)
					}
					return
				}
				if len(got) != 1 {
					t.Fatalf("mutation reports = %v, want one", got)
				}
				me := got[0]
				if me.Key != target || !errors.Is(me, typed.ErrMutated) || me.Diff == "" {
					t.Errorf("report %+v: want key %v, ErrMutated and a diff", me, target)
				}
				if !slices.ContainsFunc(me.Fields, func(f string) bool { return f == tc.wantFields[0] }) {
					t.Errorf("fields %q, want %q among them", me.Fields, tc.wantFields)
				}
				c := inf.Status().Checks
				if c.Mutations != 1 || len(c.MutationErrors) != 1 {
					t.Errorf("Status().Checks %+v, want the one mutation", c)
				} else if diff := cmp.Diff(me.Fields, c.MutationErrors[0].Fields); diff != "" {
					t.Errorf("Status's mutation (-reported +status):\n%s", diff)
				}
			})
		})
	}
}

// The periodic check finds a mutation while the informer runs, and reports
// each one once.
func TestMutationDetectorPeriodic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(5)...)
		var errs it.ErrSink
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{ErrorHandler: errs.Handle, DetectMutations: true})
		var once bool
		if _, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{UpdateFunc: func(_, cur *corev1.Pod) {
			if !once {
				once = true
				cur.Annotations = map[string]string{"touched": "yes"}
			}
		}}); err != nil {
			t.Fatal(err)
		}
		startSynced(t, inf)
		if _, err := fake.Update(it.Pod("ns-1", "p-1", map[string]string{"v": "2"})); err != nil {
			t.Fatal(err)
		}
		it.Eventually(t, "mutation reported", func() bool { return errs.Count(it.Is(typed.ErrMutated)) > 0 })
		time.Sleep(5 * typed.MutationCheckPeriod) // more checks: no second report
		synctest.Wait()
		if n := errs.Count(it.Is(typed.ErrMutated)); n != 1 {
			t.Errorf("%d mutation reports, want 1", n)
		}
		var me *typed.MutationError
		for _, err := range errs.All() {
			if errors.As(err, &me) {
				break
			}
		}
		if me == nil || me.Key != (cache.Key{Namespace: "ns-1", Name: "p-1"}) || !slices.Contains(me.Fields, "ObjectMeta.Annotations") {
			t.Errorf("report %+v, want ns-1/p-1 and ObjectMeta.Annotations", me)
		}
	})
}

package factory_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/typedinformer/informer/factory"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
	"github.com/typedinformer/informer/metrics"
	"github.com/typedinformer/informer/typed"
)

// names records the informers metrics.Metrics registers.
type names struct {
	mu  sync.Mutex
	got []string
}

func (n *names) Register(id metrics.Informer, _ metrics.State) metrics.Recorder {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, id.Name)
	return nopRecorder{}
}

func (n *names) registered() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Sorted(slices.Values(n.got))
}

type nopRecorder struct{}

func (nopRecorder) ObserveBatch(metrics.Batch) {}
func (nopRecorder) ObserveError(string)        {}
func (nopRecorder) Unregister()                {}

// TestFactoryWideOptions: a factory's Metrics get every informer, of every
// type; its Transform runs on every object of every type, before a type's
// own; a type's Defaults (a label index, a Transform, a MemoryBudget) are
// those of all its informers and of no other type's; an informer whose
// factory Transform fails for an object quarantines that object alone.
func TestFactoryWideOptions(t *testing.T) {
	leakcheck.Check(t)
	cs := fake.NewClientset(
		it.Pod("shop", "web-0", map[string]string{"app": "web"}), it.Pod("shop", "db-0", map[string]string{"app": "db"}),
		it.Pod("lab", "bad", nil),
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{"big": "x"}}},
	)
	var m names
	var order []string
	var mu sync.Mutex
	f, err := factory.NewForClientsets([]any{cs}, factory.Options{
		Metrics: &m,
		Transform: func(o factory.Object) (factory.Object, error) {
			if o.GetName() == "bad" {
				return nil, errors.New("refused by the factory")
			}
			o.SetAnnotations(nil)
			mu.Lock()
			order = append(order, "factory:"+o.GetName())
			mu.Unlock()
			return o, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = factory.Defaults(f, typed.Options[*corev1.Pod]{
		LabelIndexes: []string{"app"},
		MemoryBudget: &typed.MemoryBudget{Bytes: 1 << 30},
		Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			mu.Lock()
			order = append(order, "pod:"+p.Name)
			mu.Unlock()
			p.Spec.NodeName = "from-defaults"
			return p, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	shop, _ := informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "shop"})
	lab, _ := informerFor[*corev1.Pod](t, f, factory.Scope{Namespace: "lab"})
	deps, _ := informerFor[*appsv1.Deployment](t, f, factory.Scope{})
	start(t, f)
	waitSynced(t, f)

	if got, want := m.registered(), []string{deps.Name(), lab.Name(), shop.Name()}; !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("factory Metrics registered %q, want each of the 3 informers %q", got, want)
	}
	web, err := shop.Lister().Namespace("shop").Get("web-0")
	if err != nil {
		t.Fatal(err)
	}
	if web.Spec.NodeName != "from-defaults" {
		t.Errorf("the pods' Defaults Transform did not run: nodeName %q", web.Spec.NodeName)
	}
	sel, _ := labels.Parse("app=web")
	if got, err := shop.Lister().List(sel); err != nil || len(got) != 1 {
		t.Errorf("List(app=web) = %d, %v; want 1", len(got), err)
	}
	if st := shop.Status(); st.Size.Budget != 1<<30 {
		t.Errorf("Status().Size.Budget = %d, want the Defaults' %d", st.Size.Budget, 1<<30)
	}
	if st := deps.Status(); st.Size.Budget != 0 {
		t.Errorf("a Deployment informer got the pods' budget: %d", st.Size.Budget)
	}
	d, err := deps.Lister().Namespace("shop").Get("web")
	if err != nil {
		t.Fatal(err)
	}
	if d.Annotations != nil {
		t.Errorf("the factory Transform did not run on a Deployment: annotations %v", d.Annotations)
	}
	mu.Lock()
	if i, j := slices.Index(order, "factory:web-0"), slices.Index(order, "pod:web-0"); i < 0 || j < i {
		t.Errorf("transforms ran as %q: want the factory's before the type's", order)
	}
	mu.Unlock()
	if lab.Store().Len() != 0 || len(lab.Status().Quarantined) != 1 {
		t.Errorf("lab: %d cached, %d quarantined; want the refused pod quarantined", lab.Store().Len(), len(lab.Status().Quarantined))
	} else if q := lab.Status().Quarantined[0]; !strings.Contains(q.Reason.Error(), "refused by the factory") {
		t.Errorf("quarantine reason %v, want the factory Transform's error", q.Reason)
	}
}

// TestFactoryTransformWrongType: a factory Transform that returns another
// type's object has the object refused, with both types named.
func TestFactoryTransformWrongType(t *testing.T) {
	leakcheck.Check(t)
	cs := fake.NewClientset(it.Pod("shop", "web-0", nil))
	f, err := factory.NewForClientsets([]any{cs}, factory.Options{
		Transform: func(factory.Object) (factory.Object, error) { return &corev1.ConfigMap{}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	pods, _ := informerFor[*corev1.Pod](t, f, factory.Scope{})
	start(t, f)
	waitSynced(t, f)
	q := pods.Status().Quarantined
	if len(q) != 1 || !strings.Contains(q[0].Reason.Error(), "*v1.ConfigMap for a *v1.Pod") {
		t.Fatalf("quarantined %v, want web-0 refused naming both types", q)
	}
}

// TestDefaultsRefused: options of a scope, a second Defaults and Defaults
// after an informer of the type are refused; a Defaults an informer
// refuses fails InformerFor.
func TestDefaultsRefused(t *testing.T) {
	leakcheck.Check(t)
	f, err := factory.NewForClientsets([]any{fake.NewClientset()}, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]typed.Options[*corev1.Pod]{
		"Name":          {Name: "pods"},
		"LabelSelector": {LabelSelector: "app=web"},
		"FieldSelector": {FieldSelector: "spec.nodeName=n1"},
		"Tweak":         {TweakListOptions: func(*metav1.ListOptions) {}},
	} {
		if err := factory.Defaults(f, o); !errors.Is(err, factory.ErrBadDefaults) || !strings.Contains(err.Error(), name) {
			t.Errorf("Defaults with %s: %v, want ErrBadDefaults naming it", name, err)
		}
	}
	if err := factory.Defaults(f, typed.Options[*corev1.Pod]{PageSize: -1}); err != nil {
		t.Fatal(err)
	}
	if err := factory.Defaults(f, typed.Options[*corev1.Pod]{}); !errors.Is(err, factory.ErrRegistered) {
		t.Errorf("second Defaults: %v, want ErrRegistered", err)
	}
	if _, _, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{}); err == nil || !strings.Contains(err.Error(), "PageSize") {
		t.Errorf("InformerFor with PageSize -1 in Defaults: %v, want the informer's error", err)
	}
	_, release, err := factory.InformerFor[*corev1.Secret](f, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := factory.Defaults(f, typed.Options[*corev1.Secret]{}); !errors.Is(err, factory.ErrRegistered) {
		t.Errorf("Defaults after an informer: %v, want ErrRegistered", err)
	}
	if err := factory.Defaults[*corev1.Pod](nil, typed.Options[*corev1.Pod]{}); err == nil {
		t.Error("Defaults on a nil factory: no error")
	}
}

// TestFollow: a follower gets the informers there are, then each one
// made (before InformerFor returns it) and each one released by its last
// user, in order; after stop, nothing.
func TestFollow(t *testing.T) {
	leakcheck.Check(t)
	cs := fake.NewClientset(it.Pod("shop", "web-0", nil))
	f, err := factory.NewForClientsets([]any{cs}, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, releaseNodes, err := factory.InformerFor[*corev1.Node](f, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	var log []string
	held := map[factory.Informer]bool{}
	stop := f.Follow(func(inf factory.Informer) {
		log = append(log, "+"+inf.Name())
		held[inf] = true
	}, func(inf factory.Informer) {
		log = append(log, "-"+inf.Name())
		if !held[inf] {
			t.Errorf("removed %q, never added (or not equal to its added value)", inf.Name())
		}
		delete(held, inf)
	})
	pods, releasePods, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(log, "+"+pods.Name()) {
		t.Errorf("InformerFor returned %q before its follower knew: %q", pods.Name(), log)
	}
	_, again, _ := factory.InformerFor[*corev1.Pod](f, factory.Scope{Namespace: "shop"})
	start(t, f)
	waitSynced(t, f)
	for inf := range held {
		if inf.Name() == pods.Name() && (inf.Len() != 1 || !inf.HasSynced()) {
			t.Errorf("follower's view of %q: %d objects, synced %v; want 1, true", inf.Name(), inf.Len(), inf.HasSynced())
		}
	}
	releasePods() // one user is left: nothing removed
	again()
	releaseNodes()
	stop()
	_, releaseSecrets, _ := factory.InformerFor[*corev1.Secret](f, factory.Scope{})
	releaseSecrets()
	want := []string{"+nodes", "+" + pods.Name(), "-" + pods.Name(), "-nodes"}
	if !slices.Equal(log, want) {
		t.Errorf("follower saw %q, want %q", log, want)
	}
	if len(held) != 0 {
		t.Errorf("still held after their release: %d", len(held))
	}
}

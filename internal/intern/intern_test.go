package intern_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/internal/intern"
)

// decodedPods decodes n fixture pods from one JSON list, as a source
// does: every string is its own allocation.
func decodedPods(t testing.TB, n int) []*corev1.Pod {
	t.Helper()
	data, err := bench.JSONList("1", bench.Pods(n, bench.PodOptions{ManagedFields: true}))
	if err != nil {
		t.Fatal(err)
	}
	var l corev1.PodList
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &l); err != nil {
		t.Fatal(err)
	}
	out := make([]*corev1.Pod, n)
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out
}

// crd is a custom resource as people write them: embedded metadata,
// nested and recursive structs, pointers, slices and maps of every kind,
// and fields the interner must leave alone.
type crd struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              crdSpec   `json:"spec"`
	Status            *crdState `json:"status,omitempty"`
}

type crdSpec struct {
	Image    string            `json:"image"`
	Mode     *string           `json:"mode,omitempty"`
	Args     []string          `json:"args,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	Rules    []rule            `json:"rules,omitempty"`
	Children []*rule           `json:"children,omitempty"`
	Raw      []byte            `json:"raw,omitempty"`
	Any      any               `json:"any,omitempty"`
	Weights  map[string]int    `json:"weights,omitempty"`
	Limit    resource.Quantity `json:"limit"`
	Fixed    [2]string         `json:"fixed"`
	Count    int               `json:"count"`
	secret   string
}

type rule struct {
	Name string  `json:"name"`
	Next *rule   `json:"next,omitempty"`
	Subs []rule  `json:"subs,omitempty"`
	Note *string `json:"note,omitempty"`
}

type crdState struct {
	Phase      string             `json:"phase"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	Seen       time.Time          `json:"seen"`
}

func (c *crd) DeepCopyObject() {}

// fresh returns a copy of s in its own allocation, as a decoder makes.
func fresh(s string) string { return strings.Clone(s) }

// randomCRD builds a crd from r, every string fresh, drawn from a few
// values so that objects share many.
func randomCRD(r *rand.Rand) *crd {
	pick := func() string { return fresh(fmt.Sprintf("v%d", r.IntN(5))) }
	var mkRule func(depth int) *rule
	mkRule = func(depth int) *rule {
		ru := &rule{Name: pick()}
		if r.IntN(2) == 0 {
			ru.Note = new(pick())
		}
		if depth > 0 && r.IntN(2) == 0 {
			ru.Next = mkRule(depth - 1)
		}
		for range r.IntN(3) {
			if depth > 0 {
				ru.Subs = append(ru.Subs, *mkRule(depth - 1))
			}
		}
		return ru
	}
	c := &crd{
		TypeMeta:   metav1.TypeMeta{Kind: pick(), APIVersion: pick()},
		ObjectMeta: metav1.ObjectMeta{Name: pick(), Namespace: pick(), UID: "u", Labels: map[string]string{pick(): pick()}},
		Spec: crdSpec{Image: pick(), Raw: []byte(pick()), Any: pick(), Weights: map[string]int{pick(): 1},
			Limit: resource.MustParse("1Gi"), Fixed: [2]string{pick(), pick()}, Count: r.IntN(9), secret: pick()},
	}
	if r.IntN(2) == 0 {
		c.Spec.Mode = new(pick())
	}
	for range r.IntN(4) {
		c.Spec.Args = append(c.Spec.Args, pick())
		c.Spec.Rules = append(c.Spec.Rules, *mkRule(3))
		c.Spec.Children = append(c.Spec.Children, mkRule(2), nil)
	}
	if r.IntN(3) > 0 {
		c.Spec.Env = map[string]string{}
		for range r.IntN(4) {
			c.Spec.Env[pick()] = pick()
		}
	}
	if r.IntN(2) == 0 {
		c.Status = &crdState{Phase: pick(), Seen: time.Unix(int64(r.IntN(1000)), 0),
			Conditions: []metav1.Condition{{Type: pick(), Status: metav1.ConditionTrue, Reason: pick(), Message: pick()}}}
	}
	return c
}

func newInterner[T any](t testing.TB, opts intern.Options) *intern.Interner[T] {
	t.Helper()
	in, err := intern.New[T](opts)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestStringsKeepsObjects interns objects of several types and compares
// each with a deep copy made before.
func TestStringsKeepsObjects(t *testing.T) {
	pods := decodedPods(t, 50)
	seed := rand.Uint64()
	pcg := rand.NewPCG(seed, 0)
	r := rand.New(pcg)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fresh("node-1"), Labels: map[string]string{"kubernetes.io/os": fresh("linux")}},
		Spec: corev1.NodeSpec{PodCIDR: fresh("10.0.0.0/24"), PodCIDRs: []string{fresh("10.0.0.0/24")},
			Taints: []corev1.Taint{{Key: fresh("k"), Value: fresh("v"), Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fresh("192.168.1.1")}},
			NodeInfo: corev1.NodeSystemInfo{MachineID: fresh("m"), KubeletVersion: fresh("v1.35.0"), OSImage: fresh("Ubuntu")},
			Images:   []corev1.ContainerImage{{Names: []string{fresh("registry/app:1")}, SizeBytes: 10}}}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fresh("cfg"), Namespace: fresh("ns")},
		Data:       map[string]string{fresh("a"): fresh("1"), fresh("big"): fresh(strings.Repeat("x", 5000))},
		BinaryData: map[string][]byte{"b": []byte("raw")}}
	tests := []struct {
		name string
		run  func(t *testing.T) string // returns cmp.Diff(want, got)
	}{
		{"fixture pods", func(t *testing.T) string {
			in := newInterner[*corev1.Pod](t, intern.Options{})
			for _, p := range pods {
				want := p.DeepCopy()
				if err := in.Strings(p); err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(want, p); d != "" {
					return d
				}
			}
			return ""
		}},
		{"random CRDs", func(t *testing.T) string {
			in := newInterner[*crd](t, intern.Options{})
			for range 200 {
				before := *pcg // the same draws again
				want := randomCRD(rand.New(&before))
				got := randomCRD(r)
				if err := in.Strings(got); err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(want, got, cmp.AllowUnexported(crdSpec{})); d != "" {
					return d
				}
			}
			return ""
		}},
		{"node", func(t *testing.T) string {
			want := node.DeepCopy()
			if err := newInterner[*corev1.Node](t, intern.Options{}).Strings(node); err != nil {
				t.Fatal(err)
			}
			return cmp.Diff(want, node)
		}},
		{"config map", func(t *testing.T) string {
			want := cm.DeepCopy()
			if err := newInterner[*corev1.ConfigMap](t, intern.Options{}).Strings(cm); err != nil {
				t.Fatal(err)
			}
			return cmp.Diff(want, cm)
		}},
		{"empty pod", func(t *testing.T) string {
			got := &corev1.Pod{}
			if err := newInterner[*corev1.Pod](t, intern.Options{}).Strings(got); err != nil {
				t.Fatal(err)
			}
			return cmp.Diff(&corev1.Pod{}, got)
		}},
		{"nil pod", func(t *testing.T) string {
			var got *corev1.Pod
			if err := newInterner[*corev1.Pod](t, intern.Options{}).Strings(got); err != nil {
				t.Fatal(err)
			}
			return cmp.Diff((*corev1.Pod)(nil), got)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := tt.run(t); d != "" {
				t.Errorf("seed %d: interned object differs (-want +got):\n%s", seed, d)
			}
		})
	}
}

func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// TestStringsShares checks which strings two decoded pods share after
// interning: the equal ones, except those unique to an object.
func TestStringsShares(t *testing.T) {
	pods := decodedPods(t, 200)
	a, b := pods[0], pods[100]   // same namespace, app and node
	twin := decodedPods(t, 1)[0] // the same pod as a, decoded again
	in := newInterner[*corev1.Pod](t, intern.Options{})
	for _, p := range []*corev1.Pod{a, b, twin} {
		if err := in.Strings(p); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		x, y string
		want bool
	}{
		{"namespace", a.Namespace, b.Namespace, true},
		{"generateName", a.GenerateName, b.GenerateName, true},
		{"label key", labelKey(a.Labels, "tier"), labelKey(b.Labels, "tier"), true},
		{"label value", a.Labels["app"], b.Labels["app"], true},
		{"annotation value", a.Annotations["prometheus.io/port"], b.Annotations["prometheus.io/port"], true},
		{"owner name", a.OwnerReferences[0].Name, b.OwnerReferences[0].Name, true},
		{"owner uid", string(a.OwnerReferences[0].UID), string(b.OwnerReferences[0].UID), true},
		{"image", a.Spec.Containers[0].Image, b.Spec.Containers[0].Image, true},
		{"arg", a.Spec.Containers[0].Args[0], b.Spec.Containers[0].Args[0], true},
		{"env value", a.Spec.Containers[0].Env[0].Value, b.Spec.Containers[0].Env[0].Value, true},
		{"env field path", a.Spec.Containers[0].Env[2].ValueFrom.FieldRef.FieldPath, b.Spec.Containers[0].Env[2].ValueFrom.FieldRef.FieldPath, true},
		{"probe path", a.Spec.Containers[0].ReadinessProbe.HTTPGet.Path, b.Spec.Containers[0].ReadinessProbe.HTTPGet.Path, true},
		{"node", a.Spec.NodeName, b.Spec.NodeName, true},
		{"condition type", string(a.Status.Conditions[1].Type), string(b.Status.Conditions[1].Type), true},
		{"image id", a.Status.ContainerStatuses[0].ImageID, b.Status.ContainerStatuses[0].ImageID, true},
		{"manager", a.ManagedFields[0].Manager, b.ManagedFields[0].Manager, true},
		{"name of twins", a.Name, twin.Name, false},
		{"uid of twins", string(a.UID), string(twin.UID), false},
		{"resourceVersion of twins", a.ResourceVersion, twin.ResourceVersion, false},
		{"pod IP of twins", a.Status.PodIP, twin.Status.PodIP, false},
		{"container ID of twins", a.Status.ContainerStatuses[0].ContainerID, twin.Status.ContainerStatuses[0].ContainerID, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.x != tt.y {
				t.Fatalf("%q and %q differ: the fixture changed", tt.x, tt.y)
			}
			if got := same(tt.x, tt.y); got != tt.want {
				t.Errorf("%q shares memory: %v, want %v", tt.x, got, tt.want)
			}
		})
	}
}

// TestMapsShares: with Options.Maps, pods of one app share their labels,
// annotations and resource lists, pods of another app do not share their
// labels, and every pod stays equal to its deep copy; without it no map
// is shared.
func TestMapsShares(t *testing.T) {
	for _, share := range []bool{false, true} {
		t.Run(fmt.Sprintf("Maps=%v", share), func(t *testing.T) {
			pods := decodedPods(t, 200)
			want := make([]*corev1.Pod, len(pods))
			in := newInterner[*corev1.Pod](t, intern.Options{Maps: share})
			for i, p := range pods {
				want[i] = p.DeepCopy()
				if err := in.Strings(p); err != nil {
					t.Fatal(err)
				}
			}
			for i := range pods {
				if d := cmp.Diff(want[i], pods[i]); d != "" {
					t.Fatalf("pod %d changed (-want +got):\n%s", i, d)
				}
			}
			a, b, other := pods[0], pods[100], pods[1] // b has a's app, other not
			ptr := func(m any) uintptr { return reflect.ValueOf(m).Pointer() }
			for _, c := range []struct {
				name string
				x, y any
				want bool
			}{
				{"labels", a.Labels, b.Labels, share},
				{"annotations", a.Annotations, b.Annotations, share},
				{"requests", a.Spec.Containers[0].Resources.Requests, b.Spec.Containers[0].Resources.Requests, share},
				{"labels of another app", a.Labels, other.Labels, false},
			} {
				if got := ptr(c.x) == ptr(c.y); got != c.want {
					t.Errorf("%s: shared %v, want %v", c.name, got, c.want)
				}
			}
		})
	}
}

// labelKey returns the map's own copy of key k.
func labelKey(m map[string]string, k string) string {
	for key := range m {
		if key == k {
			return key
		}
	}
	return ""
}

// TestMaxLen: a string longer than MaxLen is not shared.
func TestMaxLen(t *testing.T) {
	long := strings.Repeat("y", 100)
	tests := []struct {
		maxLen int
		want   bool
	}{{0, true}, {99, false}, {100, true}, {-1, true}}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.maxLen), func(t *testing.T) {
			in := newInterner[*corev1.ConfigMap](t, intern.Options{MaxLen: tt.maxLen})
			a := &corev1.ConfigMap{Data: map[string]string{"k": fresh(long)}}
			b := &corev1.ConfigMap{Data: map[string]string{"k": fresh(long)}}
			for _, c := range []*corev1.ConfigMap{a, b} {
				if err := in.Strings(c); err != nil {
					t.Fatal(err)
				}
			}
			if got := same(a.Data["k"], b.Data["k"]); got != tt.want {
				t.Errorf("shared: %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNewRefuses types that are not pointers to structs.
func TestNewRefuses(t *testing.T) {
	tests := []struct {
		name string
		new  func() error
	}{
		{"struct", func() error { _, err := intern.New[corev1.Pod](intern.Options{}); return err }},
		{"string pointer", func() error { _, err := intern.New[*string](intern.Options{}); return err }},
		{"map", func() error { _, err := intern.New[map[string]string](intern.Options{}); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.new(); err == nil || !strings.Contains(err.Error(), "not a pointer to a struct") {
				t.Errorf("New: %v, want an error", err)
			}
		})
	}
}

// TestEmpty: a type with no strings is not walked at all.
func TestEmpty(t *testing.T) {
	type inner struct{ N int }
	type noStrings struct {
		A []byte
		B *inner
		C []inner
		D any
		//lint:ignore U1000 an unexported string the interner must leave alone
		e string
	}
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"no strings", newInterner[*noStrings](t, intern.Options{}).Empty(), true},
		{"time", newInterner[*metav1.Time](t, intern.Options{}).Empty(), true},
		{"pod", newInterner[*corev1.Pod](t, intern.Options{}).Empty(), false},
		{"recursive", newInterner[*rule](t, intern.Options{}).Empty(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("Empty: %v, want %v", tt.got, tt.want)
			}
		})
	}
}

// TestNoAllocations: interning a pod whose strings are all known
// allocates nothing.
func TestNoAllocations(t *testing.T) {
	p := decodedPods(t, 1)[0]
	in := newInterner[*corev1.Pod](t, intern.Options{})
	if err := in.Strings(p); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = in.Strings(p) }); n != 0 {
		t.Errorf("%v allocations per pod, want 0", n)
	}
}

// TestConcurrent interns different objects of new and known types on
// many goroutines at once (run with -race).
func TestConcurrent(t *testing.T) {
	pods := decodedPods(t, 400)
	seed := rand.Uint64()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			pin := newInterner[*corev1.Pod](t, intern.Options{})
			cin := newInterner[*crd](t, intern.Options{})
			for i := g; i < len(pods); i += 8 {
				want := pods[i].DeepCopy()
				if err := pin.Strings(pods[i]); err != nil {
					t.Error(err)
				}
				if d := cmp.Diff(want, pods[i]); d != "" {
					t.Errorf("pod %d differs (-want +got):\n%s", i, d)
				}
				if err := cin.Strings(randomCRD(r)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for i := 1; i < len(pods); i++ {
		if !same(pods[0].Namespace, pods[i].Namespace) && pods[0].Namespace == pods[i].Namespace {
			t.Errorf("seed %d: pods 0 and %d do not share their namespace", seed, i)
		}
	}
}

// jsonPod is one fixture pod's JSON, without managedFields.
func jsonPod(b *testing.B, i int) []byte {
	data, err := json.Marshal(bench.Pod(i, bench.PodOptions{}))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkStrings reports the cost of interning one fixture pod beside
// the cost of decoding it: decode is the JSON decoding alone, decode+intern
// both, intern a decoded pod's strings again (all known).
func BenchmarkStrings(b *testing.B) {
	const n = 1000
	data := make([][]byte, n)
	for i := range data {
		data[i] = jsonPod(b, i)
	}
	in := newInterner[*corev1.Pod](b, intern.Options{})
	for _, mode := range []string{"decode", "decode+intern"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				var p corev1.Pod
				if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data[i%n], &p); err != nil {
					b.Fatal(err)
				}
				if mode == "decode+intern" {
					if err := in.Strings(&p); err != nil {
						b.Fatal(err)
					}
				}
				i++
			}
		})
	}
	b.Run("intern", func(b *testing.B) {
		pods := decodedPods(b, n)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := in.Strings(pods[i%n]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

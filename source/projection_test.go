package source_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/bench"
	"github.com/typedinformer/informer/internal/podserver"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
)

// podView projects a Pod onto what a scheduler-like controller reads: the
// metadata, a sub-projection of the spec, status fields of the Pod's own
// types, a pointer where the Pod has a value, and a map of the Pod's.
type podView struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		NodeName     string            `json:"nodeName"`
		NodeSelector map[string]string `json:"nodeSelector"`
		Containers   []struct {
			Name      string                      `json:"name"`
			Image     string                      `json:"image"`
			Resources corev1.ResourceRequirements `json:"resources"`
			Ports     []struct {
				ContainerPort int32 `json:"containerPort"`
			} `json:"ports"`
		} `json:"containers"`
		Priority               *int32              `json:"priority"`
		TerminationGracePeriod *int64              `json:"terminationGracePeriodSeconds"`
		HostNetwork            bool                `json:"hostNetwork"`
		Tolerations            []corev1.Toleration `json:"tolerations"`
	} `json:"spec"`
	Status struct {
		Phase      corev1.PodPhase       `json:"phase"`
		Conditions []corev1.PodCondition `json:"conditions"`
		PodIP      *string               `json:"podIP"`
		PodIPs     []corev1.PodIP        `json:"podIPs"`
		StartTime  *metav1.Time          `json:"startTime"`
		QOSClass   string                `json:"qosClass"`
	} `json:"status"`
}

func (*podView) ProjectionOf() runtime.Object     { return &corev1.Pod{} }
func (p *podView) DeepCopyObject() runtime.Object { return source.DeepCopy(p) }

// viewOf is the oracle: the pod's JSON decoded into the projection by
// encoding/json, without managedFields unless keep.
func viewOf(t *testing.T, p *corev1.Pod, keep bool) *podView {
	t.Helper()
	p = p.DeepCopy()
	if !keep {
		p.ManagedFields = nil
	}
	p.TypeMeta = metav1.TypeMeta{}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var v podView
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

// TestProjectionDecodes: a projection listed and watched over JSON and
// protobuf, with managedFields kept or dropped, decodes to what
// encoding/json makes of the same pods' JSON.
func TestProjectionDecodes(t *testing.T) {
	pods := bench.Pods(30, bench.PodOptions{Labels: bench.LabelsStatefulSet, ManagedFields: true})
	for _, proto := range []bool{false, true} {
		for _, keep := range []bool{false, true} {
			name := map[bool]string{false: "json", true: "protobuf"}[proto] + map[bool]string{false: "/drop", true: "/keep"}[keep]
			t.Run(name, func(t *testing.T) {
				fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: pods})
				srv := podserver.New(t, fake)
				src, err := source.FromConfig[*podView](srv.Config(), source.RESTOptions{Mapper: podserver.Mapper(), Protobuf: proto, KeepManagedFields: keep})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				l, err := src.List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if len(l.Items) != len(pods) {
					t.Fatalf("listed %d, want %d", len(l.Items), len(pods))
				}
				for _, got := range l.Items {
					p, err := fake.Get(cache.KeyOf(got))
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(viewOf(t, p, keep), got); diff != "" {
						t.Fatalf("list item %s (-want +got):\n%s", got.Name, diff)
					}
				}
				w, err := src.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				p, err := fake.Get(cache.KeyOf(pods[7]))
				if err != nil {
					t.Fatal(err)
				}
				p = p.DeepCopy()
				p.Status.Phase = corev1.PodFailed
				p.Spec.NodeName = "node-elsewhere"
				updated, err := fake.Update(p)
				if err != nil {
					t.Fatal(err)
				}
				ev, err := w.Next(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if ev.Type != watch.Modified {
					t.Fatalf("event %s, want MODIFIED", ev.Type)
				}
				if diff := cmp.Diff(viewOf(t, updated, keep), ev.Object); diff != "" {
					t.Fatalf("watch event (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestProjectionRefused: a projection that does not fit the type is
// refused at construction, with the path of the field that does not.
func TestProjectionRefused(t *testing.T) {
	cfg := podserver.New(t, sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{})).Config()
	opts := source.RESTOptions{Mapper: podserver.Mapper()}
	cases := []struct {
		name string
		make func() error
		want string
	}{
		{"unknown field", func() error { _, err := source.FromConfig[*badName](cfg, opts); return err }, `status.phaze: v1.PodStatus has no field "phaze"`},
		{"wrong type", func() error { _, err := source.FromConfig[*badType](cfg, opts); return err }, `spec.nodeName: int in the projection, string in the type`},
		{"nested", func() error { _, err := source.FromConfig[*badNested](cfg, opts); return err }, `spec.containers[].ports[].containerPort: string in the projection, int32 in the type`},
		{"custom type", func() error { _, err := source.FromConfig[*badTime](cfg, opts); return err }, `status.startTime: string in the projection, v1.Time in the type: it decodes itself`},
		{"no metadata", func() error { _, err := source.FromConfig[*noMeta](cfg, opts); return err }, `has no metadata field of type metav1.ObjectMeta`},
		{"unnamed type, protobuf", func() error {
			_, err := source.FromConfig[*unnamed](cfg, source.RESTOptions{Mapper: podserver.Mapper(), Protobuf: true, GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}})
			return err
		}, `ProjectionOf is nil`},
	}
	for _, c := range cases {
		err := c.make()
		if !errors.Is(err, source.ErrBadProjection) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrBadProjection with %q", c.name, err, c.want)
		}
	}
	// Nil ProjectionOf with a GroupVersionKind: JSON works, unchecked.
	if _, err := source.FromConfig[*unnamed](cfg, source.RESTOptions{Mapper: podserver.Mapper(), GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}}); err != nil {
		t.Errorf("unnamed projection over JSON: %v", err)
	}
}

// TestProjectionMismatchQuarantined: a server object whose field does not
// fit the projection's type is an undecodable item of the list; the rest
// decode.
func TestProjectionMismatchQuarantined(t *testing.T) {
	pods := bench.Pods(5, bench.PodOptions{})
	for _, proto := range []bool{false, true} {
		fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Objects: pods})
		srv := podserver.New(t, fake)
		srv.Undecodable = func(p *corev1.Pod) bool { return p.Name == pods[2].Name }
		src, err := source.FromConfig[*podView](srv.Config(), source.RESTOptions{Mapper: podserver.Mapper(), Protobuf: proto})
		if err != nil {
			t.Fatal(err)
		}
		l, err := src.List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("protobuf %v: %v", proto, err)
		}
		if len(l.Items) != 4 || len(l.Undecodable) != 1 || l.Undecodable[0].Name != pods[2].Name {
			t.Errorf("protobuf %v: %d items, undecodable %v; want 4 and %s", proto, len(l.Items), l.Undecodable, pods[2].Name)
		}
	}
}

type badName struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Status            struct {
		Phaze string `json:"phaze"`
	} `json:"status"`
}

func (*badName) ProjectionOf() runtime.Object     { return &corev1.Pod{} }
func (p *badName) DeepCopyObject() runtime.Object { return source.DeepCopy(p) }

type badType struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		NodeName int `json:"nodeName"`
	} `json:"spec"`
}

func (*badType) ProjectionOf() runtime.Object     { return &corev1.Pod{} }
func (p *badType) DeepCopyObject() runtime.Object { return source.DeepCopy(p) }

type badNested struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Containers []struct {
			Ports []struct {
				ContainerPort string `json:"containerPort"`
			} `json:"ports"`
		} `json:"containers"`
	} `json:"spec"`
}

func (*badNested) ProjectionOf() runtime.Object     { return &corev1.Pod{} }
func (p *badNested) DeepCopyObject() runtime.Object { return source.DeepCopy(p) }

type badTime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Status            struct {
		StartTime string `json:"startTime"`
	} `json:"status"`
}

func (*badTime) ProjectionOf() runtime.Object     { return &corev1.Pod{} }
func (p *badTime) DeepCopyObject() runtime.Object { return source.DeepCopy(p) }

// noMeta has an ObjectMeta, but not under "metadata".
type noMeta struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ObjectMeta
}

func (*noMeta) ProjectionOf() runtime.Object     { return &corev1.Pod{} }
func (p *noMeta) DeepCopyObject() runtime.Object { return source.DeepCopy(p) }

type unnamed struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
}

func (*unnamed) ProjectionOf() runtime.Object     { return nil }
func (p *unnamed) DeepCopyObject() runtime.Object { return source.DeepCopy(p) }

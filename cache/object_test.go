package cache_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	clientcache "k8s.io/client-go/tools/cache"

	"github.com/typedinformer/informer/cache"
)

func TestKeyStringMatchesClientGo(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"namespaced", newPod("default", "web-0", ""), "default/web-0"},
		{"cluster-scoped", newPod("", "node-1", ""), "node-1"},
		{"dots and dashes", newPod("kube-system", "coredns-5d78c9869d-abc12", ""), "kube-system/coredns-5d78c9869d-abc12"},
		{"single characters", newPod("a", "b", ""), "a/b"},
		{"long", newPod("ns-with-a-rather-long-name-0123456789", "pod.with.dots.and-dashes", ""), "ns-with-a-rather-long-name-0123456789/pod.with.dots.and-dashes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oracle, err := clientcache.MetaNamespaceKeyFunc(tt.pod)
			if err != nil {
				t.Fatalf("MetaNamespaceKeyFunc: %v", err)
			}
			if oracle != tt.want {
				t.Fatalf("test table disagrees with client-go: want %q, client-go %q", tt.want, oracle)
			}
			k := cache.KeyOf(tt.pod)
			if diff := cmp.Diff(oracle, k.String()); diff != "" {
				t.Errorf("KeyOf().String() (-want +got):\n%s", diff)
			}
			// client-go's typed key agrees too.
			if diff := cmp.Diff(clientcache.MetaObjectToName(tt.pod).String(), k.String()); diff != "" {
				t.Errorf("KeyOf vs MetaObjectToName (-want +got):\n%s", diff)
			}
			// Round trip through ParseKey, compared with SplitMetaNamespaceKey.
			ns, name, err := clientcache.SplitMetaNamespaceKey(oracle)
			if err != nil {
				t.Fatalf("SplitMetaNamespaceKey: %v", err)
			}
			got, err := cache.ParseKey(oracle)
			if err != nil {
				t.Fatalf("ParseKey(%q): %v", oracle, err)
			}
			if diff := cmp.Diff(cache.Key{Namespace: ns, Name: name}, got); diff != "" {
				t.Errorf("ParseKey vs SplitMetaNamespaceKey (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(k, got); diff != "" {
				t.Errorf("ParseKey(String()) round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseKey(t *testing.T) {
	tests := []struct {
		in      string
		want    cache.Key
		wantErr bool
		// oracleAgrees: client-go's SplitMetaNamespaceKey returns the same
		// key without error. It is lenient about empty parts, which
		// ParseKey rejects.
		oracleAgrees bool
	}{
		{in: "ns/name", want: cache.Key{Namespace: "ns", Name: "name"}, oracleAgrees: true},
		{in: "name", want: cache.Key{Name: "name"}, oracleAgrees: true},
		{in: "/name", want: cache.Key{Name: "name"}, oracleAgrees: true},
		{in: "kube-system/coredns", want: cache.Key{Namespace: "kube-system", Name: "coredns"}, oracleAgrees: true},
		{in: "", wantErr: true},
		{in: "ns/", wantErr: true},
		{in: "/", wantErr: true},
		{in: "a/b/c", wantErr: true},
		{in: "a//b", wantErr: true},
		{in: "//", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := cache.ParseKey(tt.in)
			if tt.wantErr {
				if !errors.Is(err, cache.ErrBadKey) {
					t.Fatalf("ParseKey(%q) = %v, %v; want error wrapping ErrBadKey", tt.in, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseKey(%q): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseKey(%q) (-want +got):\n%s", tt.in, diff)
			}
			ns, name, oerr := clientcache.SplitMetaNamespaceKey(tt.in)
			if tt.oracleAgrees {
				if oerr != nil {
					t.Fatalf("SplitMetaNamespaceKey(%q): %v", tt.in, oerr)
				}
				if diff := cmp.Diff(cache.Key{Namespace: ns, Name: name}, got); diff != "" {
					t.Errorf("ParseKey vs SplitMetaNamespaceKey (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestKeyString(t *testing.T) {
	tests := []struct {
		key  cache.Key
		want string
	}{
		{cache.Key{Namespace: "ns", Name: "n"}, "ns/n"},
		{cache.Key{Name: "n"}, "n"},
		{cache.Key{}, ""},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.key.String()); diff != "" {
			t.Errorf("%#v.String() (-want +got):\n%s", tt.key, diff)
		}
	}
}

// TestPrepareKeys checks the key Prepare computes and the objects it
// refuses for want of a key.
func TestPrepareKeys(t *testing.T) {
	tests := []struct {
		name    string
		pod     *corev1.Pod
		want    cache.Key
		wantErr error
	}{
		{name: "namespaced", pod: newPod("ns", "a", ""), want: cache.Key{Namespace: "ns", Name: "a"}},
		{name: "cluster-scoped", pod: newPod("", "a", ""), want: cache.Key{Name: "a"}},
		{name: "nil", pod: nil, wantErr: cache.ErrNilObject},
		{name: "no name", pod: newPod("ns", "", ""), wantErr: cache.ErrNoName},
		{name: "no name cluster-scoped", pod: newPod("", "", ""), wantErr: cache.ErrNoName},
	}
	w := mustWriter(t, podOptions{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := w.Prepare(tt.pod)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Prepare() error = %v, want errors.Is %v", err, tt.wantErr)
				}
				if e.Key != (cache.Key{}) || e.Object != nil {
					t.Errorf("Prepare() entry on error = %v, %v; want the zero entry", e.Key, e.Object)
				}
				return
			}
			if err != nil {
				t.Fatalf("Prepare(): %v", err)
			}
			if diff := cmp.Diff(tt.want, e.Key); diff != "" {
				t.Errorf("Prepare().Key (-want +got):\n%s", diff)
			}
			if e.Object != tt.pod {
				t.Errorf("Prepare().Object = %p, want the object given, %p", e.Object, tt.pod)
			}
		})
	}
}

// TestOtherObjectTypes checks that the Object constraint admits the types
// its documentation names, and that a cache of each works.
func TestOtherObjectTypes(t *testing.T) {
	t.Run("unstructured", func(t *testing.T) {
		u := &unstructured.Unstructured{}
		u.SetNamespace("ns")
		u.SetName("u")
		u.SetLabels(map[string]string{"app": "web"})
		if k := cache.KeyOf(u); k != (cache.Key{Namespace: "ns", Name: "u"}) {
			t.Errorf("KeyOf(unstructured) = %v", k)
		}
		w, err := cache.NewWriter(cache.Options[*unstructured.Unstructured]{LabelIndexes: []string{"app"}})
		if err != nil {
			t.Fatal(err)
		}
		var nilU *unstructured.Unstructured
		if _, err := w.Prepare(nilU); !errors.Is(err, cache.ErrNilObject) {
			t.Errorf("Prepare(nil unstructured) error = %v, want ErrNilObject", err)
		}
		e, err := w.Prepare(u)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Apply([]cache.Change[*unstructured.Unstructured]{{Entry: e}}); err != nil {
			t.Fatal(err)
		}
		if got, ok := w.Store().GetByKey(cache.Key{Namespace: "ns", Name: "u"}); !ok || got != u {
			t.Errorf("GetByKey = %v, %v; want the stored object", got, ok)
		}
		got, err := w.Store().Lister().Namespace("ns").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
		if err != nil || len(got) != 1 || got[0] != u {
			t.Errorf("Namespace(ns).List(app=web) = %v, %v; want the stored object", got, err)
		}
	})
	t.Run("partial object metadata", func(t *testing.T) {
		pm := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}
		if k := cache.KeyOf(pm); k != (cache.Key{Name: "cm"}) {
			t.Errorf("KeyOf(partial) = %v", k)
		}
		w, err := cache.NewWriter(cache.Options[*metav1.PartialObjectMetadata]{Scope: cache.ScopeCluster})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Replace([]cache.Entry[*metav1.PartialObjectMetadata]{{Object: pm}}); err != nil {
			t.Fatal(err)
		}
		if got, err := w.Store().Lister().Get("cm"); err != nil || got != pm {
			t.Errorf("Lister().Get(cm) = %v, %v; want the stored object", got, err)
		}
	})
}

func TestScopeString(t *testing.T) {
	tests := []struct {
		scope cache.Scope
		want  string
	}{
		{cache.ScopeUnknown, "unknown"},
		{cache.ScopeNamespaced, "namespaced"},
		{cache.ScopeCluster, "cluster"},
		{cache.Scope(99), "unknown"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.scope.String()); diff != "" {
			t.Errorf("Scope(%d).String() (-want +got):\n%s", tt.scope, diff)
		}
	}
}

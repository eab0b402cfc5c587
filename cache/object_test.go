package cache_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
			k, err := cache.MetaKey(tt.pod)
			if err != nil {
				t.Fatalf("MetaKey: %v", err)
			}
			if diff := cmp.Diff(oracle, k.String()); diff != "" {
				t.Errorf("MetaKey().String() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(k, cache.KeyOf(tt.pod)); diff != "" {
				t.Errorf("KeyOf (-want +got):\n%s", diff)
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

func TestMetaKey(t *testing.T) {
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
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cache.MetaKey(tt.pod)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("MetaKey() error = %v, want errors.Is %v", err, tt.wantErr)
				}
				if diff := cmp.Diff(cache.Key{}, got); diff != "" {
					t.Errorf("MetaKey() key on error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("MetaKey(): %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("MetaKey() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMetaKeyOtherTypes checks that the Object constraint admits the types
// its documentation names.
func TestMetaKeyOtherTypes(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetNamespace("ns")
	u.SetName("u")
	if k, err := cache.MetaKey(u); err != nil || k != (cache.Key{Namespace: "ns", Name: "u"}) {
		t.Errorf("MetaKey(unstructured) = %v, %v", k, err)
	}
	var nilU *unstructured.Unstructured
	if _, err := cache.MetaKey(nilU); !errors.Is(err, cache.ErrNilObject) {
		t.Errorf("MetaKey(nil unstructured) error = %v, want ErrNilObject", err)
	}
	pm := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}
	if k, err := cache.MetaKey(pm); err != nil || k != (cache.Key{Name: "cm"}) {
		t.Errorf("MetaKey(partial) = %v, %v", k, err)
	}
}

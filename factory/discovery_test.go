package factory_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/factory"
)

// A kind the server starts serving after the factory's first discovery
// (a CRD installed later) is found: the default mapper discovers again.
func TestDiscoversAgainForANewKind(t *testing.T) {
	var services atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var doc any
		switch r.URL.Path {
		case "/api":
			doc = metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
		case "/apis":
			doc = metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		case "/api/v1":
			res := []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"list", "watch"}}}
			if services.Load() {
				res = append(res, metav1.APIResource{Name: "services", Namespaced: true, Kind: "Service", Verbs: metav1.Verbs{"list", "watch"}})
			}
			doc = metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1", APIResources: res}
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	}))
	defer srv.Close()
	f, err := factory.New(&rest.Config{Host: srv.URL}, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, rel, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	defer rel()
	services.Store(true) // the server now serves a new kind
	_, rel2, err := factory.InformerFor[*corev1.Service](f, factory.Scope{})
	if err != nil {
		t.Fatalf("InformerFor a kind served since the first discovery: %v", err)
	}
	rel2()
}

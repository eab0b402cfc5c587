package source

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// builtinGroups names the API group of each package of k8s.io/api by the
// package's first path element: the API machinery's GroupName of the
// package. FromConfig finds a built-in type's kind from its Go package
// this way, so that a program does not link client-go's scheme, and with
// it every API group, to inform on one type.
var builtinGroups = map[string]string{
	"core":                  "",
	"apps":                  "apps",
	"autoscaling":           "autoscaling",
	"batch":                 "batch",
	"extensions":            "extensions",
	"policy":                "policy",
	"apiserverinternal":     "internal.apiserver.k8s.io",
	"flowcontrol":           "flowcontrol.apiserver.k8s.io",
	"rbac":                  "rbac.authorization.k8s.io",
	"admission":             "admission.k8s.io",
	"admissionregistration": "admissionregistration.k8s.io",
	"apidiscovery":          "apidiscovery.k8s.io",
	"authentication":        "authentication.k8s.io",
	"authorization":         "authorization.k8s.io",
	"certificates":          "certificates.k8s.io",
	"coordination":          "coordination.k8s.io",
	"discovery":             "discovery.k8s.io",
	"events":                "events.k8s.io",
	"imagepolicy":           "imagepolicy.k8s.io",
	"lifecycle":             "lifecycle.k8s.io",
	"networking":            "networking.k8s.io",
	"node":                  "node.k8s.io",
	"resource":              "resource.k8s.io",
	"scheduling":            "scheduling.k8s.io",
	"storage":               "storage.k8s.io",
	"storagemigration":      "storagemigration.k8s.io",
}

// builtinKind returns the GroupVersionKind of t (a pointer to a struct) if
// it is a type of k8s.io/api/<group>/<version>: its kind is its type name.
// Whether the server serves that kind is for the REST mapper to say.
func builtinKind(t reflect.Type) (schema.GroupVersionKind, bool) {
	if t == nil || t.Kind() != reflect.Pointer {
		return schema.GroupVersionKind{}, false
	}
	t = t.Elem()
	rest, ok := strings.CutPrefix(t.PkgPath(), "k8s.io/api/")
	if !ok {
		return schema.GroupVersionKind{}, false
	}
	g, v, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(v, "/") {
		return schema.GroupVersionKind{}, false
	}
	group, ok := builtinGroups[g]
	if !ok {
		return schema.GroupVersionKind{}, false
	}
	return schema.GroupVersionKind{Group: group, Version: v, Kind: t.Name()}, true
}

// discoverTimeout bounds FromConfig's one discovery request.
const discoverTimeout = 30 * time.Second

// discover asks the server which resource serves gvk, and whether it is
// namespaced: one GET of gvk's group version's resource list, where
// client-go's discovery would read every group's. A kind the group
// version does not serve is a *meta.NoKindMatchError, as a REST mapper
// says it.
func discover(rc *rest.RESTClient, apiPath string, gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), discoverTimeout)
	defer cancel()
	path := []string{apiPath, gvk.Group, gvk.Version}
	if gvk.Group == "" {
		path = []string{apiPath, gvk.Version}
	}
	noMatch := &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
	// JSON whatever the source's wire format: the server answers in the first
	// format the client accepts, and the document is read here as JSON.
	body, err := rc.Get().AbsPath(path...).SetHeader("Accept", runtime.ContentTypeJSON).Do(ctx).Raw()
	switch {
	case apierrors.IsNotFound(err):
		return schema.GroupVersionResource{}, false, noMatch // the group version is not served
	case err != nil:
		return schema.GroupVersionResource{}, false, fmt.Errorf("discovery of %v: %w", gvk.GroupVersion(), err)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("discovery of %v: %w", gvk.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") {
			return gvk.GroupVersion().WithResource(r.Name), r.Namespaced, nil
		}
	}
	return schema.GroupVersionResource{}, false, noMatch
}

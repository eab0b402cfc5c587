package factory

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// ErrNotAClientset is returned by NewForClientsets for a value with no
// typed group clients.
var ErrNotAClientset = errors.New("factory: not a typed clientset")

// NewForClientsets returns a factory whose informers list and watch
// through typed clientsets instead of a rest.Config: client-go's
// kubernetes.Interface, its fake (k8s.io/client-go/kubernetes/fake, for
// unit tests), or a clientset generated for CRDs (client-gen), several
// at once. For each type T asked for, the factory finds the clientset's
// client whose List returns T's list type (clientset.CoreV1().Pods for
// *corev1.Pod) and uses it as source.FromClient does; a type with a source
// given by Register uses that instead. Everything else is as with New:
// sharing, bounded lists, release. InformerFor fails for a T that no
// clientset serves, and for a namespace of a cluster-scoped type.
//
// Objects from clientsets are decoded by client-go and may be shared, so
// the informers do not share strings between them (typed.Options.NoIntern
// is implied); a factory from a rest.Config decodes for its informers
// alone and does.
func NewForClientsets(clientsets []any, opts Options) (*Factory, error) {
	if len(clientsets) == 0 {
		return nil, fmt.Errorf("%w: no clientset", ErrNotAClientset)
	}
	var found []clientset
	for i, cs := range clientsets {
		c, err := clientsetOf(cs)
		if err != nil {
			return nil, fmt.Errorf("factory: NewForClientsets: clientsets[%d]: %w", i, err)
		}
		found = append(found, c)
	}
	f, err := New(nil, opts)
	if err != nil {
		return nil, err
	}
	f.clientsets = found
	return f, nil
}

// clientset is a typed clientset's group clients (CoreV1(), AppsV1()...).
type clientset struct {
	groups []reflect.Value
}

var (
	ctxType  = reflect.TypeFor[context.Context]()
	optsType = reflect.TypeFor[metav1.ListOptions]()
	errType  = reflect.TypeFor[error]()
	objType  = reflect.TypeFor[runtime.Object]()
)

// clientsetOf reads cs's group clients: methods with no argument that
// return one value whose methods make resource clients.
func clientsetOf(cs any) (clientset, error) {
	v := reflect.ValueOf(cs)
	if !v.IsValid() || (v.Kind() == reflect.Pointer && v.IsNil()) {
		return clientset{}, fmt.Errorf("%w: nil", ErrNotAClientset)
	}
	var c clientset
	for i := range v.NumMethod() {
		m := v.Method(i)
		name := v.Type().Method(i).Name
		if m.Type().NumIn() != 0 || m.Type().NumOut() != 1 || name == "Discovery" || m.Type().Out(0).Kind() != reflect.Interface {
			continue
		}
		c.groups = append(c.groups, m)
	}
	if len(c.groups) == 0 {
		return clientset{}, fmt.Errorf("%w: %T has no group clients", ErrNotAClientset, cs)
	}
	return c, nil
}

// resourceClient finds the client of T among the clientsets: a method of
// a group client, taking a namespace or nothing, whose result has List
// returning a list of T and Watch. It returns the method and whether it
// takes a namespace.
func resourceClient[T cache.Object](sets []clientset) (reflect.Value, bool, bool) {
	want := reflect.TypeFor[T]()
	for _, cs := range sets {
		for _, g := range cs.groups {
			group := g.Call(nil)[0]
			if group.IsNil() {
				continue
			}
			for i := range group.NumMethod() {
				m := group.Method(i)
				mt := m.Type()
				namespaced := mt.NumIn() == 1 && mt.In(0).Kind() == reflect.String
				if (mt.NumIn() != 0 && !namespaced) || mt.NumOut() != 1 || !listsOf(mt.Out(0), want) {
					continue
				}
				return m, namespaced, true
			}
		}
	}
	return reflect.Value{}, false, false
}

// listsOf reports whether client type c has List(ctx, ListOptions)
// returning a list whose Items are of type want, and Watch.
func listsOf(c reflect.Type, want reflect.Type) bool {
	list, ok := c.MethodByName("List")
	if !ok {
		return false
	}
	lt := list.Type
	in := 0
	if c.Kind() != reflect.Interface {
		in = 1 // the receiver
	}
	if lt.NumIn() != in+2 || lt.In(in) != ctxType || lt.In(in+1) != optsType || lt.NumOut() != 2 || lt.Out(1) != errType ||
		!lt.Out(0).Implements(objType) {
		return false
	}
	if _, ok := c.MethodByName("Watch"); !ok {
		return false
	}
	l := lt.Out(0)
	if l.Kind() == reflect.Pointer {
		l = l.Elem()
	}
	items, ok := l.FieldByName("Items")
	if !ok || items.Type.Kind() != reflect.Slice {
		return false
	}
	item := items.Type.Elem()
	return item == want || reflect.PointerTo(item) == want
}

// clientsetSource is the source function of T over the clientsets.
func clientsetSource[T cache.Object](sets []clientset) (func(Scope) (source.Source[T], error), error) {
	m, namespaced, ok := resourceClient[T](sets)
	if !ok {
		return nil, fmt.Errorf("no clientset has a client for %v", reflect.TypeFor[T]())
	}
	return func(s Scope) (source.Source[T], error) {
		var c reflect.Value
		switch {
		case namespaced:
			c = m.Call([]reflect.Value{reflect.ValueOf(s.Namespace)})[0]
		case s.Namespace != "":
			return nil, fmt.Errorf("%w: namespace %q for %v, which is cluster-scoped", ErrBadScope, s.Namespace, reflect.TypeFor[T]())
		default:
			c = m.Call(nil)[0]
		}
		return source.FromClient[T](&reflected{c: c, fake: isFake(c)})
	}, nil
}

// isFake reports a client-go fake typed client, whose watches never send
// the bookmark that ends a streaming list.
func isFake(c reflect.Value) bool {
	if c.Kind() == reflect.Interface {
		c = c.Elem()
	}
	t := c.Type()
	_, kind := t.MethodByName("Kind")
	_, res := t.MethodByName("Resource")
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return (kind && res) || strings.HasSuffix(t.PkgPath(), "/fake")
}

// reflected is a typed client called through reflection, as a
// source.Client of runtime.Object.
type reflected struct {
	c    reflect.Value
	fake bool
}

func (r *reflected) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	out := r.c.MethodByName("List").Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(opts)})
	if err, _ := out[1].Interface().(error); err != nil {
		return nil, err
	}
	obj, _ := out[0].Interface().(runtime.Object)
	return obj, nil
}

func (r *reflected) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	out := r.c.MethodByName("Watch").Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(opts)})
	if err, _ := out[1].Interface().(error); err != nil {
		return nil, err
	}
	w, _ := out[0].Interface().(watch.Interface)
	return w, nil
}

// IsWatchListSemanticsUnSupported is what source.FromClient asks: a fake
// cannot stream lists; a real client asks the server.
func (r *reflected) IsWatchListSemanticsUnSupported() bool {
	if r.fake {
		return true
	}
	if u, ok := r.c.Interface().(interface{ IsWatchListSemanticsUnSupported() bool }); ok {
		return u.IsWatchListSemanticsUnSupported()
	}
	return false
}

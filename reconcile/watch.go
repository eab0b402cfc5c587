package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/typed"
)

// Watch is another informer whose changes reconcile keys of the
// controller's own type: the children it owns (Owned), objects that name
// it in a label (Labeled), or any mapping of your own (Mapped). Set them
// in Options.Watches. The controller adds a handler to each watched
// informer when it runs, waits for each to sync before its workers start,
// and removes the handlers when it stops; the informers run on their own,
// as the controller's own informer does.
type Watch interface {
	spec() *watchSpec
}

// WatchOptions configures a Watch.
type WatchOptions[C cache.Object] struct {
	// Predicates decide which changes of the watched objects are mapped
	// to keys: all must accept the change. Default: every change is.
	Predicates []Predicate[C]
}

// WatchStatus is what a Watch has done, in Status.Watches.
type WatchStatus struct {
	// Name is the watched informer's name and how it maps ("owned by
	// apps/Deployment", "label app", "mapped").
	Name string
	// Mapped counts the changes that reconciled at least one key.
	Mapped uint64
	// Ignored counts the changes that named no key: a child with no
	// controller owner of the owner's kind, an object without the label,
	// a mapping that returned none. Changes the predicates dropped are not
	// counted.
	Ignored uint64
}

// watchSpec is a Watch with its informer's type erased.
type watchSpec struct {
	name    string
	err     error // from the constructor, reported by New
	mapped  atomic.Uint64
	ignored atomic.Uint64
	// bind is called by New with the scope of the controller's objects.
	bind func(owner cache.Scope) error
	// add adds the handler that maps changes to keys and passes them to
	// enqueue; remove takes it off again.
	add     func(enqueue func(key cache.Key, background bool)) (remove func() error, err error)
	wait    func(ctx context.Context) error
	stopped func() <-chan struct{}
}

func (w *watchSpec) spec() *watchSpec { return w }

func (w *watchSpec) status() WatchStatus {
	return WatchStatus{Name: w.name, Mapped: w.mapped.Load(), Ignored: w.ignored.Load()}
}

// Owned reconciles an owner when one of its children changes: the key of
// the child's controller owner reference (metadata.ownerReferences with
// controller: true) whose kind is owner, in the child's namespace (none for
// a cluster-scoped owner). An update reconciles the old owner too if it
// changed. A child with no such owner is ignored and counted
// (WatchStatus.Ignored). Owned also adds an owner index to inf (see
// OwnerIndex), so that the reconciler lists an owner's children with
// OwnedBy without scanning inf's cache.
func Owned[C cache.Object](inf *typed.Informer[C], owner schema.GroupKind, opts WatchOptions[C]) Watch {
	name := "owned by " + owner.String()
	if owner.Kind == "" {
		return &watchSpec{name: name, err: errors.New("Owned: the owner's Kind is empty")}
	}
	var ownerScope atomic.Int32
	w := newWatch(name, inf, func(obj C, add func(cache.Key)) {
		if k, ok := ownerKey(obj, owner, cache.Scope(ownerScope.Load())); ok {
			add(k)
		}
	}, opts)
	if w.err == nil {
		w.bind = func(s cache.Scope) error {
			ownerScope.Store(int32(s))
			return IndexOwners(inf, owner, s)
		}
	}
	return w
}

// ownerKey is the key of obj's controller owner of kind owner, if it has
// one: in obj's namespace, or none for a cluster-scoped owner.
func ownerKey[C cache.Object](obj C, owner schema.GroupKind, scope cache.Scope) (cache.Key, bool) {
	for _, ref := range obj.GetOwnerReferences() {
		if isController(ref) && refKind(ref) == owner {
			ns := obj.GetNamespace()
			if scope == cache.ScopeCluster {
				ns = ""
			}
			return cache.Key{Namespace: ns, Name: ref.Name}, true
		}
	}
	return cache.Key{}, false
}

// Labeled reconciles the object that a watched object names in its label
// key: the value is the name of an object of the controller's type, in
// the watched object's namespace (none if the controller's type is
// cluster-scoped). An object without the label is ignored and counted.
func Labeled[C cache.Object](inf *typed.Informer[C], label string, opts WatchOptions[C]) Watch {
	name := "label " + label
	if label == "" {
		return &watchSpec{name: name, err: errors.New("Labeled: the label key is empty")}
	}
	var ownerScope atomic.Int32
	w := newWatch(name, inf, func(obj C, add func(cache.Key)) {
		if v, ok := obj.GetLabels()[label]; ok && v != "" {
			ns := obj.GetNamespace()
			if cache.Scope(ownerScope.Load()) == cache.ScopeCluster {
				ns = ""
			}
			add(cache.Key{Namespace: ns, Name: v})
		}
	}, opts)
	w.bind = func(s cache.Scope) error { ownerScope.Store(int32(s)); return nil }
	return w
}

// Mapped reconciles the keys fn returns for a watched object: for an
// update, those of the old and the new object. It is called from the
// watched informer's handler goroutine, with an object of its cache that
// it must not modify, and should be quick; a change for which it returns no
// key is ignored and counted. A panic in fn is recovered by the informer
// and reported as a handler panic.
func Mapped[C cache.Object](inf *typed.Informer[C], fn func(C) []cache.Key, opts WatchOptions[C]) Watch {
	if fn == nil {
		return &watchSpec{name: "mapped", err: errors.New("Mapped: nil mapping function")}
	}
	return newWatch("mapped", inf, func(obj C, add func(cache.Key)) {
		for _, k := range fn(obj) {
			add(k)
		}
	}, opts)
}

// newWatch makes the watch of inf whose keys keys gives.
func newWatch[C cache.Object](name string, inf *typed.Informer[C], keys func(C, func(cache.Key)), opts WatchOptions[C]) *watchSpec {
	if inf == nil {
		return &watchSpec{name: name, err: fmt.Errorf("%s: %w", name, ErrNilInformer)}
	}
	w := &watchSpec{name: inf.Name() + " " + name, bind: func(cache.Scope) error { return nil }}
	for i, p := range opts.Predicates {
		if p == nil {
			w.err = fmt.Errorf("%s: Predicates[%d] is nil", name, i)
			return w
		}
	}
	preds := append([]Predicate[C](nil), opts.Predicates...)
	w.wait = inf.WaitForSync
	w.stopped = inf.Stopped
	w.add = func(enqueue func(cache.Key, bool)) (func() error, error) {
		emit := func(e Event[C], objs ...C) {
			for _, p := range preds {
				if !p(e) {
					return
				}
			}
			bg := background(e)
			var first cache.Key
			n := 0
			add := func(k cache.Key) {
				if n > 0 && k == first {
					return // the same owner before and after an update
				}
				if n == 0 {
					first = k
				}
				n++
				enqueue(k, bg)
			}
			for _, o := range objs {
				if !isZero(o) {
					keys(o, add)
				}
			}
			if n == 0 {
				w.ignored.Add(1)
			} else {
				w.mapped.Add(1)
			}
		}
		reg, err := inf.AddHandler(handler.Funcs[C]{
			AddFunc: func(obj C, initial bool) {
				emit(Event[C]{Type: Added, Key: cache.KeyOf(obj), Object: obj, Initial: initial}, obj)
			},
			UpdateFunc: func(old, cur C) {
				emit(Event[C]{Type: Updated, Key: cache.KeyOf(cur), Object: cur, Old: old}, old, cur)
			},
			DeleteFunc: func(d handler.Deleted[C]) {
				if d.MovedOut {
					return // another replica's now; not a change of the child
				}
				emit(Event[C]{Type: Deleted, Key: d.Key, Object: d.Object, FinalStateUnknown: d.FinalStateUnknown}, d.Object)
			},
		})
		if err != nil {
			return nil, err
		}
		return func() error { return inf.RemoveHandler(reg) }, nil
	}
	return w
}

func isZero[C cache.Object](o C) bool {
	var zero C
	return any(o) == any(zero)
}

func isController(ref metav1.OwnerReference) bool {
	return ref.Controller != nil && *ref.Controller
}

// refKind is the group and kind of an owner reference (its apiVersion's
// version does not matter: an owner is the same object at every version).
func refKind(ref metav1.OwnerReference) schema.GroupKind {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return schema.GroupKind{Group: "\x00invalid", Kind: ref.Kind}
	}
	return schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
}

// OwnerIndex is the name of the index IndexOwners adds for owner. Its
// value for an object is the key (cache.Key.String) of the object's
// controller owner of that kind: in the object's namespace, or with none
// for a cluster-scoped owner.
func OwnerIndex(owner schema.GroupKind) string { return "reconcile.owner:" + owner.String() }

// IndexOwners adds OwnerIndex(owner) to inf if it has no such index yet;
// ownerScope is the owner kind's scope (unknown is taken as namespaced).
// It may be called while inf runs. Owned calls it, so a controller with an
// Owned watch reads an owner's children with OwnedBy.
func IndexOwners[C cache.Object](inf *typed.Informer[C], owner schema.GroupKind, ownerScope cache.Scope) error {
	if inf == nil {
		return ErrNilInformer
	}
	name := OwnerIndex(owner)
	if _, err := inf.Store().IndexValues(name); err == nil {
		return nil // indexed already, by another controller
	}
	err := inf.AddIndexers(cache.Indexers[C]{name: func(obj C) ([]string, error) {
		if k, ok := ownerKey(obj, owner, ownerScope); ok {
			return []string{k.String()}, nil
		}
		return nil, nil
	}})
	if errors.Is(err, cache.ErrIndexExists) {
		return nil // added meanwhile
	}
	return err
}

// OwnedBy returns the objects of inf whose controller owner of kind owner
// has the key ownerKey, from the index IndexOwners adds (Owned adds it):
// in time proportional to the children, never a scan of inf's cache. It
// fails with an error wrapping cache.ErrNoIndex if inf has no such index.
func OwnedBy[C cache.Object](inf *typed.Informer[C], owner schema.GroupKind, ownerKey cache.Key) ([]C, error) {
	if inf == nil {
		return nil, ErrNilInformer
	}
	return inf.Store().ByIndex(OwnerIndex(owner), ownerKey.String())
}

package factory

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// Errors of InformerFor and Register.
var (
	// ErrBadScope is wrapped by the errors of InformerFor for a Scope it
	// cannot serve: an invalid selector, or a Tweak without a TweakName.
	ErrBadScope = errors.New("factory: invalid scope")
	// ErrRegistered is returned by Register for a type that already has a
	// registered source or an informer.
	ErrRegistered = errors.New("factory: type already registered or in use")
)

// Scope says which objects of a type an informer holds. Two InformerFor
// calls for the same type and an equal Scope share one informer; any
// difference makes another informer, with a list and a watch of its own.
//
// Selectors are compared in their canonical form ("b=2,a=1" and "a=1, b=2"
// are one scope). A Tweak cannot be compared, so it is known by its
// TweakName: every caller that names the same tweak must pass the same
// function, and the first caller's is the one used.
type Scope struct {
	// Namespace limits the informer to one namespace; "" means every
	// namespace, and is the only choice for a cluster-scoped resource.
	Namespace string
	// Namespaces, if set, limits the informer to a set of namespaces
	// that may change while it runs: one list and watch per namespace,
	// one cache (source.InNamespaces). Scopes share an informer when
	// they name the same *source.Namespaces. It excludes Namespace.
	Namespaces *source.Namespaces
	// LabelSelector and FieldSelector restrict the informer to the
	// objects they select, as in kubectl; see typed.Options.
	LabelSelector, FieldSelector string
	// Tweak, if set, changes the options of every list and watch request
	// after the selectors are set (typed.Options.TweakListOptions). It
	// requires a TweakName.
	Tweak func(*metav1.ListOptions)
	// TweakName names Tweak in the sharing key and in the informer's
	// name. It must be set with Tweak, and only with it.
	TweakName string
	// Shard restricts the informer to one shard (typed.Options.Shard;
	// package sharding makes them); scopes with the same selector share
	// an informer.
	Shard typed.Shard
}

// key identifies a shared informer: T and the canonical scope.
type key struct {
	typ                              reflect.Type
	namespace, labels, fields, tweak string
	shard                            string
	namespaces                       *source.Namespaces
}

// keyOf checks s and returns its key for T; its errors are InformerFor's.
func keyOf[T cache.Object](s Scope) (key, error) {
	k := key{typ: reflect.TypeFor[T](), namespace: s.Namespace, tweak: s.TweakName, namespaces: s.Namespaces}
	if s.Shard != nil {
		k.shard = s.Shard.Selector()
	}
	bad := func(format string, args ...any) (key, error) {
		return key{}, fmt.Errorf("%w: InformerFor[%v]: "+format, append([]any{ErrBadScope, k.typ}, args...)...)
	}
	ls, err := labels.Parse(s.LabelSelector)
	if err != nil {
		return bad("LabelSelector %q: %w", s.LabelSelector, err)
	}
	k.labels = ls.String()
	fs, err := fields.ParseSelector(s.FieldSelector)
	if err != nil {
		return bad("FieldSelector %q: %w", s.FieldSelector, err)
	}
	k.fields = fs.String()
	switch {
	case s.Namespaces != nil && s.Namespace != "":
		return bad("Namespace %q and a set of Namespaces: give one", s.Namespace)
	case s.Tweak != nil && s.TweakName == "":
		return bad("a Tweak needs a TweakName: informers are shared by scope, and two functions cannot be compared, so the name tells them apart")
	case s.Tweak == nil && s.TweakName != "":
		return bad("TweakName %q without a Tweak", s.TweakName)
	}
	return k, nil
}

// describe is the informer's name: the resource and what limits it, such
// as "pods in shop, labels app=web".
func (k key) describe(resource string) string {
	var parts []string
	if k.namespace != "" {
		parts = append(parts, "namespace "+k.namespace)
	}
	if k.namespaces != nil {
		parts = append(parts, "namespaces "+k.namespaces.String())
	}
	if k.labels != "" {
		parts = append(parts, "labels "+k.labels)
	}
	if k.fields != "" {
		parts = append(parts, "fields "+k.fields)
	}
	if k.tweak != "" {
		parts = append(parts, "tweak "+k.tweak)
	}
	if k.shard != "" {
		parts = append(parts, "shard "+k.shard)
	}
	if len(parts) == 0 {
		return resource
	}
	return resource + " (" + strings.Join(parts, ", ") + ")"
}

// Register makes newSource the source of every informer of T the factory
// creates, instead of the REST source over the factory's config: for
// clientsets (fake ones in unit tests), client-go lister-watchers, or any
// other source.
//
//	err := factory.Register(f, func(s factory.Scope) (source.Source[*corev1.Pod], error) {
//		return source.FromClient[*corev1.Pod](cs.CoreV1().Pods(s.Namespace))
//	})
//
// newSource gets the informer's Scope and must honour its Namespace; the
// informer itself sets the selectors and the tweak on every request. It is
// called once per informer, from InformerFor, whose error wraps its error.
// Register fails for a nil newSource, and with ErrRegistered for a T that
// has a registered source or an informer already.
func Register[T cache.Object](f *Factory, newSource func(Scope) (source.Source[T], error)) error {
	if f == nil {
		return errors.New("factory: Register: nil factory")
	}
	if newSource == nil {
		return fmt.Errorf("factory: Register[%v]: nil source function", reflect.TypeFor[T]())
	}
	typ := reflect.TypeFor[T]()
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.sources[typ]; ok {
		return fmt.Errorf("%w: Register[%v]: it has a source", ErrRegistered, typ)
	}
	for k := range f.informers {
		if k.typ == typ {
			return fmt.Errorf("%w: Register[%v]: the factory has an informer of it", ErrRegistered, typ)
		}
	}
	f.sources[typ] = newSource
	return nil
}

// InformerFor returns the factory's informer of T in scope s, creating it
// on first use, and a release function. Callers with the same T and an
// equal Scope get the same *typed.Informer and share its one list and
// watch; a different Scope gets an informer of its own. An informer asked
// for while the factory runs is started at once; before Start, it starts
// with Start.
//
// Every caller calls release once it no longer needs the informer (more
// calls do nothing); when the last one does, the informer stops (its watch
// ends, its goroutines exit, without release waiting for them) and the
// factory forgets it, so its cache can be collected once nothing else
// refers to it, and a later InformerFor makes a new one. A caller that
// needs the informer for the factory's whole life may drop release.
//
// It fails, with nothing to release, for an invalid scope (ErrBadScope),
// a T that is not in the scheme or not served by the server, a namespace
// for a cluster-scoped resource, an error of T's registered source, and
// ErrNoConfig or typed.ErrStopped. Add handlers and indexes to the informer
// (AddHandler, AddIndexers); do not Run it.
func InformerFor[T cache.Object](f *Factory, s Scope) (inf *typed.Informer[T], release func(), err error) {
	if f == nil {
		return nil, nil, errors.New("factory: InformerFor: nil factory")
	}
	k, err := keyOf[T](s)
	if err != nil {
		return nil, nil, err
	}
	f.mu.Lock()
	e, err := f.shareLocked(k)
	newSource, defaults := f.sources[k.typ], f.defaults[k.typ]
	f.mu.Unlock()
	if err != nil || e != nil {
		return sharedResult[T](f, e, err)
	}
	if newSource == nil && f.clientsets != nil {
		fn, err := clientsetSource[T](f.clientsets)
		if err != nil {
			return nil, nil, informerForError(k.typ, err)
		}
		newSource = fn
	}

	// Made without the lock: discovery may take a round trip. Two callers
	// racing for a new key both make one; the second to insert uses the
	// first's and drops its own, which never ran.
	made, err := newShared(f, k, s, newSource, optionsFor[T](f, defaults))
	if err != nil {
		return nil, nil, informerForError(k.typ, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, err := f.shareLocked(k); err != nil || e != nil {
		return sharedResult[T](f, e, err)
	}
	made.refs = 1
	f.informers[k] = made
	f.addedLocked(made)
	if f.state == running {
		f.startLocked(made)
	}
	return made.inf, f.releaser(made), nil
}

// shareLocked returns the informer of k with one more user, nil if there
// is none, or ErrStopped.
func (f *Factory) shareLocked(k key) (*sharedBase, error) {
	if f.state == stopped {
		return nil, typed.ErrStopped
	}
	e, ok := f.informers[k]
	if !ok {
		return nil, nil
	}
	b := e.base()
	b.refs++
	return b, nil
}

// sharedResult turns what shareLocked found into InformerFor's results.
func sharedResult[T cache.Object](f *Factory, b *sharedBase, err error) (*typed.Informer[T], func(), error) {
	if err != nil {
		return nil, nil, informerForError(reflect.TypeFor[T](), err)
	}
	e, ok := b.self.(*shared[T])
	if !ok { // cannot happen: the key holds the type
		return nil, nil, fmt.Errorf("factory: InformerFor[%v]: informer of type %T under its key", reflect.TypeFor[T](), b.self)
	}
	return e.inf, f.releaser(e), nil
}

// informerForError names InformerFor and T in err, once: after one of
// the package's sentinels, or before another package's error.
func informerForError(typ reflect.Type, err error) error {
	if err == ErrNoConfig || err == typed.ErrStopped {
		return fmt.Errorf("%w: InformerFor[%v]", err, typ)
	}
	return fmt.Errorf("factory: InformerFor[%v]: %w", typ, err)
}

// releaser returns a release function for one user of e.
func (f *Factory) releaser(e entry) func() {
	var once sync.Once
	return func() { once.Do(func() { f.release(e) }) }
}

// release drops one user of e and stops and forgets e after the last.
func (f *Factory) release(e entry) {
	b := e.base()
	f.mu.Lock()
	defer f.mu.Unlock()
	b.refs--
	if b.refs > 0 {
		return
	}
	if cur, ok := f.informers[b.key]; ok && cur == e {
		delete(f.informers, b.key)
		f.removedLocked(e)
	}
	if b.cancel != nil {
		b.cancel()
	}
}

// sharedBase is the part of a shared informer the factory manages under
// its lock, whatever T is.
type sharedBase struct {
	key    key
	self   entry
	refs   int                // users; guarded by Factory.mu
	cancel context.CancelFunc // stops the informer once started; guarded by Factory.mu
}

func (b *sharedBase) base() *sharedBase { return b }

// shared is a shared informer of T.
type shared[T cache.Object] struct {
	sharedBase
	inf *typed.Informer[T]
}

func (e *shared[T]) name() string                  { return e.inf.Name() }
func (e *shared[T]) syncer() typed.Syncer          { return e.inf }
func (e *shared[T]) run(ctx context.Context) error { return e.inf.Run(ctx) }
func (e *shared[T]) view() Informer                { return view[T]{e.inf} }

// sourceFor makes the source of an informer in scope s, of one namespace
// or all: registered, or REST over the factory's config.
func sourceFor[T cache.Object](f *Factory, s Scope, newSource any, keepManagedFields bool) (source.Source[T], error) {
	switch {
	case newSource != nil:
		fn, ok := newSource.(func(Scope) (source.Source[T], error))
		if !ok { // cannot happen: Register stores by T
			return nil, fmt.Errorf("factory: registered source of type %T", newSource)
		}
		src, err := fn(s)
		if err != nil {
			return nil, fmt.Errorf("registered source: %w", err)
		}
		if err := source.Check(src); err != nil {
			return nil, fmt.Errorf("registered source: %w", err)
		}
		return src, nil
	case f.cfg == nil:
		return nil, ErrNoConfig
	}
	ropts := source.RESTOptions{Scheme: f.opts.Scheme, Mapper: f.mapper, HTTPClient: f.client, Namespace: s.Namespace,
		DropAnnotations: f.opts.DropAnnotations, KeepManagedFields: keepManagedFields}
	src, err := source.FromConfig[T](f.cfg, ropts)
	if rm, ok := f.mapper.(meta.ResettableRESTMapper); ok && meta.IsNoMatchError(err) {
		// The kind may have been served since the mapper last
		// discovered (a CRD created after): discover again, once.
		rm.Reset()
		src, err = source.FromConfig[T](f.cfg, ropts)
	}
	if errors.Is(err, source.ErrUnknownKind) {
		return nil, fmt.Errorf("%w (factory: add the type to Options.Scheme, or give it a source with Register)", err)
	}
	return src, err
}

// newShared makes the informer of k: its source (registered, or REST over
// the factory's config; one per namespace of a set), bounded by the
// factory's list permits, with opts (optionsFor) and the scope's own.
func newShared[T cache.Object](f *Factory, k key, s Scope, newSource any, opts typed.Options[T]) (*shared[T], error) {
	build := func() (source.Source[T], error) {
		var src source.Source[T]
		var err error
		if s.Namespaces != nil {
			src, err = source.InNamespaces(s.Namespaces, func(ns string) (source.Source[T], error) {
				one := s
				one.Namespace, one.Namespaces = ns, nil
				return sourceFor[T](f, one, newSource, opts.KeepManagedFields)
			})
		} else {
			src, err = sourceFor[T](f, s, newSource, opts.KeepManagedFields)
		}
		if err != nil {
			return nil, err
		}
		return limit(src, f.sem), nil
	}
	src, err := build()
	if f.checks != nil && newSource == nil && (err == nil || meta.IsNoMatchError(err)) {
		// Over the config, following discovery: a kind not served yet
		// makes a parked informer rather than an error.
		gvk, kerr := source.KindOf[T](source.RESTOptions{Scheme: f.opts.Scheme})
		if kerr != nil {
			return nil, kerr
		}
		if err != nil {
			src = nil
		}
		src, err = follow(f, gvk, src, build, opts.KeepManagedFields), nil
	}
	if err != nil {
		return nil, err
	}
	resource := source.ResourceOf(src).String()
	if resource == "" {
		resource = "objects"
	}
	name := k.describe(resource)
	opts.Name = name
	opts.LabelSelector, opts.FieldSelector = k.labels, k.fields
	opts.TweakListOptions = s.Tweak
	opts.Shard = s.Shard
	if opts.WarmStart == nil {
		opts.WarmStart = warmFor(f.opts.WarmStart, k, name, src)
	}
	inf, err := typed.NewInformer(src, opts)
	if err != nil {
		return nil, err
	}
	e := &shared[T]{sharedBase: sharedBase{key: k}, inf: inf}
	e.self = e
	return e, nil
}

// KindOf returns the GroupVersionKind of T as f knows it: its
// Options.Scheme's registration, or a built-in type's own. A reconciler
// uses it for the owner references it writes, and manager.Owns for the
// kind of the owner it maps children to.
func KindOf[T cache.Object](f *Factory) (schema.GroupVersionKind, error) {
	if f == nil {
		return schema.GroupVersionKind{}, errors.New("factory: KindOf: nil factory")
	}
	gvk, err := source.KindOf[T](source.RESTOptions{Scheme: f.opts.Scheme})
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("factory: %w", err)
	}
	return gvk, nil
}

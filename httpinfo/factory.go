package httpinfo

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/typedinformer/informer/factory"
)

// factoryInformer is a factory's informer as the registry reads it.
type factoryInformer struct{ factory.Informer }

func (f factoryInformer) objects() int { return f.Len() }

// AddFactory registers every informer of f on r, the informers f has and
// each one it makes later, and removes each one f stops and forgets after
// its last release: one call puts all of a program's shared informers on
// the debug page and the readiness check, whoever asks for them. Handlers
// are not known to the factory: register those with Entry.AddHandler
// (Lookup finds a factory informer's entry by name).
//
// An informer whose name is registered already (an informer of r added
// with Add under that name) is registered as "name #2" (#3...). stop ends
// the following; the entries stay until removed.
func AddFactory(r *Registry, f *factory.Factory) (stop func(), err error) {
	if r == nil {
		return nil, ErrNilRegistry
	}
	if f == nil {
		return nil, fmt.Errorf("%w (nil *factory.Factory)", ErrNilInformer)
	}
	var mu sync.Mutex // the factory calls one at a time; this guards entries for stop
	entries := map[factory.Informer]*Entry{}
	return f.Follow(func(inf factory.Informer) {
		e := r.addUnique(factoryInformer{inf}, inf.Name())
		mu.Lock()
		entries[inf] = e
		mu.Unlock()
	}, func(inf factory.Informer) {
		mu.Lock()
		e, ok := entries[inf]
		delete(entries, inf)
		mu.Unlock()
		if ok {
			_ = r.Remove(e) // ErrUnknown: removed by hand already
		}
	}), nil
}

// addUnique registers inf under name, or under "name #2" (#3...) when
// name is taken.
func (r *Registry) addUnique(inf informer, name string) *Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	taken := func(n string) bool {
		return slices.ContainsFunc(r.entries, func(o *Entry) bool { return o.name == n })
	}
	unique := name
	for i := 2; taken(unique); i++ {
		unique = fmt.Sprintf("%s #%d", name, i)
	}
	e := &Entry{reg: r, inf: inf, name: unique, added: time.Now()}
	r.entries = append(r.entries, e)
	return e
}

// Lookup returns the entry registered under name, and whether there is
// one: to add handlers to an informer AddFactory registered.
func (r *Registry) Lookup(name string) (*Entry, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(r.entries, func(e *Entry) bool { return e.name == name })
	if i < 0 {
		return nil, false
	}
	return r.entries[i], true
}

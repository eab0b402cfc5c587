package factory

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// DefaultDiscoveryInterval is how often a parked informer's group version
// is looked up when Options.DiscoveryInterval is 0.
const DefaultDiscoveryInterval = time.Second

// ErrNotServed is wrapped by the error a following informer reports once
// when it parks (Options.FollowDiscovery): the server does not serve its
// kind, because a CRD is not installed yet or was removed. It wraps
// source.ErrParked: the informer's next request waits for the kind
// rather than backing off.
var ErrNotServed = fmt.Errorf("factory: kind not served (%w)", source.ErrParked)

// followed is the source of an informer that follows discovery: it lists
// and watches through the source over the config while the server serves
// the kind, and parks while it does not. The first request that finds
// the kind gone (404) fails once with ErrNotServed, which the informer
// reports; every later request waits, sending nothing but one discovery
// lookup of the group version per interval, until discovery lists the kind
// and a request of a new source over it no longer gets a 404. A request
// that waits holds no list permit: the source it resolves is the one
// bounded by the factory's permits.
type followed[T cache.Object] struct {
	gvk     schema.GroupVersionKind
	checks  *discoveryChecks
	every   time.Duration
	resolve func() (source.Source[T], error) // a source over the kind's current mapping
	info    source.Info

	mu   sync.Mutex
	cur  source.Source[T] // nil while parked
	told bool             // ErrNotServed was returned for this park
	// resumed: cur is the source of a resume that has not been answered
	// yet; a 404 then is its handler not up yet, and parks quietly.
	resumed bool
}

// follow wraps src, the source of kind gvk over the config, or nil if the
// kind was not served when the informer was made.
func follow[T cache.Object](f *Factory, gvk schema.GroupVersionKind, src source.Source[T], resolve func() (source.Source[T], error), keepManagedFields bool) *followed[T] {
	s := &followed[T]{gvk: gvk, checks: f.checks, every: f.discoveryInterval(), resolve: resolve, cur: src}
	if src != nil {
		s.info = src.Info()
	} else {
		// Named as the server will most likely name it; the scope is told
		// from the objects (cache.ScopeUnknown) until then.
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		s.info = source.Info{Resource: source.Resource{GroupResource: plural.GroupResource()},
			WatchList: true, Exclusive: true, NoManagedFields: !keepManagedFields}
	}
	return s
}

// Info implements source.Source: the source's at construction, or, for a
// kind not served then, what the source over it will be.
func (s *followed[T]) Info() source.Info { return s.info }

// List implements source.Source.
func (s *followed[T]) List(ctx context.Context, opts metav1.ListOptions) (source.List[T], error) {
	return call(ctx, s, source.PhaseList, func(src source.Source[T]) (source.List[T], error) { return src.List(ctx, opts) })
}

// ListItems implements source.ItemLister, through the current source's
// ListItems, or its List if it has none.
func (s *followed[T]) ListItems(ctx context.Context, opts metav1.ListOptions, yield func(T) error) (source.List[T], error) {
	return call(ctx, s, source.PhaseList, func(src source.Source[T]) (source.List[T], error) {
		if il, ok := src.(source.ItemLister[T]); ok {
			return il.ListItems(ctx, opts, yield)
		}
		l, err := src.List(ctx, opts)
		if err != nil {
			return l, err
		}
		for _, item := range l.Items {
			if err := yield(item); err != nil {
				return source.List[T]{}, err
			}
		}
		l.Items = nil
		return l, nil
	})
}

// Watch implements source.Source; a 404 in the stream parks the source too.
func (s *followed[T]) Watch(ctx context.Context, opts metav1.ListOptions) (source.Watcher[T], error) {
	phase := source.PhaseWatchStart
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		phase = source.PhaseList // a streaming list lists
	}
	return call(ctx, s, phase, func(src source.Source[T]) (source.Watcher[T], error) {
		w, err := src.Watch(ctx, opts)
		if err != nil || w == nil {
			return w, err
		}
		return &followedWatcher[T]{w: w, s: s, src: src}, nil
	})
}

// call runs fn on the current source, parking on a 404 as followed says.
//
// A resume never watches from a resourceVersion of before the park: the
// kind may have been removed and made again, and what the informer saw
// of its previous life says nothing of this one (such a watch is also
// slow to be answered, by a watch cache still starting). A plain watch
// start that resumes fails with a 410 and ErrParked instead, without a
// request, so that the informer lists the kind anew at once.
func call[T cache.Object, R any](ctx context.Context, s *followed[T], p source.Phase, fn func(source.Source[T]) (R, error)) (R, error) {
	var zero R
	s.mu.Lock()
	src, told, resumed := s.cur, s.told, s.resumed
	if src == nil && !told {
		s.told = true
	}
	s.mu.Unlock()
	wait, gone := s.every, false
	if src != nil {
		r, err := fn(src)
		if !apierrors.IsNotFound(err) {
			if err == nil && resumed {
				s.mu.Lock()
				s.resumed = false
				s.mu.Unlock()
			}
			return r, err
		}
		if !resumed {
			return zero, s.park(src, p, err)
		}
		// Listed in discovery, its handler not up yet: still parked, and
		// said so already.
		s.mu.Lock()
		if s.cur == src {
			s.cur, s.told, s.resumed = nil, true, false
		}
		s.mu.Unlock()
		wait, gone = s.every/5, true
	} else if !told {
		return zero, s.notServed(p, nil)
	}
	for {
		var err error
		if gone, err = s.waitServed(ctx, wait, gone); err != nil {
			return zero, &source.Error{Phase: p, Err: fmt.Errorf("%w: waiting for %v to be served: %w", ErrNotServed, s.gvk, err)}
		}
		src, err := s.resolve()
		if meta.IsNoMatchError(err) {
			continue // discovery is ahead of the factory's mapper: next lookup
		}
		if err != nil {
			return zero, err
		}
		if p == source.PhaseWatchStart {
			s.mu.Lock()
			s.cur, s.told, s.resumed = src, false, true
			s.mu.Unlock()
			return zero, &source.Error{Phase: p, Err: fmt.Errorf("%w: %w", source.ErrParked,
				apierrors.NewResourceExpired(fmt.Sprintf("%v is served again after a park: list it anew", s.gvk)))}
		}
		r, err := fn(src)
		if apierrors.IsNotFound(err) {
			// Listed in discovery, not served by its handler: stay parked,
			// quietly. After discovery said "gone", the kind is coming back
			// (its handler starts a moment after discovery lists it): look
			// again soon. Otherwise discovery has not caught up with the
			// removal yet: look again later and later.
			if gone {
				wait = s.every / 5
			} else {
				wait = min(2*wait, 16*s.every)
			}
			continue
		}
		s.mu.Lock()
		s.cur, s.told, s.resumed = src, false, false
		s.mu.Unlock()
		return r, err
	}
}

// park drops src, the source that got the 404 err, and returns the one
// error of the park.
func (s *followed[T]) park(src source.Source[T], p source.Phase, err error) error {
	s.mu.Lock()
	first := s.cur == src
	if first {
		s.cur, s.told = nil, true
	}
	s.mu.Unlock()
	if !first { // another request parked it and said so
		return &source.Error{Phase: p, Err: fmt.Errorf("%w: %v", ErrNotServed, s.gvk)}
	}
	return s.notServed(p, err)
}

// notServed is the error a park is reported with, once. It does not wrap
// the server's 404: a following informer goes on waiting for its kind
// (an informer's WaitForSync ends at once on NotFound).
func (s *followed[T]) notServed(p source.Phase, cause error) error {
	why := "not served"
	if cause != nil {
		why = fmt.Sprintf("no longer served (%v)", cause)
	}
	return &source.Error{Phase: p, Err: fmt.Errorf("%w: %v is %s: parked, looking it up in discovery every %v", ErrNotServed, s.gvk, why, s.every)}
}

// waitServed returns once discovery lists the kind, looking first after
// wait, then every interval, each with a tenth of jitter; gone tells
// whether discovery said the kind was not served, this time or before.
func (s *followed[T]) waitServed(ctx context.Context, wait time.Duration, gone bool) (bool, error) {
	for {
		t := time.NewTimer(wait + time.Duration(rand.Int64N(int64(wait)/10+1)))
		select {
		case <-ctx.Done():
			t.Stop()
			return gone, ctx.Err()
		case <-t.C:
		}
		if s.checks.serves(ctx, s.gvk, min(wait, s.every)/2) {
			return gone, nil
		}
		wait, gone = s.every, true
	}
}

// followedWatcher parks its source on a 404 in the stream.
type followedWatcher[T cache.Object] struct {
	w   source.Watcher[T]
	s   *followed[T]
	src source.Source[T]
}

func (w *followedWatcher[T]) Next(ctx context.Context) (source.Event[T], error) {
	ev, err := w.w.Next(ctx)
	if apierrors.IsNotFound(err) {
		return ev, w.s.park(w.src, source.PhaseWatch, err)
	}
	return ev, err
}

func (w *followedWatcher[T]) Stop() { w.w.Stop() }

// discoveryChecks looks up group versions in discovery for the factory's
// parked informers: one request per group version for all of them, at
// most once in a while.
type discoveryChecks struct {
	client rest.Interface // the discovery client's
	mu     sync.Mutex
	gvs    map[schema.GroupVersion]*gvCheck
}

type gvCheck struct {
	mu    sync.Mutex // held during the lookup: the others wait for its answer
	at    time.Time
	kinds []string // served with list and watch
}

// serves reports whether discovery lists kind gvk with the verbs an
// informer needs, from a lookup at most fresh old. A failed lookup is
// "no": the informer stays parked and looks again later.
func (d *discoveryChecks) serves(ctx context.Context, gvk schema.GroupVersionKind, fresh time.Duration) bool {
	gv := gvk.GroupVersion()
	d.mu.Lock()
	c := d.gvs[gv]
	if c == nil {
		c = &gvCheck{}
		d.gvs[gv] = c
	}
	d.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) >= fresh {
		kinds := d.lookup(ctx, gv)
		if ctx.Err() != nil {
			return false // this caller stopped: its "no" is not the server's, keep none
		}
		c.kinds, c.at = kinds, time.Now()
	}
	return slices.Contains(c.kinds, gvk.Kind)
}

// lookup reads the resources of gv; none if it is not served.
func (d *discoveryChecks) lookup(ctx context.Context, gv schema.GroupVersion) []string {
	path := "/apis/" + gv.String()
	if gv.Group == "" {
		path = "/api/" + gv.Version
	}
	body, err := d.client.Get().AbsPath(path).Do(ctx).Raw()
	if err != nil {
		return nil
	}
	var list metav1.APIResourceList
	if json.Unmarshal(body, &list) != nil {
		return nil
	}
	var kinds []string
	for _, r := range list.APIResources {
		if !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") || strings.Contains(r.Name, "/") {
			continue // a subresource, or not for informers
		}
		kinds = append(kinds, r.Kind)
	}
	return kinds
}

package typed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/typedinformer/informer/cache"
)

// ErrInconsistent is wrapped by every *ConsistencyError.
var ErrInconsistent = errors.New("typed: cache diverged from the server")

// ConsistencyError is a divergence Options.ConsistencyCheck found between
// the cache and the server. The informer repairs it with a relist (a
// quorum read) and reports it once.
type ConsistencyError struct {
	// ResourceVersion is the version the server's list was read at.
	ResourceVersion string
	// Exact is true if the cache was compared at that same version: then
	// every key counts. Otherwise only the objects both hold at versions
	// no newer than both sides' were compared, and Missing and Extra are
	// empty.
	Exact bool
	// Missing are keys the server has and the cache lacks; Extra keys the
	// cache has and the server lacks; Stale keys both have at different
	// resourceVersions. Each is sorted, and cut at 100 keys.
	Missing, Extra, Stale []cache.Key
	// Count is the number of divergent keys before the cut.
	Count int
}

func (e *ConsistencyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v at resourceVersion %s (exact %v): %d keys", ErrInconsistent, e.ResourceVersion, e.Exact, e.Count)
	for _, part := range []struct {
		name string
		keys []cache.Key
	}{{"missing", e.Missing}, {"extra", e.Extra}, {"stale", e.Stale}} {
		if len(part.keys) > 0 {
			fmt.Fprintf(&b, "; %s %v", part.name, part.keys)
		}
	}
	b.WriteString("; relisting")
	return b.String()
}

// Unwrap returns ErrInconsistent.
func (e *ConsistencyError) Unwrap() error { return ErrInconsistent }

// maxDivergentKeys bounds each key list of a ConsistencyError.
const maxDivergentKeys = 100

// Checks counts what the informer's safety nets found: quarantined
// objects, consistency checks and mutations (see Options.OnRefused,
// Options.ConsistencyCheck, Options.DetectMutations).
type Checks struct {
	// Refused counts the object versions quarantined.
	Refused int
	// ConsistencyChecks counts comparisons with the server; Divergences
	// counts those that found a divergence (each repaired by a relist).
	ConsistencyChecks, Divergences int
	// LastDivergence is the last divergence found; nil if none.
	LastDivergence *ConsistencyError
	// Mutations counts the mutations of cached objects found; the first
	// 100 are in MutationErrors.
	Mutations      int
	MutationErrors []*MutationError
}

// consistency is the state of the consistency check.
type consistency struct {
	mu       sync.Mutex
	checks   int
	diverged int
	last     *ConsistencyError
}

// checks returns the informer's Checks.
func (inf *Informer[T]) checks() Checks {
	c := Checks{Refused: int(inf.poison.refused.Load())}
	inf.consistent.mu.Lock()
	c.ConsistencyChecks, c.Divergences, c.LastDivergence = inf.consistent.checks, inf.consistent.diverged, inf.consistent.last
	inf.consistent.mu.Unlock()
	if inf.mutations != nil {
		c.MutationErrors, c.Mutations = inf.mutations.mutations()
	}
	return c
}

// consistencyLoop compares the cache with the server every
// Options.ConsistencyCheck, stretched by up to a quarter at random each
// time, until ctx ends. The period counts from the end of one check to
// the start of the next. The jitter keeps the checks (each a list) of
// informers started together, such as a fleet's clusters, from falling
// into step.
func (inf *Informer[T]) consistencyLoop(ctx context.Context) {
	t := time.NewTimer(wait.Jitter(inf.opts.ConsistencyCheck, 0.25))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !inf.consistencyCheck(ctx) {
			return
		}
		t.Reset(wait.Jitter(inf.opts.ConsistencyCheck, 0.25))
	}
}

// consistencyCheck runs one check of a synced cache, reports what it
// found and relists on a divergence; false once ctx has ended.
func (inf *Informer[T]) consistencyCheck(ctx context.Context) bool {
	if !inf.HasSynced() {
		return true
	}
	div, err := inf.checkConsistency(ctx)
	switch {
	case ctx.Err() != nil:
		return false
	case err != nil:
		inf.reportAsync(fmt.Errorf("consistency check: %w", err))
	case div != nil:
		inf.reportAsync(div)
		inf.refl.Relist()
	}
	return true
}

// snapshotAt returns the cache's keys and resourceVersions and the
// version the cache was at, and whether they go together exactly: the
// store did not change between the writer's last batch and the snapshot.
func (inf *Informer[T]) snapshotAt() (map[cache.Key]string, string, bool) {
	inf.seen.mu.Lock()
	rv, rev := inf.seen.rv, inf.seen.rev
	inf.seen.mu.Unlock()
	objs, srev := inf.store.Snapshot()
	keys := make(map[cache.Key]string, len(objs))
	for _, o := range objs {
		keys[cache.KeyOf(o)] = o.GetResourceVersion()
	}
	return keys, rv, rev != 0 && rev == srev
}

// checkConsistency compares the cache with a paged list of the server at
// the cache's resourceVersion and returns the divergence, if any.
// Quarantined objects, which differ on purpose, are left out.
func (inf *Informer[T]) checkConsistency(ctx context.Context) (*ConsistencyError, error) {
	var (
		cached map[cache.Key]string
		rv     string
		exact  bool
	)
	for range 10 { // an exact snapshot, unless the cache keeps moving
		if cached, rv, exact = inf.snapshotAt(); exact {
			break
		}
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
	if rv == "" {
		return nil, nil // nothing to compare at
	}
	listRV, server, err := inf.serverKeys(ctx, rv, metav1.ResourceVersionMatchExact)
	if err != nil && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)) {
		exact = false // the version is compacted away: the server's newer state
		listRV, server, err = inf.serverKeys(ctx, rv, metav1.ResourceVersionMatchNotOlderThan)
	}
	if err != nil {
		return nil, err
	}
	exact = exact && listRV == rv
	for _, q := range inf.poison.list() {
		delete(cached, q.Key)
		delete(server, q.Key)
	}
	div := compareKeys(cached, server, rv, listRV, exact)
	inf.consistent.mu.Lock()
	defer inf.consistent.mu.Unlock()
	inf.consistent.checks++
	if div != nil {
		inf.consistent.diverged++
		inf.consistent.last = div
	}
	return div, nil
}

// serverKeys lists the server's keys and resourceVersions at rv, page by
// page, with the informer's selectors and shard.
func (inf *Informer[T]) serverKeys(ctx context.Context, rv string, match metav1.ResourceVersionMatch) (string, map[cache.Key]string, error) {
	page := inf.opts.PageSize
	if page <= 0 {
		page = 500
	}
	opts := metav1.ListOptions{ResourceVersion: rv, ResourceVersionMatch: match, Limit: page}
	out := map[cache.Key]string{}
	for {
		l, err := inf.src.List(ctx, inf.refl.CheckRequest(opts))
		if err != nil {
			return "", nil, err
		}
		for _, o := range l.Items {
			if inf.refl.InScope(o) { // a server that ignores the shard selector
				out[cache.KeyOf(o)] = o.GetResourceVersion()
			}
		}
		if l.Continue == "" {
			return l.ResourceVersion, out, nil
		}
		opts = metav1.ListOptions{Limit: page, Continue: l.Continue}
	}
}

// compareKeys compares the cache, at cacheRV or later, with the server at
// listRV. Exact: both are at the same version, every key counts.
// Otherwise only objects both hold at versions no newer than either side
// can be compared: both sides must agree on them.
func compareKeys(cached, server map[cache.Key]string, cacheRV, listRV string, exact bool) *ConsistencyError {
	div := &ConsistencyError{ResourceVersion: listRV, Exact: exact}
	bound := cacheRV
	if c, err := resourceversion.CompareResourceVersion(listRV, cacheRV); err == nil && c < 0 {
		bound = listRV
	}
	notNewer := func(rv string) bool {
		c, err := resourceversion.CompareResourceVersion(rv, bound)
		return err == nil && c <= 0
	}
	for k, srv := range server {
		crv, ok := cached[k]
		switch {
		case !ok && exact:
			div.Missing = append(div.Missing, k)
		case !ok:
		case crv == srv:
		case exact || (notNewer(crv) && notNewer(srv)):
			div.Stale = append(div.Stale, k)
		}
	}
	if exact {
		for k := range cached {
			if _, ok := server[k]; !ok {
				div.Extra = append(div.Extra, k)
			}
		}
	}
	div.Count = len(div.Missing) + len(div.Extra) + len(div.Stale)
	if div.Count == 0 {
		return nil
	}
	for _, keys := range []*[]cache.Key{&div.Missing, &div.Extra, &div.Stale} {
		slices.SortFunc(*keys, func(a, b cache.Key) int { return strings.Compare(a.String(), b.String()) })
		if len(*keys) > maxDivergentKeys {
			*keys = (*keys)[:maxDivergentKeys]
		}
	}
	return div
}

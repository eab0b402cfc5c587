package source

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/objects"
)

// InNamespaces returns one source over the namespaces of set: each is
// listed and watched by a source of its own, made by each (called once
// per namespace, when the namespace is first listed), and the source
// hands them over as one collection, so that one informer, with one
// cache, one lister and one sync status, holds the objects of every
// namespace of the set. It is for the controller that may not list
// cluster-wide (RBAC grants it some namespaces only).
//
// A list reads the namespaces one after the other at one resourceVersion:
// the first at the version asked for, the others at exactly the version
// the first returned (ResourceVersionMatch=Exact), so the list is a
// snapshot of the set as a cluster-wide list would be. A watch is one
// watch per namespace, merged; each event carries in Progress the version
// through which every namespace's stream has been delivered, so that a
// wait for a write's resourceVersion (typed.Informer.WaitForResourceVersion)
// is not ended by another namespace's later event. A watch that ends is
// resumed namespace by namespace from what each delivered.
//
// When the set changes (Namespaces.Add, Remove, Set), the running watch
// ends with a 410 (Expired) and the informer lists the new set: the
// objects of a removed namespace leave the cache as deletions, those of
// an added one arrive as additions, and the rest stay cached (handlers
// get OnUpdate with the same object, as on a resync). A change while a
// list is read restarts the list.
//
// The source does not stream lists (its Info has no WatchList), and it
// serves one informer: it keeps where each namespace's stream is. It
// fails for a nil set or function, and for a namespace whose source
// cannot be made or says its resource is cluster-scoped.
func InNamespaces[T cache.Object](set *Namespaces, each func(namespace string) (Source[T], error)) (Source[T], error) {
	if set == nil {
		return nil, fmt.Errorf("%w: InNamespaces: nil set", ErrNamespaceSet)
	}
	if each == nil {
		return nil, errors.New("source: InNamespaces: nil source function")
	}
	s := &nsSource[T]{set: set, each: each, srcs: map[string]Source[T]{}}
	names := set.Names()
	for _, ns := range names {
		src, err := s.sourceFor(ns)
		if err != nil {
			return nil, fmt.Errorf("source: InNamespaces: %w", err)
		}
		if ns == names[0] {
			s.info = src.Info()
			s.info.Resource = ResourceOf(src)
		}
	}
	if s.info.Resource.Scope == cache.ScopeCluster {
		return nil, fmt.Errorf("%w: InNamespaces: %s is cluster-scoped: it has no namespaces", ErrNamespaceSet, s.info.Resource)
	}
	s.info.Resource.Scope = cache.ScopeNamespaced
	s.info.WatchList = false
	return s, nil
}

// nsSource is InNamespaces' source.
type nsSource[T cache.Object] struct {
	set  *Namespaces
	each func(string) (Source[T], error)
	info Info

	mu   sync.Mutex
	srcs map[string]Source[T] // by namespace, for the namespaces of the set
	// What the last complete list was of, and where each namespace's
	// stream is since: the watch resumes from there.
	listGen  uint64
	progress map[string]string
	handed   string // the newest version handed over: the list's, then the watch's watermark
}

func (s *nsSource[T]) Info() Info { return s.info }

// sourceFor returns ns's source, making it on first use.
func (s *nsSource[T]) sourceFor(ns string) (Source[T], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if src, ok := s.srcs[ns]; ok {
		return src, nil
	}
	src, err := s.each(ns)
	if err == nil && objects.IsNil(src) {
		err = ErrNilSource
	}
	if err != nil {
		return nil, fmt.Errorf("namespace %s: source: %w", ns, err)
	}
	s.srcs[ns] = src
	return src, nil
}

// forget drops the sources of namespaces no longer in names.
func (s *nsSource[T]) forget(names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := make(map[string]bool, len(names))
	for _, ns := range names {
		keep[ns] = true
	}
	for ns := range s.srcs {
		if !keep[ns] {
			delete(s.srcs, ns)
		}
	}
}

// setChanged is the error of a list or a watch that the set's change
// overtook: a 410, so that the informer lists the set again.
func setChanged(phase Phase, when string) error {
	return &Error{Phase: phase, Err: apierrors.NewResourceExpired("the namespace set changed " + when)}
}

// nsContinue is the continue token of a list of the set: the set's
// generation, the namespace being read, the list's version, and that
// namespace's own token.
type nsContinue struct {
	Gen uint64 `json:"g"`
	I   int    `json:"i"`
	RV  string `json:"rv,omitempty"`
	C   string `json:"c,omitempty"`
}

func (s *nsSource[T]) List(ctx context.Context, opts metav1.ListOptions) (List[T], error) {
	names, gen, _ := s.set.snapshot()
	var at nsContinue
	if opts.Continue != "" {
		b, err := base64.RawURLEncoding.DecodeString(opts.Continue)
		if err == nil {
			err = json.Unmarshal(b, &at)
		}
		if err != nil || at.I < 0 {
			return List[T]{}, &Error{Phase: PhaseList, Err: apierrors.NewBadRequest(fmt.Sprintf("not a continue token of a namespace set: %q", opts.Continue))}
		}
		if at.Gen != gen || at.I >= len(names) {
			return List[T]{}, setChanged(PhaseList, "during the list")
		}
	} else {
		s.forget(names)
	}
	var out List[T]
	for i := at.I; i < len(names); i++ {
		src, err := s.sourceFor(names[i])
		if err != nil {
			return List[T]{}, &Error{Phase: PhaseList, Err: err}
		}
		o := opts
		o.Continue = at.C
		if i > at.I || at.RV != "" || at.C != "" {
			// Every namespace after the first at the first one's version.
			o.ResourceVersion, o.ResourceVersionMatch = "", ""
			if at.C == "" && at.RV != "" {
				o.ResourceVersion, o.ResourceVersionMatch = at.RV, metav1.ResourceVersionMatchExact
			}
		}
		if opts.Limit > 0 {
			o.Limit = opts.Limit - int64(len(out.Items))
		}
		page, err := src.List(ctx, o)
		if err != nil {
			return List[T]{}, fmt.Errorf("namespace %s: %w", names[i], err)
		}
		if at.RV == "" {
			at.RV = page.ResourceVersion
		}
		out.Items = append(out.Items, page.Items...)
		out.Undecodable = append(out.Undecodable, page.Undecodable...)
		at.I, at.C = i, page.Continue
		if page.Continue == "" {
			at.I = i + 1
		}
		if at.I < len(names) && (page.Continue != "" || (opts.Limit > 0 && int64(len(out.Items)) >= opts.Limit)) {
			at.Gen = gen
			b, _ := json.Marshal(at) // a struct of numbers and strings
			out.ResourceVersion, out.Continue = at.RV, base64.RawURLEncoding.EncodeToString(b)
			return out, nil
		}
	}
	if s.set.generation() != gen {
		return List[T]{}, setChanged(PhaseList, "during the list")
	}
	s.mu.Lock()
	s.listGen = gen
	s.progress = make(map[string]string, len(names))
	for _, ns := range names {
		s.progress[ns] = at.RV
	}
	s.handed = at.RV
	s.mu.Unlock()
	out.ResourceVersion = at.RV
	return out, nil
}

func (s *nsSource[T]) Watch(ctx context.Context, opts metav1.ListOptions) (Watcher[T], error) {
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		return nil, &Error{Phase: PhaseWatchStart, Err: apierrors.NewBadRequest("a namespace set does not stream lists (sendInitialEvents): list it")}
	}
	names, gen, changed := s.set.snapshot()
	s.mu.Lock()
	listGen, handed := s.listGen, s.handed
	progress := make(map[string]string, len(names))
	for ns, rv := range s.progress {
		progress[ns] = rv
	}
	s.mu.Unlock()
	if opts.ResourceVersion != "" && listGen != gen {
		return nil, setChanged(PhaseWatchStart, "since the list")
	}
	// From the version last handed over, each namespace resumes from
	// where its own stream is; from any other, every namespace starts
	// there, as a watch of the API server would.
	resume := opts.ResourceVersion != "" && opts.ResourceVersion == handed
	if !resume {
		progress = map[string]string{}
		for _, ns := range names {
			progress[ns] = opts.ResourceVersion
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &nsWatcher[T]{
		src: s, gen: gen, changed: changed, cancel: cancel,
		events: make(chan nsEvent[T]), stopped: make(chan struct{}),
		progress: progress,
	}
	for _, ns := range names {
		src, err := s.sourceFor(ns)
		if err != nil {
			w.Stop()
			return nil, &Error{Phase: PhaseWatchStart, Err: err}
		}
		o := opts
		o.ResourceVersion = progress[ns]
		inner, err := src.Watch(wctx, o)
		if err != nil {
			w.Stop()
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
		w.wg.Add(1)
		go w.pump(wctx, ns, src, inner, o)
	}
	return w, nil
}

// nsWatcher merges the watches of the namespaces of a set.
type nsWatcher[T cache.Object] struct {
	src     *nsSource[T]
	gen     uint64
	changed <-chan struct{}
	cancel  context.CancelFunc
	events  chan nsEvent[T]
	stopped chan struct{}
	once    sync.Once
	wg      sync.WaitGroup

	// progress is where each namespace's stream is, as handed over by
	// Next (Next's alone; copied to the source as it moves).
	progress map[string]string
}

// nsEvent is one namespace's event or error.
type nsEvent[T cache.Object] struct {
	ns  string
	ev  Event[T]
	err error
}

// quickEnd is how long a namespace's watch must have lasted, or how many
// events it must have brought, for the watcher to reopen it itself when
// it ends; otherwise the merged watch ends, and the consumer's backoff
// applies.
const quickEnd = time.Second

// pump reads one namespace's watch into w.events; a watch that ends (the
// server's timeout) is reopened from the last version it brought.
func (w *nsWatcher[T]) pump(ctx context.Context, ns string, src Source[T], inner Watcher[T], opts metav1.ListOptions) {
	defer w.wg.Done()
	defer func() {
		if inner != nil {
			inner.Stop()
		}
	}()
	last := opts.ResourceVersion
	for {
		start, n := time.Now(), 0
		for {
			ev, err := inner.Next(ctx)
			if err == nil {
				n++
				if rv := ev.Object.GetResourceVersion(); rv != "" {
					last = rv
				}
			}
			if err != nil && errors.Is(err, ErrWatchClosed) && ctx.Err() == nil {
				break
			}
			if !w.send(nsEvent[T]{ns: ns, ev: ev, err: err}) {
				return
			}
			var u *UndecodableError
			if err != nil && !errors.As(err, &u) {
				return // the merged watch ends with the error
			}
		}
		inner.Stop()
		inner = nil
		if (n == 0 && time.Since(start) < quickEnd) || last == "" {
			w.send(nsEvent[T]{ns: ns, err: ErrWatchClosed})
			return
		}
		opts.ResourceVersion = last
		var err error
		if inner, err = src.Watch(ctx, opts); err != nil {
			w.send(nsEvent[T]{ns: ns, err: fmt.Errorf("namespace %s: %w", ns, err)})
			return
		}
	}
}

// send hands e to Next; false once the watcher is stopped.
func (w *nsWatcher[T]) send(e nsEvent[T]) bool {
	select {
	case w.events <- e:
		return true
	case <-w.stopped:
		return false
	}
}

func (w *nsWatcher[T]) Next(ctx context.Context) (Event[T], error) {
	select {
	case <-ctx.Done():
		return Event[T]{}, ctx.Err()
	case <-w.stopped:
		return Event[T]{}, ErrWatchClosed
	case <-w.changed:
		return Event[T]{}, setChanged(PhaseWatch, "while watching")
	case e := <-w.events:
		var u *UndecodableError
		switch {
		case e.err == nil:
			w.advance(e.ns, e.ev.Object.GetResourceVersion())
			e.ev.Progress = w.watermark()
			w.hand(e.ev.Progress)
			return e.ev, nil
		case errors.As(e.err, &u):
			// The stream goes on after it; the consumer takes the
			// version it names as its progress.
			w.advance(e.ns, u.ResourceVersion)
			if wm := w.watermark(); wm != "" {
				u.ResourceVersion = wm
				w.hand(wm)
			}
			return Event[T]{}, e.err
		case errors.Is(e.err, ErrWatchClosed):
			return Event[T]{}, ErrWatchClosed
		}
		return Event[T]{}, fmt.Errorf("namespace %s: %w", e.ns, e.err)
	}
}

// advance records that ns's stream has been handed over through rv.
func (w *nsWatcher[T]) advance(ns, rv string) {
	if rv == "" {
		return
	}
	w.progress[ns] = rv
	w.src.mu.Lock()
	if w.src.listGen == w.gen && w.src.progress != nil {
		w.src.progress[ns] = rv
	}
	w.src.mu.Unlock()
}

// hand records that wm, a watermark, was handed over: a watch from it
// resumes every namespace where it is.
func (w *nsWatcher[T]) hand(wm string) {
	if wm == "" {
		return
	}
	w.src.mu.Lock()
	if w.src.listGen == w.gen {
		w.src.handed = wm
	}
	w.src.mu.Unlock()
}

// watermark is the oldest of the namespaces' versions: every change up to
// it has been handed over. "" if the versions cannot be compared (not the
// API server's), and the consumer then takes each object's own.
func (w *nsWatcher[T]) watermark() string {
	low := ""
	for _, rv := range w.progress {
		if low == "" {
			low = rv
			continue
		}
		c, err := resourceversion.CompareResourceVersion(rv, low)
		if err != nil {
			return ""
		}
		if c < 0 {
			low = rv
		}
	}
	return low
}

func (w *nsWatcher[T]) Stop() {
	w.once.Do(func() {
		close(w.stopped)
		w.cancel()
	})
	w.wg.Wait()
}

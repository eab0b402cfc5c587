package typed

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/internal/reflector"
	"github.com/typedinformer/informer/internal/warm"
)

// WarmStart makes an informer save its cache and resourceVersion to a
// file, when it stops and every Interval while it runs, and start from
// that file on its next run: it loads the saved objects and watches from
// the saved version instead of listing. The cache is synced only once
// the server has accepted that watch (it sent an event or a bookmark); a
// file of another informer, a corrupt or truncated one, a version the
// server no longer has (410 Gone) or a server that does not answer within
// Accept gives the warm start up, reported once as an error wrapping
// ErrWarmStart, and the informer lists as it would have: nothing of the
// file reaches the cache or the handlers then. A missing file is a cold
// start, not an error.
//
// Handlers see a warm start as they see a list: an add for every object.
// The server accepts the saved version by sending what changed since, a
// bookmark, or nothing until the warm start's one-second watch ends
// cleanly; a source that says nothing and never ends the watch (client-go's
// fake clientset) is given Accept, then the informer lists.
//
// Loaded objects pass through Options.Transform again, as listed ones
// do: it must accept objects it already transformed. The file has mode
// 0600 and is replaced atomically; it holds the objects as the cache
// does, so Secrets (and the resources of Sensitive) are never saved
// unless AllowSensitive.
type WarmStart struct {
	// Path is the file. Its directory must exist. Required.
	Path string
	// Interval is how often the cache is saved while the informer runs,
	// besides once when it stops; a save is skipped while nothing
	// changed. Default (0): DefaultWarmSaveInterval; negative: only when
	// it stops.
	Interval time.Duration
	// Cluster names the cluster the informer watches: the file records it
	// and a file of another cluster is refused. Set it wherever files of
	// several clusters could be mixed up (package fleet sets it to the
	// cluster's name). Default: "", unnamed.
	Cluster string
	// Accept bounds how long a warm start waits, after the file is
	// loaded, for the server to accept the watch from the saved version.
	// Default (0): 10 seconds.
	Accept time.Duration
	// Sensitive names more resources whose objects are never saved, as
	// Secrets are not.
	Sensitive []schema.GroupResource
	// AllowSensitive allows saving Secrets and the resources of
	// Sensitive. Default: false, NewInformer refuses them.
	AllowSensitive bool
}

// DefaultWarmSaveInterval is the default of WarmStart.Interval.
const DefaultWarmSaveInterval = 5 * time.Minute

// ErrWarmStart is wrapped by the errors of Options.WarmStart: a warm start
// given up (the informer lists instead) and a save that failed.
var ErrWarmStart = errors.New("typed: warm start")

// ErrSensitive is wrapped by NewInformer's error for a WarmStart of
// Secrets, or of a resource of WarmStart.Sensitive, without
// AllowSensitive.
var ErrSensitive = errors.New("typed: resource is sensitive")

var secrets = schema.GroupResource{Resource: "secrets"}

// warmState is an informer's warm start: what its files must match, and
// what the last save wrote.
type warmState struct {
	opts WarmStart
	id   warm.Identity

	mu        sync.Mutex // serialises saves
	savedRV   string
	savedRev  uint64
	lastSave  time.Time
	lastBytes int64
	lastObjs  int
}

// newWarmState checks opts.WarmStart for an informer of res.
func newWarmState[T cache.Object](opts Options[T], gr schema.GroupResource, tweak func(*metav1.ListOptions)) (*warmState, error) {
	ws := opts.WarmStart
	if ws == nil {
		return nil, nil
	}
	var zero T
	_, secret := any(zero).(*corev1.Secret)
	switch {
	case ws.Path == "":
		return nil, errors.New("Options.WarmStart.Path is empty")
	case gr.Empty():
		return nil, errors.New("Options.WarmStart: the source does not say what resource it lists; set Options.Resource")
	case opts.Shard != nil:
		return nil, errors.New("Options.WarmStart does not go with Options.Shard: a shard's objects change with its moves")
	case (secret || gr == secrets || slices.Contains(ws.Sensitive, gr)) && !ws.AllowSensitive:
		return nil, fmt.Errorf("Options.WarmStart would save %s to %s: %w; set WarmStart.AllowSensitive to save them anyway", gr, ws.Path, ErrSensitive)
	}
	var req metav1.ListOptions
	if tweak != nil {
		tweak(&req)
	}
	sel := ""
	if req.LabelSelector != "" || req.FieldSelector != "" {
		sel = "labels=" + req.LabelSelector + ";fields=" + req.FieldSelector
	}
	return &warmState{opts: *ws, id: warm.Identity{
		Resource: gr.String(), Type: warm.TypeName[T](), Cluster: ws.Cluster,
		Selector: sel, ManagedFields: opts.KeepManagedFields,
	}}, nil
}

// savedFile adapts a warm.File to what the reflector loads.
type savedFile[T cache.Object] struct{ f *warm.File[T] }

func (s savedFile[T]) ResourceVersion() string       { return s.f.Header.ResourceVersion }
func (s savedFile[T]) Load(each func(T) error) error { return s.f.Load(each) }
func (s savedFile[T]) Close() error                  { return s.f.Close() }

// openSaved opens the informer's saved cache for the reflector.
func (inf *Informer[T]) openSaved() (reflector.Saved[T], error) {
	f, err := warm.Open[T](inf.warm.opts.Path, inf.warm.id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %w", reflector.ErrNoSaved, err)
	}
	if err != nil {
		return nil, err
	}
	if inf.strs != nil && inf.opts.Transform == nil {
		// The strings of loaded objects are shared by the decoders, in
		// parallel, not by the writer after them; a Transform may
		// replace the object, and its result is shared by the writer.
		f.Decoded = inf.shareStrings
		inf.loadShared.Store(true)
	}
	return savedFile[T]{f}, nil
}

// saveLoop saves the cache every WarmStart.Interval until ctx ends.
func (inf *Informer[T]) saveLoop(ctx context.Context) {
	d := inf.warm.opts.Interval
	if d == 0 {
		d = DefaultWarmSaveInterval
	}
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := inf.save(false); err != nil {
				inf.reportAsync(err)
			}
		}
	}
}

// save writes the cache to WarmStart.Path if it synced and changed since
// the last save. While the informer runs (final false), it saves only a
// snapshot that is exactly the state at the cache's resourceVersion, and
// skips the save when the cache keeps changing; at the end of Run, when
// the writer has stopped, the cache is the state at that version. A cache
// with quarantined objects is not saved: a warm start would miss them.
func (inf *Informer[T]) save(final bool) error {
	if !inf.HasSynced() {
		return nil
	}
	w := inf.warm
	w.mu.Lock()
	defer w.mu.Unlock()
	if q := inf.poison.list(); len(q) > 0 {
		return fmt.Errorf("%w: informer %s: cache not saved: %d objects are quarantined (the first: %s), and a warm start would miss them", ErrWarmStart, inf.name, len(q), q[0].Key)
	}
	var (
		objs []T
		rv   string
		rev  uint64
	)
	for try := 0; ; try++ {
		inf.seen.mu.Lock()
		rv, rev = inf.seen.rv, inf.seen.rev
		inf.seen.mu.Unlock()
		var srev uint64
		objs, srev = inf.store.Snapshot()
		if final || (rev != 0 && rev == srev) {
			rev = srev
			break
		}
		if try == 10 {
			return nil // the cache keeps changing: the next interval tries again
		}
		time.Sleep(10 * time.Millisecond)
	}
	if rv == "" || (rv == w.savedRV && rev == w.savedRev) {
		return nil
	}
	n, err := warm.Save(w.opts.Path, w.id, rv, objs)
	if err != nil {
		return fmt.Errorf("%w: informer %s: %w", ErrWarmStart, inf.name, err)
	}
	w.savedRV, w.savedRev = rv, rev
	w.lastSave, w.lastBytes, w.lastObjs = time.Now(), n, len(objs)
	return nil
}

// WarmStatus is the state of Options.WarmStart.
type WarmStatus struct {
	// Enabled is true when Options.WarmStart is set.
	Enabled bool `json:"enabled"`
	// Started is true when this run started from the saved file.
	Started bool `json:"started"`
	// LastSave is when the cache was last saved; zero before the first.
	LastSave time.Time `json:"lastSave,omitzero"`
	// Bytes and Objects are the last save's size and object count;
	// ResourceVersion is the version it saved.
	Bytes           int64  `json:"bytes,omitempty"`
	Objects         int    `json:"objects,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// WarmStatus returns the state of Options.WarmStart.
func (inf *Informer[T]) WarmStatus() WarmStatus {
	if inf.warm == nil {
		return WarmStatus{}
	}
	w := inf.warm
	w.mu.Lock()
	defer w.mu.Unlock()
	return WarmStatus{Enabled: true, Started: inf.refl.Status().Stats.WarmStarts > 0,
		LastSave: w.lastSave, Bytes: w.lastBytes, Objects: w.lastObjs, ResourceVersion: w.savedRV}
}

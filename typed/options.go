package typed

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
)

// Options configures [NewInformer]. The zero value is ready to use.
type Options[T cache.Object] struct {
	// Name identifies the informer in logs and errors. Default: the
	// resource name.
	Name string
	// Resource names the objects in the lister's NotFound errors. Default:
	// guessed from T's kind when T is a type of the client-go scheme (pods
	// for *corev1.Pod), else the lower-case plural of the Go type name
	// (unstructureds for *unstructured.Unstructured: set it for those).
	Resource schema.GroupResource
	// ResyncPeriod, if positive, makes every handler get OnUpdate(obj, obj)
	// for every cached object at that period (never a LIST). Default: 0, no
	// resync.
	ResyncPeriod time.Duration
	// Transform runs once on every object from the source before it enters
	// the cache, for example to drop fields the controller does not need.
	// It may modify and return its argument. An error is reported and the
	// informer relists after a backoff rather than skip the object.
	Transform func(T) (T, error)
	// KeepManagedFields keeps metadata.managedFields. Default: false, they
	// are dropped before Transform runs (about a fifth of a typical object).
	KeepManagedFields bool
	// Indexers are added to the cache besides the namespace index.
	Indexers cache.Indexers[T]
	// ErrorHandler receives every error the informer recovers from: list and
	// watch failures, transform errors, handler panics. It must not block.
	// Default: errors are logged (klog, from Run's context).
	ErrorHandler func(error)
	// NoWatchList turns off the streaming initial list (sendInitialEvents).
	// Default: false, it is used when the source supports it, else LIST.
	NoWatchList bool
	// PageSize is the page size of LIST requests. Default: 500.
	PageSize int64
	// MinWatchTimeout is the lower bound of the randomised watch timeout.
	// Default: 5 minutes.
	MinWatchTimeout time.Duration
}

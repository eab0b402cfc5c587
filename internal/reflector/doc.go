// Package reflector keeps a sink (the informer's queue) in step with a
// [source.Source]: it lists (or streams the initial state), hands the list
// over as ReplaceStart, Replaced..., ReplaceEnd while it arrives, then
// watches from the list's resourceVersion and hands over every event,
// recovering from every failure a real API server can produce.
//
// Behaviour, with client-go's Reflector as the reference:
//
//   - Initial state: a streaming list (a watch with sendInitialEvents and the
//     "k8s.io/initial-events-end" bookmark) when the source supports it,
//     else a paginated LIST. The consumer applies a list only at its
//     ReplaceEnd, so a half list is never published; a list that fails
//     midway is started over with a new ReplaceStart.
//   - Every object goes through Options.Prepare (the informer's transform
//     and index functions) before it is pushed. A refused object is
//     reported, with Prepare's own error, and the reflector relists after
//     a backoff: the resourceVersion never moves past an object the cache
//     did not take. With Options.PushRefused, a refused object that has a
//     name goes to the sink as what it is, a Refused delta with its key,
//     resourceVersion and error (the informer quarantines it), and the
//     reflector goes on past it.
//   - With Options.WatchIdleTimeout, a watch that delivers nothing for
//     that long, once the source has sent a periodic bookmark (the
//     server's heartbeat; the end bookmark of a streaming list does not
//     count), is stopped and reopened at once from the last
//     resourceVersion, reported as ErrWatchIdle: a stalled connection is
//     given up without a relist.
//   - Relist stops the watch and lists again with a quorum read (the
//     informer's consistency check repairs a divergence with it).
//   - Watch from the last synced resourceVersion with bookmarks requested
//     and a randomised timeout. A watch that ends normally is restarted from
//     the last resourceVersion, without a relist: at once if it lasted a
//     second, or if it is the first in a row to end sooner and delivered
//     something; after a backoff otherwise, so watches that keep ending at
//     once, whatever they deliver, cause no tight loop.
//   - 410 Gone and "too large resource version" (in its three server
//     forms) are the only watch errors that lead to a relist. The relist
//     asks for the last synced version (a watch cache serves it with
//     anything at least as new), and for a quorum read (resourceVersion
//     "") after a too-large version or when the list itself is refused
//     with 410. Every other watch error, at start or in the stream (500,
//     503, 429, connection refused or reset, EOF, 403, a malformed frame),
//     is retried from the same resourceVersion after a backoff. A bad frame
//     or object (ErrMalformed, ErrWrongType, ErrNilObject) that comes again,
//     the same error after the same resourceVersion, is one the server replays to every
//     watch from there (an object that does not decode into T): that leads
//     to a relist after a backoff, which gets past it once it is fixed or
//     deleted (while it exists, the relist fails and is retried). An
//     object that does not decode but has a readable name (a
//     source.UndecodableError, in a list page's Undecodable or from Next)
//     is no bad frame: with PushRefused it goes to the sink as a Refused
//     delta in its place (a deletion by key for a DELETED event), and the
//     list or the same watch goes on; without it, it is refused as an
//     object Prepare refuses.
//   - The resume point never goes back: events of a watch move it only
//     forward. After a list without a resourceVersion no watch can resume,
//     so a watch that ends is followed by a quorum relist.
//   - Backoff is exponential with jitter, 800ms to 30s, and goes back to
//     800ms once a watch has lasted a second: a healthy source is retried
//     promptly after its next error. (client-go resets it every two
//     minutes, whatever happened.)
//   - A streaming list the server refuses (400, 422, 405, 406), or one that
//     goes 30 seconds without an event before its end bookmark (a proxy or
//     a fake that never sends it), switches to LIST for good, the latter
//     reported; one that fails for a transient reason is retried; any
//     other failure but an RBAC error or a missing resource is reported
//     before the LIST fallback.
//   - Before the first list succeeds, a LIST the server refuses as
//     malformed (400, 405, 406, 415, 422) ends Run with the error: retrying
//     the same request cannot succeed. Later, the same errors are retried.
//
// The reflector owns its status: the last error (cleared as soon as the
// source answers well again: a list, an established watch, an event or a
// bookmark), when it happened, since when the cache may be stale, and its
// counters. Errors are delivered in order on [Reflector.Errors].
package reflector

// Package reflector keeps a queue in step with a [source.Source]: it lists
// (or streams the initial state), hands the result to the queue as one
// Replace, then watches from the list's resourceVersion and hands every
// event to the queue, recovering from every failure a real API server can
// produce.
//
// Behaviour, with client-go's Reflector as the reference:
//
//   - Initial state: a streaming list (a watch with sendInitialEvents and the
//     "k8s.io/initial-events-end" bookmark) when the source supports it,
//     else a paginated LIST. The queue's Replace is called once, only when
//     the whole list (or the end bookmark) is in: a half list is never
//     published.
//   - Watch from the last synced resourceVersion with bookmarks requested
//     and a randomised timeout. A watch that ends normally is restarted
//     from the last resourceVersion, without a relist.
//   - 410 Gone / "too old resource version" and "too large resource version":
//     relist; after an expired or too-large version the relist is a quorum
//     read (resourceVersion "").
//   - 429 and connection refused: back off and retry the same step, no
//     relist. In-stream internal errors (500): back off and re-watch.
//   - Backoff is exponential with jitter, 800ms to 30s, and goes back to
//     800ms every two minutes (wait.Backoff.DelayWithReset, as client-go).
//   - A streaming list that fails for any reason but a refusal or an RBAC
//     error is reported before the LIST fallback.
//   - A queue write that fails (a transform error, an object without a
//     name) is reported and the reflector relists after a backoff: the
//     resourceVersion never moves past an event the cache did not take.
package reflector

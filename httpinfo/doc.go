// Package httpinfo serves what a program's informers are doing over HTTP:
// a readiness check for probes and a debug page for people and tools.
//
//	reg, _ := httpinfo.NewRegistry(httpinfo.Options{})
//	e, _ := httpinfo.Add(reg, pods)          // a *typed.Informer[*corev1.Pod]
//	_ = e.AddHandler("reconcile", podsReg)   // the *typed.Registration of a handler
//	ready, _ := httpinfo.NewReadiness(reg, httpinfo.ReadinessOptions{})
//	page, _ := httpinfo.NewPage(reg, httpinfo.PageOptions{Readiness: ready})
//	mux := http.NewServeMux()
//	mux.Handle("/readyz", ready)
//	mux.Handle("/debug/informers", page)
//	srv := &http.Server{Addr: "127.0.0.1:8081", Handler: mux, ReadHeaderTimeout: 5 * time.Second}
//	go srv.ListenAndServe() // a private port
//
// # Registry
//
// An informer does not list its handlers, and a program may run informers
// of many types, so the program registers what it wants reported: each
// informer with Add, and optionally each handler's registration with
// Entry.AddHandler. Registry.Snapshot reads them all: names, counts and
// status, never an object's content.
//
// # Health
//
// Readiness fails until every registered informer and handler has synced,
// while an informer's errors have gone on for longer than
// ReadinessOptions.ErrorThreshold (permissions revoked, the CRD deleted: the
// informer keeps its last cache and retries), and once an informer has
// stopped. It passes again when the errors stop. The body names each
// informer that is not ready, its error (as under "Error text") and since
// when. It is an http.Handler for GET and HEAD (405 for other methods) and
// has the Name and Check methods of Kubernetes' healthz-style checkers, so
// it can be added to such an endpoint.
//
// # Debug page
//
// Page serves an HTML table for people and, for an Accept header asking for
// application/json or the query format=json, the Snapshot as JSON for tools.
//
// # Error text
//
// An error's text can carry more than the request's story: a decoder's
// message may quote a value of the object it failed on, a conversion
// webhook's or a proxy's reply may quote an object, and a Transform or
// index function writes what it likes. By default the page, the JSON and the
// health body show of an API server error its reason and HTTP code
// ("Forbidden (403)") and its message only for the reasons whose message is
// the server's own text about the request (Forbidden, NotFound, Gone,
// Expired, TooManyRequests, Timeout, ServiceUnavailable...), not for
// InternalError, Invalid, BadRequest, Conflict, StorageReadError, Unknown
// or a reason the API does not define (shown as "Other"), nor when the
// message quotes a reply that was not a Status. Of a connection error they
// show its text; of a refused object its namespace and name only; of a
// malformed or mistyped object, or any other error, only what kind of error
// it is. Every text is stripped of control and format characters, made
// valid UTF-8 and cut to Options.MaxErrorBytes. Options.ErrorText changes
// the rule; the informer's ErrorHandler still gets every full error, for
// the logs.
//
// # Serving
//
// Serve both on a port of their own, reachable only from where probes and
// operators come (localhost, the pod network behind a NetworkPolicy), not
// on the port that serves users: the page names namespaces and objects
// (in errors) and tells how the program talks to the API server.
package httpinfo

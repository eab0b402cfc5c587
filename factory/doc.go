// Package factory shares one typed informer per type and scope across a
// program, runs them all, and bounds how many list at once.
//
//	f, err := factory.New(cfg, factory.Options{})
//	pods, release, err := factory.InformerFor[*corev1.Pod](f, factory.Scope{Namespace: "shop"})
//	defer release()
//	go f.Start(ctx)
//	if err := f.WaitForSync(ctx); err != nil { ... } // names each informer not synced, and why
//	list, err := pods.Lister().Namespace("shop").List(selector)
//
// # Sharing
//
// An informer is known by its Go type and its [Scope] (namespace, label and
// field selectors, named tweak). Every caller of [InformerFor] with the same
// pair gets the same *typed.Informer, and the server sees one list and one
// watch for them. All informers of a factory share one REST mapper (one
// discovery) and one HTTP client (one connection pool).
//
// # Lifecycle
//
// [Factory.Start] runs every informer, including those asked for while it
// runs, under one errgroup, until its context ends. Each InformerFor caller
// gets a release function; the last release stops the informer and drops
// it from the factory, so that its cache can be collected. A factory runs
// once: after Start returns, its informers are stopped for good.
//
// # Bounded lists
//
// At most Options.MaxConcurrentLists list requests of a factory are in
// flight at once: LIST pages, and streaming lists until their
// initial-events-end bookmark. A permit is held only while a request is in
// flight, never while an informer backs off or waits, so a program that
// starts a hundred informers does not send a hundred lists at once, and
// one slow list never stops the others from starting.
//
// # Tests
//
// [Register] gives a type a source of your own, such as a client-go fake
// clientset's client or a sourcetest.Fake; a factory made with a nil
// rest.Config serves only such types.
package factory

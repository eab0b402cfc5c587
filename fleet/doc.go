// Package fleet runs typed informers over many clusters in one process.
//
// A Fleet holds the engaged clusters, each with a factory.Factory, an
// HTTP client and discovery of its own; a fleet Informer of T has the
// factory informer of T in every engaged cluster. Clusters are engaged
// (Engage, EngageFactory, or a Provider such as Kubeconfigs) and
// disengaged while the fleet runs: a new cluster's informers start at
// once, and disengaging one stops its informers, waits for their
// goroutines and closes its connections. Keys carry the cluster (Key),
// listers answer over the whole fleet or one cluster, and handlers get
// the cluster with the object:
//
//	fl, _ := fleet.New(fleet.Options{})
//	pods, _ := fleet.InformerFor[*corev1.Pod](fl, factory.Scope{})
//	_ = pods.AddHandler(fleet.HandlerFuncs[*corev1.Pod]{
//		AddFunc: func(cluster string, p *corev1.Pod, _ bool) { ... },
//	})
//	go fleet.Kubeconfigs{"east": "east.kubeconfig", "west": "west.kubeconfig"}.Run(ctx, fl)
//	_ = fl.Run(ctx)
//
// What is per cluster: a cluster that is unreachable, has a wrong CA or
// answers Forbidden is reported for that cluster (Options.ErrorHandler,
// and its informer's sync error) and slows no other; wait for one
// cluster's informer (Informer.Cluster) where one must not wait for all.
package fleet

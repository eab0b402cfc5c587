package fleet

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"k8s.io/client-go/tools/clientcmd"
)

// Provider engages a fleet's clusters as they appear and disengages them
// as they go.
type Provider interface {
	// Run engages the provider's clusters in fl, and disengages them as
	// they go, until ctx ends. A cluster that cannot be engaged is
	// reported for that cluster (Options.ErrorHandler); the others are
	// engaged. Run returns nil when ctx ends, or an error if it cannot go
	// on at all.
	Run(ctx context.Context, fl *Fleet) error
}

// Kubeconfigs is a Provider of the clusters of kubeconfig files, by
// cluster name: each file's current context. A file that does not load
// or parse is reported with its cluster's name. The clusters are
// disengaged when Run returns.
type Kubeconfigs map[string]string

// Run engages the clusters of the files, then waits for ctx to end.
func (k Kubeconfigs) Run(ctx context.Context, fl *Fleet) error {
	if fl == nil {
		return ErrNil
	}
	var engaged []string
	for _, name := range slices.Sorted(maps.Keys(k)) {
		cfg, err := clientcmd.BuildConfigFromFlags("", k[name])
		if err != nil {
			fl.opts.ErrorHandler(name, fmt.Errorf("fleet: cluster %q: kubeconfig %s: %w", name, k[name], err))
			continue
		}
		if err := fl.Engage(name, cfg); err != nil {
			fl.opts.ErrorHandler(name, err)
			continue
		}
		engaged = append(engaged, name)
	}
	<-ctx.Done()
	for _, name := range engaged {
		_ = fl.Disengage(name) // ErrUnknownCluster: the fleet stopped, or someone disengaged it
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source/sourcetest"
)

// simulation is the embedded cluster: a fake API server for pods and a
// churn loop.
type simulation struct {
	fake *sourcetest.Fake[*corev1.Pod]
	keys []cache.Key // the pods that exist, for picking one at random
	next int
	rng  *rand.Rand
}

var (
	nodes = []string{"node-a", "node-b", "node-c", "node-d"}
	apps  = []string{"web", "cart", "db", "worker", "cache"}
)

func newSimulation(seedFile string, generated int) (*simulation, error) {
	seed, err := loadPods(seedFile)
	if err != nil {
		return nil, err
	}
	s := &simulation{rng: rand.New(rand.NewPCG(1, 2))}
	pods := seed
	for range generated {
		pods = append(pods, s.newPod())
	}
	s.fake = sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{
		Resource: podsResource,
		Scope:    cache.ScopeNamespaced,
		Objects:  pods,
		Window:   100000,
	})
	for _, p := range pods {
		s.keys = append(s.keys, cache.KeyOf(p))
	}
	return s, nil
}

// loadPods reads a multi-document YAML file of pods.
func loadPods(path string) ([]*corev1.Pod, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("seed pods (run from the repository root, or pass --seed): %w", err)
	}
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	var out []*corev1.Pod
	for {
		p := &corev1.Pod{}
		if err := dec.Decode(p); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("seed pods %s: %w", path, err)
		}
		if p.Name == "" {
			continue
		}
		out = append(out, p)
	}
}

func (s *simulation) newPod() *corev1.Pod {
	s.next++
	app := apps[s.rng.IntN(len(apps))]
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fmt.Sprintf("team-%d", s.next%8),
			Name:      fmt.Sprintf("%s-%d", app, s.next),
			Labels:    map[string]string{"app": app},
		},
		Spec: corev1.PodSpec{
			NodeName:   nodes[s.rng.IntN(len(nodes))],
			Containers: []corev1.Container{{Name: app, Image: "example/" + app + ":1"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// churn creates, updates and deletes pods until ctx ends. Every 100th
// change it cuts every watch, as an API server restart does; every other
// time, starting with the first, it loses a deletion event and compacts
// its history just before, so the informer has to relist and report the
// deletion as final-state-unknown. At the default interval (20ms) that is
// a cut every 2s, every other one with a relist, so a 5s run shows both.
func (s *simulation) churn(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		switch r := s.rng.IntN(10); {
		case r < 3 || len(s.keys) == 0:
			p, err := s.fake.Create(s.newPod())
			if err == nil {
				s.keys = append(s.keys, cache.KeyOf(p))
			}
		case r < 8:
			p, err := s.fake.Get(s.keys[s.rng.IntN(len(s.keys))])
			if err != nil {
				continue
			}
			p.ResourceVersion = ""
			if p.Status.Phase == corev1.PodPending {
				p.Status.Phase = corev1.PodRunning
			} else {
				if p.Labels == nil {
					p.Labels = map[string]string{}
				}
				p.Labels["restarts"] = fmt.Sprint(n)
			}
			_, _ = s.fake.Update(p)
		default:
			i := s.rng.IntN(len(s.keys))
			_, _ = s.fake.Delete(s.keys[i])
			s.keys[i] = s.keys[len(s.keys)-1]
			s.keys = s.keys[:len(s.keys)-1]
		}
		switch {
		case n%200 == 99 && len(s.keys) > 0:
			// A deletion the watch never delivers, then a compaction:
			// the informer must relist and infer the deletion.
			i := s.rng.IntN(len(s.keys))
			s.fake.DropEvents(1)
			_, _ = s.fake.Delete(s.keys[i])
			s.keys[i] = s.keys[len(s.keys)-1]
			s.keys = s.keys[:len(s.keys)-1]
			s.fake.Compact()
			s.fake.CutWatches()
		case n%100 == 99:
			s.fake.CutWatches()
		}
	}
}

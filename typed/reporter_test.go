package typed_test

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/handler"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// TestErrorHandlerOneAtATime: a list error, a refused object, a handler's
// panic and a mutation found when Run ends all reach ErrorHandler one at a
// time (never two calls at once, each after the one before returned), and
// before Run returns.
func TestErrorHandlerOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{NoWatchList: true}, it.Pod("ns", "a", nil), it.Pod("ns", "bad", nil))
		fake.FailLists(1, nil)
		var mu sync.Mutex
		var kinds []string
		overlapped := false
		inf := mustInformer(t, fake, typed.Options[*corev1.Pod]{
			DetectMutations: true,
			Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
				if p.Name == "bad" {
					return nil, errors.New("no")
				}
				return p, nil
			},
			ErrorHandler: func(err error) {
				if !mu.TryLock() {
					mu.Lock()
					overlapped = true // another call was in progress
				}
				defer mu.Unlock()
				time.Sleep(time.Millisecond) // a call that takes a while, in the bubble's time
				var re *typed.RefusedError
				var me *typed.MutationError
				switch {
				case errors.As(err, &re):
					kinds = append(kinds, "refused")
				case errors.As(err, &me):
					kinds = append(kinds, "mutation")
				case errors.Is(err, typed.ErrHandlerPanic):
					kinds = append(kinds, "panic")
				default:
					kinds = append(kinds, "list")
				}
			},
		})
		reg, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, _ bool) {
			p.Labels = map[string]string{"mutated": "yes"} // found when Run ends
			panic("boom")
		}})
		if err != nil {
			t.Fatal(err)
		}
		stop := it.Run(t, inf)
		if err := typed.WaitForCacheSync(t.Context(), inf, reg); err != nil {
			t.Fatal(err)
		}
		stop()
		mu.Lock()
		defer mu.Unlock()
		seen := map[string]bool{}
		for _, k := range kinds {
			seen[k] = true
		}
		for _, k := range []string{"list", "refused", "panic", "mutation"} {
			if !seen[k] {
				t.Errorf("no %s error reached ErrorHandler before Run returned: %v", k, kinds)
			}
		}
		if overlapped {
			t.Error("two ErrorHandler calls at once")
		}
	})
}

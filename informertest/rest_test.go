package informertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/informertest"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// jsonPods serves fake's pods over HTTP as an API server does (JSON lists,
// watches of one {"type","object"} value per line, errors as a Status),
// for FromConfig.
func jsonPods(fake *sourcetest.Fake[*corev1.Pod]) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var opts metav1.ListOptions
		q := r.URL.Query()
		if err := metav1.Convert_url_Values_To_v1_ListOptions(&q, &opts, nil); err != nil || r.URL.Path != "/api/v1/pods" {
			status(w, apierrors.NewBadRequest(fmt.Sprintf("%s: %v", r.URL.Path, err)))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if !opts.Watch {
			l, err := fake.List(r.Context(), opts)
			if err != nil {
				status(w, err)
				return
			}
			out := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
			out.ResourceVersion, out.Continue = l.ResourceVersion, l.Continue
			for _, p := range l.Items {
				out.Items = append(out.Items, *p)
			}
			_ = json.NewEncoder(w).Encode(out)
			return
		}
		wt, err := fake.Watch(r.Context(), opts)
		if err != nil {
			status(w, err)
			return
		}
		defer wt.Stop()
		w.WriteHeader(http.StatusOK)
		flusher, _ := w.(http.Flusher)
		enc := json.NewEncoder(w)
		for {
			ev, err := wt.Next(r.Context())
			var api apierrors.APIStatus
			switch {
			case errors.As(err, &api):
				st := api.Status()
				st.Kind, st.APIVersion = "Status", "v1"
				_ = enc.Encode(map[string]any{"type": watch.Error, "object": st})
			case err == nil:
				ev.Object.Kind, ev.Object.APIVersion = "Pod", "v1"
				_ = enc.Encode(map[string]any{"type": ev.Type, "object": ev.Object})
			}
			if flusher != nil {
				flusher.Flush()
			}
			if err != nil {
				return
			}
		}
	}
}

func status(w http.ResponseWriter, err error) {
	st := apierrors.NewInternalError(err).ErrStatus
	var api apierrors.APIStatus
	if errors.As(err, &api) {
		st = api.Status()
	}
	st.Kind, st.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}

// TestFaultyOverREST: the wrapper works in front of FromConfig, the
// adapter of a real server, and the checker finds the informer converged
// after a seeded plan and a script of cuts, drops, duplicates and errors
// in the stream, while the pods change. Real time: HTTP needs it.
func TestFaultyOverREST(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	fake := fakeOf(300)
	// Cleanups, not defers: they run after the informer's (registered
	// later), once its watch is closed.
	srv := httptest.NewServer(jsonPods(fake))
	t.Cleanup(srv.Close)
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	rsrc, err := source.FromConfig[*corev1.Pod](&rest.Config{Host: srv.URL}, source.RESTOptions{
		Mapper: mapper, HTTPClient: &http.Client{Transport: transport},
	})
	if err != nil {
		t.Fatal(err)
	}
	var script []sourcetest.Fault
	for i, k := range []sourcetest.FaultKind{sourcetest.FaultCut, sourcetest.FaultDuplicate, sourcetest.FaultDrop,
		sourcetest.FaultInternal, sourcetest.FaultGone, sourcetest.FaultWrongType} {
		script = append(script, sourcetest.Fault{Kind: k, Op: sourcetest.OpNext, At: 320 + 40*i})
	}
	faulty, err := sourcetest.NewFaulty(rsrc, sourcetest.FaultOptions{Seed: seed, WatchRate: 0.1, Script: script,
		Kinds: []sourcetest.FaultKind{sourcetest.FaultTooManyRequests, sourcetest.FaultInternal, sourcetest.FaultGone}})
	if err != nil {
		t.Fatal(err)
	}
	chk, err := informertest.NewChecker[*corev1.Pod](fake, informertest.Options[*corev1.Pod]{Faults: faulty})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := typed.NewInformer[*corev1.Pod](faulty, typed.Options[*corev1.Pod]{ErrorHandler: chk.ErrorHandler})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chk.AddHandler(inf, typed.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range 400 {
		k := cache.Key{Namespace: "a", Name: fmt.Sprintf("p-%d", rng.IntN(320))}
		var err error
		if _, getErr := fake.Get(k); getErr != nil {
			_, err = fake.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}})
		} else if i%4 == 0 {
			_, err = fake.Delete(k)
		} else {
			_, err = fake.Update(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name, Labels: map[string]string{"i": fmt.Sprint(i)}}})
		}
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	faulty.Heal()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute) // a hang guard
	defer cancel()
	if err := chk.Converge(ctx, inf); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d faults, %+v, calls %+v", len(faulty.Log()), faulty.Requests(), chk.Counts())
}

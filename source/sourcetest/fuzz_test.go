package sourcetest_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/source/sourcetest"
)

// FuzzFakeContinue feeds arbitrary continue tokens to the fake's List: no
// panic, and either a page of the fake's pods or a BadRequest, 410 Gone or
// too large resourceVersion, as a server answers a token it did not make,
// can no longer serve, or cannot serve yet.
// The seed corpus is in testdata/fuzz/FuzzFakeContinue.
func FuzzFakeContinue(f *testing.F) {
	fake := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Pod]{Window: 4})
	for i := range 10 {
		if _, err := fake.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: fmt.Sprintf("p-%d", i)}}); err != nil {
			f.Fatal(err)
		}
	}
	first, err := fake.List(context.Background(), metav1.ListOptions{Limit: 3})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(first.Continue)
	f.Add("")
	f.Fuzz(func(t *testing.T, token string) {
		l, err := fake.List(context.Background(), metav1.ListOptions{Limit: 3, Continue: token})
		if err != nil {
			// A token of a version the fake has not reached is "too large",
			// as a read at a future revision is.
			if !apierrors.IsBadRequest(err) && !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) && !isTooLarge(err) {
				t.Fatalf("List(continue %q): %v, want BadRequest, 410 or too large", token, err)
			}
			return
		}
		if len(l.Items) > 3 {
			t.Fatalf("List(continue %q, limit 3) gave %d items", token, len(l.Items))
		}
		for i, p := range l.Items {
			if p == nil || p.Namespace != "a" {
				t.Fatalf("List(continue %q): item %d is %v", token, i, p)
			}
		}
	})
}

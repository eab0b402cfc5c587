package warm

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"
)

// TestPresizeDecodesTheSame: a pod decoded with its slices made at their
// size first is the pod Unmarshal alone decodes, for pods filled at random
// (every field, slices of random lengths), and the slices the sizer
// reaches hold their elements without spare room.
func TestPresizeDecodesTheSame(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	f := randfill.NewWithSeed(int64(seed)).NilChance(0.2).NumElements(0, 4)
	var d decoder[*corev1.Pod]
	for i := range 300 {
		var in corev1.Pod
		f.Fill(&in)
		b, err := in.Marshal()
		if err != nil {
			t.Fatalf("seed %d, pod %d: Marshal: %v", seed, i, err)
		}
		var want corev1.Pod
		if err := want.Unmarshal(b); err != nil {
			t.Fatalf("seed %d, pod %d: Unmarshal: %v", seed, i, err)
		}
		got, err := d.decode(b)
		if err != nil {
			t.Fatalf("seed %d, pod %d: decode: %v", seed, i, err)
		}
		if !reflect.DeepEqual(&want, got) {
			t.Fatalf("seed %d, pod %d: the presized decoding differs from Unmarshal's", seed, i)
		}
	}

	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Finalizers: []string{"a", "b"}},
		Spec:       corev1.PodSpec{Containers: make([]corev1.Container, 3), Volumes: make([]corev1.Volume, 1)},
		Status:     corev1.PodStatus{Conditions: make([]corev1.PodCondition, 5)},
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.decode(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		name     string
		len, cap int
		want     int
	}{
		{"metadata.finalizers", len(got.Finalizers), cap(got.Finalizers), 2},
		{"spec.containers", len(got.Spec.Containers), cap(got.Spec.Containers), 3},
		{"spec.volumes", len(got.Spec.Volumes), cap(got.Spec.Volumes), 1},
		{"status.conditions", len(got.Status.Conditions), cap(got.Status.Conditions), 5},
	} {
		if s.len != s.want || s.cap != s.want {
			t.Errorf("%s: len %d, cap %d; want both %d", s.name, s.len, s.cap, s.want)
		}
	}
}

// TestPresizeUnreadable: bytes the sizer cannot read are left to
// Unmarshal, which refuses them as it would have.
func TestPresizeUnreadable(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: make([]corev1.Container, 2)}}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var d decoder[*corev1.Pod]
	for cut := range len(b) {
		_, want := new(corev1.Pod), new(corev1.Pod).Unmarshal(b[:cut])
		_, err := d.decode(b[:cut])
		if fmt.Sprint(err) != fmt.Sprint(want) {
			t.Errorf("cut at %d: decode error %v, Unmarshal's %v", cut, err, want)
		}
	}
}

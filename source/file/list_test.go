package file_test

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/source/file"
)

// TestList checks the list options: selectors, versions and pages.
func TestList(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", docs(podYAML("a", "p1", "app=web"), podYAML("a", "p2", "app=db"), podYAML("b", "p1", "app=web")))
	src, _ := newPods(t, dir, file.Options{History: 2})
	before, err := src.List(waitCtx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "c.yaml", podYAML("c", "p1"))
	now, err := src.List(waitCtx(t), metav1.ListOptions{}) // rescans
	if err != nil {
		t.Fatal(err)
	}
	cur, _ := strconv.ParseInt(now.ResourceVersion, 10, 64)
	tests := []struct {
		name  string
		opts  metav1.ListOptions
		want  []string
		check func(error) bool // the error wanted, if any
	}{
		{"all", metav1.ListOptions{}, []string{"a/p1", "a/p2", "b/p1", "c/p1"}, nil},
		{"label", metav1.ListOptions{LabelSelector: "app=web"}, []string{"a/p1", "b/p1"}, nil},
		{"name", metav1.ListOptions{FieldSelector: "metadata.name=p1"}, []string{"a/p1", "b/p1", "c/p1"}, nil},
		{"namespace and label", metav1.ListOptions{FieldSelector: "metadata.namespace!=a", LabelSelector: "app"}, []string{"b/p1"}, nil},
		{"exact, before the new file", metav1.ListOptions{ResourceVersion: before.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact}, []string{"a/p1", "a/p2", "b/p1"}, nil},
		{"not older than a past version", metav1.ListOptions{ResourceVersion: before.ResourceVersion}, []string{"a/p1", "a/p2", "b/p1", "c/p1"}, nil},
		{"exact, forgotten", metav1.ListOptions{ResourceVersion: "1", ResourceVersionMatch: metav1.ResourceVersionMatchExact}, nil, apierrors.IsResourceExpired},
		{"not reached", metav1.ListOptions{ResourceVersion: strconv.FormatInt(cur+1, 10)}, nil, apierrors.IsResourceExpired},
		{"bad continue", metav1.ListOptions{Continue: "nonsense"}, nil, apierrors.IsBadRequest},
		{"other field", metav1.ListOptions{FieldSelector: "status.phase=Running"}, nil, apierrors.IsBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := src.List(waitCtx(t), tt.opts)
			if tt.check != nil {
				if !tt.check(err) {
					t.Fatalf("list: %v, want an error of the right kind", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range l.Items {
				got = append(got, p.Namespace+"/"+p.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("listed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestListPages checks that pages of a selected list hold each matching
// object once, from the first page's snapshot, and that a token whose
// snapshot is forgotten gets 410 Gone.
func TestListPages(t *testing.T) {
	dir := t.TempDir()
	var ds []string
	for i := range 7 {
		ds = append(ds, podYAML("ns", "p"+strconv.Itoa(i), "odd="+strconv.FormatBool(i%2 == 1)))
	}
	writeFile(t, dir, "a.yaml", docs(ds...))
	src, _ := newPods(t, dir, file.Options{History: 1})
	opts := metav1.ListOptions{LabelSelector: "odd=false", Limit: 2}
	var got, rvs []string
	for {
		l, err := src.List(waitCtx(t), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range l.Items {
			got = append(got, p.Name)
		}
		rvs = append(rvs, l.ResourceVersion)
		if l.Continue == "" {
			break
		}
		if len(rvs) == 1 {
			// A change after the first page does not show in the others.
			writeFile(t, dir, "b.yaml", podYAML("ns", "p9", "odd=false"))
			if err := src.Rescan(waitCtx(t)); err != nil {
				t.Fatal(err)
			}
		}
		opts.Continue = l.Continue
	}
	if want := []string{"p0", "p2", "p4", "p6"}; !cmp.Equal(got, want) {
		t.Errorf("pages = %v, want %v", got, want)
	}
	if len(rvs) != 2 || rvs[0] != rvs[1] {
		t.Errorf("page resourceVersions = %v, want two equal ones", rvs)
	}

	first, err := src.List(waitCtx(t), metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"q1", "q2"} { // two changes: more than History
		writeFile(t, dir, name+".yaml", podYAML("ns", name))
		if err := src.Rescan(waitCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.List(waitCtx(t), metav1.ListOptions{Limit: 1, Continue: first.Continue}); !apierrors.IsResourceExpired(err) {
		t.Errorf("next page of a forgotten snapshot: %v, want 410 Gone", err)
	}
}

// TestListCopies checks that a caller may change what List returns.
func TestListCopies(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", podYAML("ns", "p1", "app=web"))
	src, _ := newPods(t, dir, file.Options{})
	l, err := src.List(waitCtx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Items[0].Labels["app"] = "changed"
	l.Items[0].Spec.Containers[0].Image = "changed"
	again, err := src.List(waitCtx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := again.Items[0]; p.Labels["app"] != "web" || p.Spec.Containers[0].Image != "nginx" {
		t.Errorf("a caller's change reached the source: %v %v", p.Labels, p.Spec.Containers[0].Image)
	}
}

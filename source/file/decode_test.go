package file_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/source/file"
)

const configMapYAML = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: a\ndata:\n  k: v\n"

// TestDecode checks which objects a directory's files give, and the
// problems they report, with file and line.
func TestDecode(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		opts     file.Options
		want     []string // keys listed
		problems []string // "file:line: sentinel"
	}{{
		name: "multi-document YAML, other kinds ignored",
		files: map[string]string{"all.yaml": docs(podYAML("a", "p1"), configMapYAML, podYAML("a", "p2")) +
			"---\n# only a comment\n---\n"},
		want: []string{"a/p1", "a/p2"},
	}, {
		name:  "leading separator and .yml",
		files: map[string]string{"p.yml": "---\n" + podYAML("a", "p1")},
		want:  []string{"a/p1"},
	}, {
		name: "kind List with items of several kinds",
		files: map[string]string{"list.yaml": "apiVersion: v1\nkind: List\nitems:\n" +
			"- {apiVersion: v1, kind: Pod, metadata: {name: p1, namespace: a}}\n" +
			"- {apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: a}}\n" +
			"- {apiVersion: v1, kind: Pod, metadata: {name: p2, namespace: a}}\n"},
		want: []string{"a/p1", "a/p2"},
	}, {
		name:  "PodList whose items omit their type",
		files: map[string]string{"pods.json": `{"apiVersion":"v1","kind":"PodList","items":[{"metadata":{"name":"p1","namespace":"a"}}]}`},
		want:  []string{"a/p1"},
	}, {
		name: "JSON stream",
		files: map[string]string{"pods.json": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1","namespace":"a"}}
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p2","namespace":"a"}}`},
		want: []string{"a/p1", "a/p2"},
	}, {
		name: "other versions, hidden files, other extensions ignored",
		files: map[string]string{
			"v2.yaml":       "apiVersion: v2\nkind: Pod\nmetadata:\n  name: x\n",
			".hidden.yaml":  podYAML("a", "hidden"),
			"notes.txt":     podYAML("a", "txt"),
			"p.yaml.backup": podYAML("a", "backup"),
			"sub/p.yaml":    podYAML("a", "sub"),
			"p.yaml":        podYAML("a", "p1"),
		},
		want: []string{"a/p1"},
	}, {
		name:  "default namespace",
		files: map[string]string{"p.yaml": docs(podYAML("", "p1"), podYAML("b", "p2"))},
		opts:  file.Options{DefaultNamespace: "dflt"},
		want:  []string{"b/p2", "dflt/p1"},
	}, {
		name: "YAML syntax error: the line in the file; the file gives nothing, others do",
		files: map[string]string{
			"bad.yaml":  docs(podYAML("a", "p1"), "apiVersion: v1\nkind: Pod\nmetadata:\n  name: [p2\n"),
			"good.yaml": podYAML("a", "ok"),
		},
		want:     []string{"a/ok"},
		problems: []string{"bad.yaml:14: file: syntax error"},
	}, {
		name: "wrong field type: the line of the field",
		files: map[string]string{"bad.yaml": docs(podYAML("a", "p1"),
			"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p2\nspec:\n  containers:\n  - name: app\n    ports:\n    - containerPort: eighty\n")},
		want:     []string{},
		problems: []string{"bad.yaml:19: file: invalid manifest"},
	}, {
		name:     "no name, no kind: the document's line",
		files:    map[string]string{"a.yaml": docs(podYAML("a", "p1"), "apiVersion: v1\nkind: Pod\nmetadata: {}\n"), "b.yaml": "\n\nmetadata:\n  name: x\n"},
		want:     []string{},
		problems: []string{"a.yaml:11: file: invalid manifest", "b.yaml:1: file: invalid manifest"},
	}, {
		name:     "JSON syntax error",
		files:    map[string]string{"p.json": "{\"apiVersion\": \"v1\",\n\"kind\": \"Pod\",\n\"metadata\": {\"name\": \"p\"},,\n}"},
		want:     []string{},
		problems: []string{"p.json:3: file: syntax error"},
	}, {
		name:     "JSON wrong field type",
		files:    map[string]string{"p.json": "{\"apiVersion\": \"v1\",\n\"kind\": \"Pod\",\n\"metadata\": {\"name\": \"p\"},\n\"spec\": {\"priority\": \"high\"}}"},
		want:     []string{},
		problems: []string{"p.json:4: file: invalid manifest"},
	}, {
		name: "bad item of a List",
		files: map[string]string{"list.yaml": "apiVersion: v1\nkind: List\nitems:\n" +
			"- {apiVersion: v1, kind: Pod, metadata: {name: p1}}\n" +
			"- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: 7\n"},
		want:     []string{},
		problems: []string{"list.yaml:8: file: invalid manifest"},
	}, {
		name: "duplicates: the first file by name wins, the first document in a file",
		files: map[string]string{
			"a.yaml": docs(podYAML("a", "x", "from=a"), podYAML("a", "q", "from=a1"), podYAML("a", "q", "from=a2")),
			"b.yaml": docs(podYAML("a", "z", "from=b"), podYAML("a", "x", "from=b")),
		},
		want:     []string{"a/q from=a1", "a/x from=a", "a/z from=b"},
		problems: []string{"a.yaml:25: file: object defined twice", "b.yaml:13: file: object defined twice"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
					t.Fatal(err)
				}
				writeFile(t, dir, name, content)
			}
			src, sink := newPods(t, dir, tt.opts)
			l, err := src.List(waitCtx(t), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, p := range l.Items {
				k := p.Namespace + "/" + p.Name
				if from := p.Labels["from"]; from != "" {
					k += " from=" + from
				}
				got = append(got, k)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("listed (-want +got):\n%s", diff)
			}
			want := tt.problems
			if want == nil {
				want = []string{}
			}
			if diff := cmp.Diff(want, fileErrors(src.Errors())); diff != "" {
				t.Errorf("Errors() (-want +got):\n%s\n%v", diff, src.Errors())
			}
			if diff := cmp.Diff(want, fileErrors(sink.all())); diff != "" {
				t.Errorf("reported (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodedObject checks that an object is decoded whole, with its type
// set and the file's resourceVersion replaced by the source's.
func TestDecodedObject(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "p.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: a\n  resourceVersion: \"7\"\n"+
		"  labels: {app: web}\nspec:\n  nodeName: n1\n  containers:\n  - name: app\n    image: nginx:1.27\n    ports:\n    - containerPort: 80\n")
	src, _ := newPods(t, dir, file.Options{})
	l, err := src.List(waitCtx(t), metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("list: %v, %d items", err, len(l.Items))
	}
	got := l.Items[0]
	if got.ResourceVersion == "7" || got.ResourceVersion == "" || got.ResourceVersion != l.ResourceVersion {
		t.Errorf("resourceVersion %q, want the source's (the list's %q)", got.ResourceVersion, l.ResourceVersion)
	}
	want := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "a", ResourceVersion: got.ResourceVersion, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{
			Name: "app", Image: "nginx:1.27", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
		}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod (-want +got):\n%s", diff)
	}
}

// TestNew checks what New refuses, and that a type in no scheme works
// with Options.GroupVersionKind.
func TestNew(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "w.yaml", docs("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n", podYAML("a", "p")))
	if _, err := file.New[*corev1.Pod](filepath.Join(dir, "missing"), file.Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v, want fs.ErrNotExist", err)
	}
	if _, err := file.New[*corev1.Pod](filepath.Join(dir, "w.yaml"), file.Options{}); !errors.Is(err, file.ErrNotDirectory) {
		t.Errorf("a file: %v, want ErrNotDirectory", err)
	}
	if _, err := file.New[*unstructured.Unstructured](dir, file.Options{}); !errors.Is(err, file.ErrUnknownKind) {
		t.Errorf("Unstructured without a kind: %v, want ErrUnknownKind", err)
	}
	if _, err := file.New[*unstructured.Unstructured](dir, file.Options{GroupVersionKind: schema.GroupVersionKind{Kind: "Widget"}}); !errors.Is(err, file.ErrUnknownKind) {
		t.Errorf("a kind without a version: %v, want ErrUnknownKind", err)
	}
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	src, err := file.New[*unstructured.Unstructured](dir, file.Options{GroupVersionKind: gvk})
	if err != nil {
		t.Fatal(err)
	}
	l, err := src.List(waitCtx(t), metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("list: %v, %d items", err, len(l.Items))
	}
	if w := l.Items[0]; w.GetName() != "w1" || w.GroupVersionKind() != gvk || w.Object["spec"].(map[string]any)["size"] != int64(3) {
		t.Errorf("widget = %v", w.Object)
	}
	if got, want := src.Info().Resource.GroupResource, (schema.GroupResource{Group: "example.com", Resource: "widgets"}); got != want {
		t.Errorf("Info().Resource = %v, want %v", got, want)
	}
}

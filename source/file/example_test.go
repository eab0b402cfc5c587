package file_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/typedinformer/informer/source/file"
)

func ExampleNew() {
	dir, err := os.MkdirTemp("", "manifests")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	files := map[string]string{
		"web.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
  labels: {app: web}
---
apiVersion: v1
kind: ConfigMap # another kind: ignored by a Pod source
metadata:
  name: settings
  namespace: shop
`,
		"db.json": `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db", "namespace": "shop"}}`,
		"broken.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: cache
  namespace: shop
spec:
  priority: high
`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			panic(err)
		}
	}

	src, err := file.New[*corev1.Pod](dir, file.Options{
		ErrorHandler: func(error) {}, // Errors() tells them below
	})
	if err != nil {
		panic(err)
	}
	pods, err := src.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		panic(err)
	}
	for _, p := range pods.Items {
		fmt.Println("pod", p.Namespace+"/"+p.Name)
	}
	for _, err := range src.Errors() {
		var fe *file.Error
		if errors.As(err, &fe) {
			fmt.Printf("%s:%d: invalid: %v\n", filepath.Base(fe.File), fe.Line, errors.Is(err, file.ErrInvalid))
		}
	}
	fmt.Println(src.Info().Resource.GroupResource)
	// Output:
	// pod shop/db
	// pod shop/web
	// broken.yaml:7: invalid: true
	// pods
}

package file

import (
	"strings"
	"testing"
)

func TestYAMLFieldLine(t *testing.T) {
	doc := strings.Join([]string{
		"apiVersion: v1", // 1
		"kind: Pod",      // 2
		"metadata:",      // 3
		"  name: p",      // 4
		"  annotations:", // 5
		"    note: |",    // 6
		"      spec:",    // 7: inside a block scalar
		"        priority: 1",
		"spec:",                   // 9
		"  containers:",           // 10
		"  - name: a",             // 11
		"    image: nginx",        // 12
		"  - name: b",             // 13
		"    ports:",              // 14
		"    - containerPort: 80", // 15
		"      \"protocol\": TCP", // 16
		"  resources: {cpu: 1}",   // 17
		"  # priority: commented", // 18
		"  priority: 3",           // 19
		"  'nodeName': n1",        // 20
	}, "\n")
	tests := []struct {
		path string
		want int
	}{
		{"", 1},
		{"metadata.name", 4},
		{"metadata.annotations.note", 6},
		{"spec.priority", 19},
		{"spec.containers.image", 12},
		{"spec.containers.ports.containerPort", 15},
		{"spec.containers.ports.protocol", 16},
		{"spec.resources.cpu", 17},      // flow style: the line of its key
		{"spec.containers.missing", 10}, // longest prefix found
		{"spec.nodeName", 20},
		{"status.phase", 1},
	}
	for _, tt := range tests {
		var path []string
		if tt.path != "" {
			path = strings.Split(tt.path, ".")
		}
		if got := yamlFieldLine([]byte(doc), path); got != tt.want {
			t.Errorf("yamlFieldLine(%q) = %d, want %d", tt.path, got, tt.want)
		}
	}
}

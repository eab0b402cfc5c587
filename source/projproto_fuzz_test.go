package source

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// fuzzView is a projection of a Pod with a field of every shape the
// protobuf decoder handles: the metadata, sub-projections, a slice of
// them, maps, pointers, varints and the Pod's own message types.
type fuzzView struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		NodeName     string            `json:"nodeName"`
		NodeSelector map[string]string `json:"nodeSelector"`
		Priority     *int32            `json:"priority"`
		HostNetwork  bool              `json:"hostNetwork"`
		Containers   []struct {
			Name  string                 `json:"name"`
			Ports []corev1.ContainerPort `json:"ports"`
			Args  []string               `json:"args"`
		} `json:"containers"`
		Overhead corev1.ResourceList `json:"overhead"`
	} `json:"spec"`
	Status struct {
		Phase      corev1.PodPhase       `json:"phase"`
		Conditions []corev1.PodCondition `json:"conditions"`
		StartTime  *metav1.Time          `json:"startTime"`
	} `json:"status"`
}

func (v *fuzzView) DeepCopyObject() runtime.Object { return DeepCopy(v) }

// FuzzProjectionProto decodes arbitrary bytes as a Pod's protobuf message
// into a projection: it must not panic, and whatever the generated Pod
// decoder accepts, the projection decodes too, to what encoding/json
// makes of that Pod (managedFields cut, as a source that drops them does).
func FuzzProjectionProto(f *testing.F) {
	for i := range 3 {
		b, err := benchPod(i).Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	plan, err := newProtoStruct(reflect.TypeFor[fuzzView](), reflect.TypeFor[corev1.Pod](), "")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got fuzzView
		var cut []byte
		gotErr := plan.decode(reflect.ValueOf(&got).Elem(), b, &cut, metaCut{managedFields: true})
		var pod corev1.Pod
		if pod.Unmarshal(b) != nil {
			return // malformed: an error or a partial decode, both fine
		}
		if gotErr != nil {
			t.Fatalf("the Pod decodes, the projection does not: %v", gotErr)
		}
		pod.ManagedFields = nil
		j, err := json.Marshal(&pod)
		if err != nil {
			return // a Pod json cannot write (an invalid Quantity, say)
		}
		var back corev1.Pod
		if err := json.Unmarshal(j, &back); err != nil || !apiequality.Semantic.DeepEqual(&pod, &back) {
			return // JSON cannot hold this Pod as it is (invalid UTF-8, say): no oracle
		}
		var want fuzzView
		if err := json.Unmarshal(j, &want); err != nil {
			return
		}
		got.ManagedFields = nil
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b metav1.Time) bool { return a.Equal(&b) })); diff != "" {
			t.Fatalf("projection differs from the Pod's (-pod +projection):\n%s", diff)
		}
	})
}

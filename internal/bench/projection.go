package bench

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/typedinformer/informer/source"
)

// PodSummary is the projection of a Pod the benchmarks use: what a
// controller that places or counts pods reads (the metadata, the node,
// the phase and the conditions) and nothing else.
type PodSummary struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
	Status struct {
		Phase      corev1.PodPhase       `json:"phase"`
		Conditions []corev1.PodCondition `json:"conditions"`
	} `json:"status"`
}

// ProjectionOf makes PodSummary a projection of corev1.Pod.
func (*PodSummary) ProjectionOf() runtime.Object { return &corev1.Pod{} }

// DeepCopyObject copies the summary.
func (p *PodSummary) DeepCopyObject() runtime.Object { return source.DeepCopy(p) }

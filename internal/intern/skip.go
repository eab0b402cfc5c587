package intern

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// perObject names, by struct type, the string fields whose value is
// unique to one object, so not shared: interning one would add an entry
// to the canonical map, copy the string once more and save nothing.
var perObject = map[reflect.Type]map[string]bool{
	reflect.TypeFor[metav1.ObjectMeta]():      {"Name": true, "UID": true, "ResourceVersion": true, "SelfLink": true},
	reflect.TypeFor[metav1.ListMeta]():        {"ResourceVersion": true, "SelfLink": true, "Continue": true},
	reflect.TypeFor[corev1.PodStatus]():       {"PodIP": true},
	reflect.TypeFor[corev1.PodIP]():           {"IP": true},
	reflect.TypeFor[corev1.ContainerStatus](): {"ContainerID": true},
	reflect.TypeFor[corev1.NodeSystemInfo]():  {"MachineID": true, "SystemUUID": true, "BootID": true},
}

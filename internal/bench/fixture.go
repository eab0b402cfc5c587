// Package bench holds the side-by-side benchmarks of this module and
// client-go, run by `make bench`, and the inputs both sides share: pods as
// the API server sends them, and their JSON and protobuf watch streams.
package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
)

var podsGVK = corev1.SchemeGroupVersion.WithKind("Pod")

// Namespaces is the number of namespaces the pods are spread over.
const Namespaces = 10

// PodOptions varies [Pod].
type PodOptions struct {
	// ManagedFields adds the managedFields the API server keeps for a
	// controller-made pod: an entry for the controller and one for the
	// kubelet, about 2.8 KB of JSON.
	ManagedFields bool
	// Labels chooses how labels are laid out over the pods. Default:
	// [LabelsFriendly].
	Labels Labels
	// LastApplied adds kubectl's last-applied-configuration annotation
	// as `kubectl apply` writes it for the pod (its metadata and spec as
	// JSON, about 2 KB), as for pods applied by hand or by a tool that
	// applies client-side.
	LastApplied bool
}

// Labels is a layout of labels over the pods of [Pods].
type Labels uint8

// The layouts. In each, app=app-<k> selects pods in every namespace.
const (
	// LabelsFriendly gives pod i app=app-<i mod 10>, tier=web and one
	// pod-template-hash shared by all: 10 distinct label sets over any
	// number of pods, kind to a cache that matches each set once.
	LabelsFriendly Labels = iota
	// LabelsDeployment lays pods out as Deployments make them: per
	// namespace, 50 ReplicaSets of 20 pods (500 over 10k pods), each with
	// its own pod-template-hash, which the pods' names and owner carry
	// too; ReplicaSet k of a namespace belongs to app=app-<k>, so app=x
	// selects one pod in 50, in every namespace. One label set per
	// ReplicaSet.
	LabelsDeployment
	// LabelsStatefulSet lays pods out as StatefulSets make them: per
	// namespace, 50 StatefulSets of 20 pods, StatefulSet k of app=app-<k>,
	// and every pod labelled with its own name
	// (statefulset.kubernetes.io/pod-name) and ordinal
	// (apps.kubernetes.io/pod-index) besides the set's
	// controller-revision-hash: one label set per pod.
	LabelsStatefulSet
)

// String returns "friendly", "deployment" or "statefulset".
func (l Labels) String() string {
	switch l {
	case LabelsDeployment:
		return "deployment"
	case LabelsStatefulSet:
		return "statefulset"
	}
	return "friendly"
}

// Apps is the number of apps of the [LabelsDeployment] and
// [LabelsStatefulSet] layouts: one controller per app and namespace.
const Apps = 50

// controllerPods is the number of pods of one ReplicaSet or StatefulSet.
const controllerPods = 20

// LabelSets returns the number of distinct label sets of pods.
func LabelSets(pods []*corev1.Pod) int {
	seen := make(map[string]struct{})
	for _, p := range pods {
		seen[labels.Set(p.Labels).String()] = struct{}{} // sorted by key
	}
	return len(seen)
}

// podNaming is what the label layout decides of a pod: its name, labels
// and owner, and the app its image is named after.
type podNaming struct {
	app, name, generateName string
	labels                  map[string]string
	ownerKind, ownerName    string
}

// naming returns pod i's naming in layout l. The pod's namespace is
// i/10 mod [Namespaces] in every layout; j numbers the pods of that
// namespace in order, and controller j/20 of the namespace owns pod j.
func naming(i int, l Labels) podNaming {
	if l != LabelsDeployment && l != LabelsStatefulSet {
		app := fmt.Sprintf("app-%d", i%10)
		hash := "7d4b9c8f5d"
		rs := app + "-" + hash
		return podNaming{app: app, name: fmt.Sprintf("%s-%05d", rs, i), generateName: rs + "-",
			labels:    map[string]string{"app": app, "tier": "web", "pod-template-hash": hash},
			ownerKind: "ReplicaSet", ownerName: rs}
	}
	ns := i / 10 % Namespaces
	j := i/(10*Namespaces)*10 + i%10
	ctl := j / controllerPods % Apps   // the app
	gen := j / (controllerPods * Apps) // beyond 1000 pods a namespace, a second controller per app
	app := fmt.Sprintf("app-%d", ctl)
	// A 10-character hash of its own for every controller of the fixture.
	id := uint64((gen*Namespaces+ns)*Apps + ctl)
	hash := fmt.Sprintf("%010x", id*0x9e3779b97f4a7c15>>24)
	if l == LabelsDeployment {
		rs := app + "-" + hash
		return podNaming{app: app, name: fmt.Sprintf("%s-%05d", rs, i), generateName: rs + "-",
			labels:    map[string]string{"app": app, "tier": "web", "pod-template-hash": hash},
			ownerKind: "ReplicaSet", ownerName: rs}
	}
	sts := fmt.Sprintf("%s-%d", app, gen)
	name := fmt.Sprintf("%s-%d", sts, j%controllerPods)
	return podNaming{app: app, name: name, generateName: sts + "-",
		labels: map[string]string{"app": app, "tier": "web", "controller-revision-hash": sts + "-" + hash,
			"statefulset.kubernetes.io/pod-name": name, "apps.kubernetes.io/pod-index": strconv.Itoa(j % controllerPods)},
		ownerKind: "StatefulSet", ownerName: sts}
}

// Pod returns pod i of a Deployment's ReplicaSet as the API server sends
// it: about 4 KB of JSON with labels, annotations, an owner, two
// containers with resources, env and probes, tolerations, a volume, and a
// status with conditions and container statuses. Pods differ in name, UID,
// namespace (i/10 mod [Namespaces]), labels and owner (as opts.Labels lays
// them out; by default app=app-<i mod 10>, so every namespace has every
// app), node and IPs.
func Pod(i int, opts PodOptions) *corev1.Pod {
	now := metav1.NewTime(time.Unix(1700000000, 0).UTC())
	nm := naming(i, opts.Labels)
	app := nm.app
	grace := int64(30)
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              nm.name,
			GenerateName:      nm.generateName,
			Namespace:         fmt.Sprintf("ns-%d", i/10%Namespaces),
			UID:               types.UID(fmt.Sprintf("6f1c2d3e-%04x-4000-8000-%012x", i%0xffff, i)),
			ResourceVersion:   fmt.Sprint(1000 + i),
			CreationTimestamp: now,
			Labels:            nm.labels,
			Annotations: map[string]string{
				"kubectl.kubernetes.io/restartedAt": "2023-11-14T22:13:20Z",
				"prometheus.io/scrape":              "true",
				"prometheus.io/port":                "9090",
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: nm.ownerKind, Name: nm.ownerName,
				UID: "0b3f7a2c-5d6e-4f80-9a1b-2c3d4e5f6a7b", Controller: new(true), BlockOwnerDeletion: new(true),
			}},
		},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{
				Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: new(int64(3607)), Path: "token"}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
						Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				}},
			}}},
			Containers: []corev1.Container{
				{
					Name: "app", Image: "registry.example.com/shop/" + app + ":1.42.0",
					Args: []string{"--port=8080", "--log-format=json", "--config=/etc/app/config.yaml"},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
						{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
					Env: []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "REGION", Value: "eu-west-1"},
						{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
					},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstrPort(8080), Scheme: corev1.URISchemeHTTP}},
						PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
					VolumeMounts:             []corev1.VolumeMount{{Name: "kube-api-access-x7k2p", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
					TerminationMessagePath:   "/dev/termination-log",
					TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					ImagePullPolicy:          corev1.PullIfNotPresent,
				},
				{
					Name: "proxy", Image: "registry.example.com/mesh/proxy:2.1.7", Args: []string{"--upstream=127.0.0.1:8080"},
					VolumeMounts:             []corev1.VolumeMount{{Name: "kube-api-access-x7k2p", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}},
					TerminationMessagePath:   "/dev/termination-log",
					TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					ImagePullPolicy:          corev1.PullIfNotPresent,
				},
			},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            "default",
			NodeName:                      fmt.Sprintf("node-%d", i%100),
			SecurityContext:               &corev1.PodSecurityContext{},
			SchedulerName:                 "default-scheduler",
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))},
			},
			Priority:           new(int32(0)),
			EnableServiceLinks: new(true),
			PreemptionPolicy:   new(corev1.PreemptLowerPriority),
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable,
			HostIP: fmt.Sprintf("192.168.1.%d", i%100), PodIP: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255), StartTime: &now,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			},
			ContainerStatuses: []corev1.ContainerStatus{
				containerStatus("app", "registry.example.com/shop/"+app+":1.42.0", i, now),
				containerStatus("proxy", "registry.example.com/mesh/proxy:2.1.7", i, now),
			},
		},
	}
	if opts.LastApplied {
		applied := map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": p.Name, "namespace": p.Namespace, "labels": p.Labels}, "spec": p.Spec}
		b, err := json.Marshal(applied)
		if err != nil {
			panic(err) // a fixture of this package's own types
		}
		p.Annotations[corev1.LastAppliedConfigAnnotation] = string(b) + "\n"
	}
	if opts.ManagedFields {
		p.ManagedFields = managedFields(now)
	}
	return p
}

func containerStatus(name, image string, i int, now metav1.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: name, Ready: true, Started: new(true), Image: image,
		ImageID:     image + "@sha256:5f4ac1e9b7d3c2a1908f7e6d5c4b3a2918f7e6d5c4b3a2918f7e6d5c4b3a291",
		ContainerID: fmt.Sprintf("containerd://%064x", i*7919+len(name)),
		State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
	}
}

// managedFields are the entries of a pod made by a ReplicaSet and run by
// a kubelet: about 2.8 KB of JSON.
func managedFields(now metav1.Time) []metav1.ManagedFieldsEntry {
	ctrl := `{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/restartedAt":{},"f:prometheus.io/port":{},"f:prometheus.io/scrape":{}},"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:tier":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"0b3f7a2c-5d6e-4f80-9a1b-2c3d4e5f6a7b\"}":{}}},` +
		`"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:args":{},"f:env":{".":{},"k:{\"name\":\"MODE\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"POD_NAME\"}":{".":{},"f:name":{},"f:valueFrom":{".":{},"f:fieldRef":{}}},"k:{\"name\":\"REGION\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}},"k:{\"containerPort\":9090,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}},"f:readinessProbe":{".":{},"f:failureThreshold":{},"f:httpGet":{".":{},"f:path":{},"f:port":{},"f:scheme":{}},"f:periodSeconds":{},"f:successThreshold":{},"f:timeoutSeconds":{}},"f:resources":{".":{},"f:limits":{".":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}},` +
		`"k:{\"name\":\"proxy\"}":{".":{},"f:args":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{},"f:preemptionPolicy":{},"f:priority":{},"f:serviceAccount":{},"f:serviceAccountName":{},` +
		`"f:tolerations":{},"f:volumes":{".":{},"k:{\"name\":\"kube-api-access-x7k2p\"}":{".":{},"f:name":{},"f:projected":{".":{},"f:defaultMode":{},"f:sources":{}}}}}}`
	kubelet := `{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"PodScheduled\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.0.3.17\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`
	entry := func(manager, raw, sub string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			Time: &now, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(raw)}, Subresource: sub}
	}
	return []metav1.ManagedFieldsEntry{entry("kube-controller-manager", ctrl, ""), entry("kubelet", kubelet, "status")}
}

// Pods returns pods 0..n-1.
func Pods(n int, opts PodOptions) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = Pod(i, opts)
	}
	return out
}

// wireEvent is a watch event as the API server encodes it in JSON.
type wireEvent struct {
	Type   watch.EventType `json:"type"`
	Object runtime.Object  `json:"object"`
}

// JSONWatchStream is a JSON watch stream of one event per pod, of type
// typ, encoded as the API server writes it: one object per line.
func JSONWatchStream(typ watch.EventType, pods []*corev1.Pod) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, p := range pods {
		if err := enc.Encode(wireEvent{Type: typ, Object: p}); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// JSONList is a PodList body at resourceVersion rv.
func JSONList(rv string, pods []*corev1.Pod) ([]byte, error) {
	l := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: rv}}
	for _, p := range pods {
		l.Items = append(l.Items, *p)
	}
	return json.Marshal(l)
}

// ProtobufWatchStream is a protobuf watch stream of one event per pod, of
// type typ, as the API server writes it: each event a length-prefixed
// metav1.WatchEvent whose object is a runtime.Unknown with the "k8s\x00"
// magic.
func ProtobufWatchStream(typ watch.EventType, pods []*corev1.Pod) ([]byte, error) {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok || info.StreamSerializer == nil {
		return nil, fmt.Errorf("bench: no protobuf stream serializer")
	}
	enc := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
	var buf bytes.Buffer
	fw := info.StreamSerializer.Framer.NewFrameWriter(&buf)
	for _, p := range pods {
		var obj bytes.Buffer
		if err := enc.Encode(p, &obj); err != nil {
			return nil, err
		}
		ev := &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: obj.Bytes()}}
		var frame bytes.Buffer
		if err := info.StreamSerializer.Encode(ev, &frame); err != nil {
			return nil, err
		}
		if _, err := fw.Write(frame.Bytes()); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

func intstrPort(p int32) intstr.IntOrString { return intstr.FromInt32(p) }

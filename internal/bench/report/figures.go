package main

// kind says how a figure's ratio is read.
type kind int

const (
	// throughput: ratio = ours / client-go of a rate; more is better.
	throughput kind = iota
	// cost: ratio = ours / client-go of a cost; less is better.
	cost
	// absolute: the target bounds ours' own value (its median, or its
	// worst run with worst set); client-go's is shown beside it.
	absolute
	// speedup: ratio = ours at Alt / ours at Bench; more is better.
	speedup
)

// figure is one line of the report: a benchmark of both sides and the
// metric compared.
type figure struct {
	name  string
	bench string // the benchmark, without the /impl= part
	alt   string // speedup: the benchmark whose rate is divided by bench's
	unit  string
	kind  kind
	// target bounds the ratio (or ours' value, for absolute): at least
	// target for throughput and speedup, at most target otherwise. Zero:
	// no target, the line is information.
	target float64
	// worst checks the target against the worst round, not the median.
	worst bool
	// theirs, if set, is client-go's benchmark when it is not bench: a
	// "defaults vs defaults" row pairs two settings.
	theirs string
	// setting says how the two sides are configured, for the table.
	setting string
	// extra is a metric of ours' benchmark printed beside the figure
	// (the distinct label sets of a lister's pods).
	extra string
}

// The settings of the rows that compare the two sides at equal settings.
const (
	mfKeep = "both keep managedFields (ours: KeepManagedFields)"
	mfDrop = "both drop managedFields (client-go: SetTransform)"
)

// realSet is the setting of the real-server rows (make bench-real).
const realSet = "kube-apiserver + etcd, no watch cache; both drop managedFields; both told the format"

// The label layouts of the lister rows (internal/bench fixture.go).
const (
	lDeploy = "a Deployment's pods: a label set per ReplicaSet of 20"
	lSTS    = "a StatefulSet's pods: a label set per pod"
	lIndex  = "ours: a label index on app; client-go: an Indexer on app, ByIndex"
)

// figures are the report's lines, in order.
var figures = []figure{
	{name: "watch-1-handler", bench: "BenchmarkWatch/handlers=1", unit: "events/s", kind: throughput, target: 5, worst: true},
	{name: "watch-1-handler-allocs", bench: "BenchmarkWatch/handlers=1", unit: "allocs/op", kind: absolute, target: 1, worst: true},
	{name: "watch-10-handlers", bench: "BenchmarkWatch/handlers=10", unit: "events/s", kind: throughput, target: 8, worst: true},
	{name: "watch-10-handlers-cpu-neighbour", bench: "BenchmarkWatch/handlers=10/neighbour=cpu", unit: "events/s", kind: throughput, target: 8, worst: true,
		setting: "a CPU-bound process on every core beside it"},
	{name: "initial-sync-10k-list-time", bench: "BenchmarkInitialSync/pods=10k/mode=list", unit: "ns/pod", kind: cost, target: 0.3},
	{name: "initial-sync-10k-list-allocs", bench: "BenchmarkInitialSync/pods=10k/mode=list", unit: "allocs/pod", kind: cost, target: 0.1},
	{name: "initial-sync-10k-stream-time", bench: "BenchmarkInitialSync/pods=10k/mode=stream", unit: "ns/pod", kind: cost, target: 0.3},
	{name: "initial-sync-10k-stream-allocs", bench: "BenchmarkInitialSync/pods=10k/mode=stream", unit: "allocs/pod", kind: cost, target: 0.1},
	{name: "initial-sync-100k-list-time", bench: "BenchmarkInitialSync/pods=100k/mode=list", unit: "ns/pod", kind: cost, target: 0.3},
	{name: "initial-sync-100k-list-allocs", bench: "BenchmarkInitialSync/pods=100k/mode=list", unit: "allocs/pod", kind: cost, target: 0.1},
	{name: "initial-sync-100k-stream-time", bench: "BenchmarkInitialSync/pods=100k/mode=stream", unit: "ns/pod", kind: cost, target: 0.3},
	{name: "initial-sync-100k-stream-allocs", bench: "BenchmarkInitialSync/pods=100k/mode=stream", unit: "allocs/pod", kind: cost, target: 0.1},
	{name: "relist-stream-unchanged-peak-heap", bench: "BenchmarkRelistPeakHeap/pods=20k/changed=0/mode=stream", unit: "peak/steady", kind: absolute, target: 1.1,
		setting: "a streaming list; unchanged pods"},
	{name: "relist-list-paged-unchanged-peak-heap", bench: "BenchmarkRelistPeakHeap/pods=20k/changed=0/mode=list-paged", unit: "peak/steady", kind: absolute, target: 1.1,
		setting: "a paged LIST; unchanged pods"},
	{name: "relist-list-whole-unchanged-peak-heap", bench: "BenchmarkRelistPeakHeap/pods=20k/changed=0/mode=list-whole", unit: "peak/steady", kind: absolute, target: 1.1,
		setting: "a LIST answered whole, over HTTP; unchanged pods"},
	{name: "relist-stream-5pct-peak-heap", bench: "BenchmarkRelistPeakHeap/pods=20k/changed=5pct/mode=stream", unit: "peak/steady", kind: absolute, target: 1.15,
		setting: "a streaming list; 1 in 20 changed"},
	{name: "relist-list-paged-5pct-peak-heap", bench: "BenchmarkRelistPeakHeap/pods=20k/changed=5pct/mode=list-paged", unit: "peak/steady", kind: absolute, target: 1.15,
		setting: "a paged LIST; 1 in 20 changed"},
	{name: "relist-list-whole-5pct-peak-heap", bench: "BenchmarkRelistPeakHeap/pods=20k/changed=5pct/mode=list-whole", unit: "peak/steady", kind: absolute, target: 1.15,
		setting: "a LIST answered whole, over HTTP; 1 in 20 changed"},
	{name: "relist-stream-all-changed-peak-heap", bench: "BenchmarkRelistPeakHeap/pods=20k/changed=100pct/mode=stream", unit: "peak/steady", kind: absolute, target: 2.1,
		setting: "a streaming list; every pod changed"},
	{name: "relist-list-paged-all-changed-peak-heap", bench: "BenchmarkRelistPeakHeap/pods=20k/changed=100pct/mode=list-paged", unit: "peak/steady", kind: absolute, target: 2.1,
		setting: "a paged LIST; every pod changed"},
	{name: "relist-list-whole-all-changed-peak-heap", bench: "BenchmarkRelistPeakHeap/pods=20k/changed=100pct/mode=list-whole", unit: "peak/steady", kind: absolute, target: 2.1,
		setting: "a LIST answered whole, over HTTP; every pod changed"},
	{name: "heap-per-pod-both-drop", bench: "BenchmarkHeapPerPod/labels=deployment/mf=drop", unit: "B/pod", kind: cost, target: 0.65, extra: "label-sets",
		setting: "both drop managedFields (client-go: SetTransform)"},
	{name: "heap-per-pod-both-keep", bench: "BenchmarkHeapPerPod/labels=deployment/mf=keep", unit: "B/pod", kind: cost, target: 0.7, extra: "label-sets",
		setting: "both keep managedFields (ours: KeepManagedFields)"},
	{name: "heap-per-pod-statefulset-both-drop", bench: "BenchmarkHeapPerPod/labels=statefulset/mf=drop", unit: "B/pod", kind: cost, extra: "label-sets",
		setting: "both drop managedFields (client-go: SetTransform); a label set per pod"},
	{name: "heap-per-pod-defaults", bench: "BenchmarkHeapPerPod/labels=deployment/mf=drop", theirs: "BenchmarkHeapPerPod/labels=deployment/mf=keep", unit: "B/pod", kind: cost,
		setting: "defaults vs defaults: ours drops managedFields, client-go keeps them"},
	{name: "decode-json-watch-event", bench: "BenchmarkDecodeWatchEvent/mf=keep", unit: "ns/op", kind: cost, target: 0.35,
		setting: "the decoder alone, both decoding managedFields"},
	{name: "decode-json-watch-event-allocs", bench: "BenchmarkDecodeWatchEvent/mf=keep", unit: "allocs/op", kind: cost,
		setting: "the decoder alone, both decoding managedFields"},
	{name: "decode-json-watch-event-defaults", bench: "BenchmarkDecodeWatchEvent/mf=drop", theirs: "BenchmarkDecodeWatchEvent/mf=keep", unit: "ns/op", kind: cost,
		setting: "defaults vs defaults: ours cuts managedFields from the bytes, client-go decodes them"},
	{name: "wire-json", bench: "BenchmarkWire/format=json/mf=keep", unit: "events/s", kind: throughput, target: 2.5, setting: mfKeep},
	{name: "wire-json-allocs", bench: "BenchmarkWire/format=json/mf=keep", unit: "allocs/op", kind: cost, target: 0.7, setting: mfKeep},
	{name: "wire-json-both-drop", bench: "BenchmarkWire/format=json/mf=drop", unit: "events/s", kind: throughput, setting: mfDrop},
	{name: "wire-json-both-drop-allocs", bench: "BenchmarkWire/format=json/mf=drop", unit: "allocs/op", kind: cost, setting: mfDrop},
	{name: "wire-json-defaults", bench: "BenchmarkWire/format=json/mf=drop", theirs: "BenchmarkWire/format=json/mf=keep", unit: "events/s", kind: throughput,
		setting: "defaults vs defaults: ours drops managedFields, client-go keeps them"},
	{name: "wire-protobuf", bench: "BenchmarkWire/format=protobuf/mf=keep", unit: "events/s", kind: throughput, target: 1.3, setting: mfKeep},
	{name: "wire-protobuf-both-drop", bench: "BenchmarkWire/format=protobuf/mf=drop", unit: "events/s", kind: throughput, setting: mfDrop},
	{name: "wire-json-parallel-procs-1", bench: "BenchmarkWireParallel/procs=1", unit: "events/s", kind: throughput, setting: mfDrop},
	{name: "wire-json-parallel-procs-2", bench: "BenchmarkWireParallel/procs=2", unit: "events/s", kind: throughput, setting: mfDrop},
	{name: "wire-json-parallel-speedup", bench: "BenchmarkWireParallel/procs=1", alt: "BenchmarkWireParallel/procs=2", unit: "events/s", kind: speedup, target: 1.6},
	{name: "list-all-scan-deployment", bench: "BenchmarkLister/labels=deployment/query=list-all", unit: "ns/op", kind: cost, target: 0.5, extra: "label-sets",
		setting: lDeploy},
	{name: "list-all-scan-statefulset", bench: "BenchmarkLister/labels=statefulset/query=list-all", unit: "ns/op", kind: cost, target: 0.5, extra: "label-sets",
		setting: lSTS},
	{name: "list-all-scan-friendly", bench: "BenchmarkLister/labels=friendly/query=list-all", unit: "ns/op", kind: cost, extra: "label-sets",
		setting: "a friendly layout: 10 label sets over 10k pods"},
	{name: "list-all-label-index-deployment", bench: "BenchmarkLister/labels=deployment/query=list-all-label-index", unit: "ns/op", kind: cost, target: 0.5, extra: "label-sets",
		setting: lIndex + "; " + lDeploy},
	{name: "list-all-label-index-statefulset", bench: "BenchmarkLister/labels=statefulset/query=list-all-label-index", unit: "ns/op", kind: cost, target: 0.5, extra: "label-sets",
		setting: lIndex + "; " + lSTS},
	{name: "list-namespace-deployment", bench: "BenchmarkLister/labels=deployment/query=list-namespace", unit: "ns/op", kind: cost, target: 0.5, extra: "label-sets",
		setting: lDeploy},
	{name: "list-namespace-statefulset", bench: "BenchmarkLister/labels=statefulset/query=list-namespace", unit: "ns/op", kind: cost, target: 0.5, extra: "label-sets",
		setting: lSTS},
	{name: "get-deployment", bench: "BenchmarkLister/labels=deployment/query=get", unit: "ns/op", kind: cost, target: 1.0, setting: lDeploy},
	{name: "get-statefulset", bench: "BenchmarkLister/labels=statefulset/query=get", unit: "ns/op", kind: cost, target: 1.0, setting: lSTS},
	{name: "real-sync-10k-stream-json-time", bench: "BenchmarkRealServerSync/pods=10k/format=json/mode=stream", unit: "ns/pod", kind: cost, target: 0.5, setting: realSet},
	{name: "real-sync-10k-stream-json-peak-heap", bench: "BenchmarkRealServerSync/pods=10k/format=json/mode=stream", unit: "peak-B/pod", kind: cost, target: 0.7, setting: realSet},
	{name: "real-sync-10k-stream-json-allocs", bench: "BenchmarkRealServerSync/pods=10k/format=json/mode=stream", unit: "allocs/pod", kind: cost, setting: realSet},
	{name: "real-sync-10k-list-json-time", bench: "BenchmarkRealServerSync/pods=10k/format=json/mode=list", unit: "ns/pod", kind: cost, target: 0.5, setting: realSet},
	{name: "real-sync-10k-list-json-peak-heap", bench: "BenchmarkRealServerSync/pods=10k/format=json/mode=list", unit: "peak-B/pod", kind: cost, target: 0.7, setting: realSet},
	{name: "real-sync-10k-list-json-allocs", bench: "BenchmarkRealServerSync/pods=10k/format=json/mode=list", unit: "allocs/pod", kind: cost, setting: realSet},
	{name: "real-sync-10k-stream-protobuf-time", bench: "BenchmarkRealServerSync/pods=10k/format=protobuf/mode=stream", unit: "ns/pod", kind: cost, target: 0.5, setting: realSet},
	{name: "real-sync-10k-stream-protobuf-peak-heap", bench: "BenchmarkRealServerSync/pods=10k/format=protobuf/mode=stream", unit: "peak-B/pod", kind: cost, target: 0.7, setting: realSet},
	{name: "real-sync-10k-stream-protobuf-allocs", bench: "BenchmarkRealServerSync/pods=10k/format=protobuf/mode=stream", unit: "allocs/pod", kind: cost, setting: realSet},
	{name: "real-sync-10k-list-protobuf-time", bench: "BenchmarkRealServerSync/pods=10k/format=protobuf/mode=list", unit: "ns/pod", kind: cost, target: 0.5, setting: realSet},
	{name: "real-sync-10k-list-protobuf-peak-heap", bench: "BenchmarkRealServerSync/pods=10k/format=protobuf/mode=list", unit: "peak-B/pod", kind: cost, target: 0.7, setting: realSet},
	{name: "real-sync-10k-list-protobuf-allocs", bench: "BenchmarkRealServerSync/pods=10k/format=protobuf/mode=list", unit: "allocs/pod", kind: cost, setting: realSet},
	{name: "real-heap-per-pod", bench: "BenchmarkRealServerSync/pods=10k/format=protobuf/mode=stream", unit: "B/pod", kind: cost, target: 0.65, setting: realSet},
	{name: "real-relist-10k-stream-json-peak-heap", bench: "BenchmarkRealServerRelist/pods=10k/format=json/mode=stream", unit: "peak/steady", kind: absolute, target: 1.1, setting: realSet + "; after a 410, one pod changed"},
	{name: "real-relist-10k-stream-json-time", bench: "BenchmarkRealServerRelist/pods=10k/format=json/mode=stream", unit: "ns/pod", kind: cost, setting: realSet},
	{name: "real-relist-10k-list-json-peak-heap", bench: "BenchmarkRealServerRelist/pods=10k/format=json/mode=list", unit: "peak/steady", kind: absolute, target: 1.1, setting: realSet + "; after a 410, one pod changed"},
	{name: "real-relist-10k-list-json-time", bench: "BenchmarkRealServerRelist/pods=10k/format=json/mode=list", unit: "ns/pod", kind: cost, setting: realSet},
	{name: "real-relist-10k-stream-protobuf-peak-heap", bench: "BenchmarkRealServerRelist/pods=10k/format=protobuf/mode=stream", unit: "peak/steady", kind: absolute, target: 1.1, setting: realSet + "; after a 410, one pod changed"},
	{name: "real-relist-10k-stream-protobuf-time", bench: "BenchmarkRealServerRelist/pods=10k/format=protobuf/mode=stream", unit: "ns/pod", kind: cost, setting: realSet},
	{name: "real-relist-10k-list-protobuf-peak-heap", bench: "BenchmarkRealServerRelist/pods=10k/format=protobuf/mode=list", unit: "peak/steady", kind: absolute, target: 1.1, setting: realSet + "; after a 410, one pod changed"},
	{name: "real-relist-10k-list-protobuf-time", bench: "BenchmarkRealServerRelist/pods=10k/format=protobuf/mode=list", unit: "ns/pod", kind: cost, setting: realSet},
	{name: "real-sync-10k-stream-defaults", bench: "BenchmarkRealServerSync/pods=10k/format=json/mode=stream", theirs: "BenchmarkRealServerSync/pods=10k/format=protobuf/mode=stream", unit: "ns/pod", kind: cost,
		setting: "defaults vs defaults: ours JSON, client-go's typed clients protobuf"},
}

// floor is an information line: a bound under (or, for a speed-up, over)
// a figure on this machine in the same run.
type floor struct {
	name, bench string
	// alt: the line is the median of alt divided by the median of bench
	// (a speed-up), not bench's median itself.
	alt  string
	unit string
}

// label is the unit the line is printed with.
func (f floor) label() string {
	if f.alt != "" {
		return "speedup"
	}
	return f.unit
}

// value is f's value in res, if res has it.
func (f floor) value(res *results) (float64, bool) {
	v, ok := res.median(f.bench, f.unit)
	if !ok || f.alt == "" {
		return v, ok
	}
	a, ok := res.median(f.alt, f.unit)
	if !ok || v == 0 {
		return 0, false
	}
	return a / v, true
}

// floors are the information lines: what moving a value between
// goroutines costs on the machine, the floor under every pipeline figure,
// and the floors of the figures that miss their target.
var floors = []floor{
	// The real server's answer to a LIST of every pod, read and dropped
	// with nothing decoded: the floor under any client's sync by LIST.
	{name: "floor-real-list-10k-json", bench: "BenchmarkRealServerSync/pods=10k/format=json/mode=list/impl=floor", unit: "ns/pod"},
	{name: "floor-real-list-10k-protobuf", bench: "BenchmarkRealServerSync/pods=10k/format=protobuf/mode=list/impl=floor", unit: "ns/pod"},
	// A plain loop over the cached pods matching one label, nothing
	// else: what a scan without an index or a summary costs.
	{name: "floor-list-all-scan-statefulset", bench: "BenchmarkLister/labels=statefulset/query=list-all/impl=floor", unit: "ns/op"},
	// The pods alone, decoded by our source with their strings and maps
	// shared as our informer shares them, held without an informer: ours
	// less the informer's own cost.
	{name: "floor-heap-per-pod-both-drop", bench: "BenchmarkHeapPerPod/labels=deployment/mf=drop/impl=floor", unit: "B/pod"},
	{name: "floor-heap-per-pod-both-keep", bench: "BenchmarkHeapPerPod/labels=deployment/mf=keep/impl=floor", unit: "B/pod"},
	// A round trip: two hand-offs, one each way, between two goroutines
	// over unbuffered channels.
	{name: "floor-goroutine-round-trip", bench: "BenchmarkHandoff/kind=ping-pong", unit: "ns/op"},
	{name: "floor-buffered-channel", bench: "BenchmarkHandoff/kind=buffered", unit: "ns/op"},
	// Two independent decoders, nothing shared: the speed-up from 1 to 2
	// procs that the machine gives decoding at the time, the ceiling
	// over wire-json-parallel-speedup.
	{name: "ceiling-decode-spread-speedup", bench: "BenchmarkDecodeSpread/procs=1", alt: "BenchmarkDecodeSpread/procs=2", unit: "events/s"},
	// The same relist read and dropped beside a synced informer: what the
	// source's own copies (and, in process, the fake's) hold.
	{name: "floor-relist-stream", bench: "BenchmarkRelistPeakHeap/pods=20k/changed=0/mode=stream/impl=floor", unit: "peak/steady"},
	{name: "floor-relist-list-paged", bench: "BenchmarkRelistPeakHeap/pods=20k/changed=0/mode=list-paged/impl=floor", unit: "peak/steady"},
	{name: "floor-relist-list-whole", bench: "BenchmarkRelistPeakHeap/pods=20k/changed=0/mode=list-whole/impl=floor", unit: "peak/steady"},
	// Our source alone, its initial list read and dropped: for a LIST
	// the copy of each item out of the list, which both sides make.
	{name: "floor-initial-sync-10k-list-source", bench: "BenchmarkInitialSync/pods=10k/mode=list/impl=floor", unit: "ns/pod"},
	{name: "floor-initial-sync-10k-stream-source", bench: "BenchmarkInitialSync/pods=10k/mode=stream/impl=floor", unit: "ns/pod"},
	{name: "floor-initial-sync-100k-list-source", bench: "BenchmarkInitialSync/pods=100k/mode=list/impl=floor", unit: "ns/pod"},
	{name: "floor-initial-sync-100k-stream-source", bench: "BenchmarkInitialSync/pods=100k/mode=stream/impl=floor", unit: "ns/pod"},
}

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
	// worst checks the target against the worst run, not the median.
	worst bool
}

// figures are the report's lines, in order.
var figures = []figure{
	{name: "watch-1-handler", bench: "BenchmarkWatch/handlers=1", unit: "events/s", kind: throughput, target: 5, worst: true},
	{name: "watch-1-handler-allocs", bench: "BenchmarkWatch/handlers=1", unit: "allocs/op", kind: absolute, target: 1, worst: true},
	{name: "watch-10-handlers", bench: "BenchmarkWatch/handlers=10", unit: "events/s", kind: throughput, target: 8},
	{name: "initial-sync-10k-list-time", bench: "BenchmarkInitialSync/pods=10k/mode=list", unit: "ns/pod", kind: cost, target: 0.3},
	{name: "initial-sync-10k-list-allocs", bench: "BenchmarkInitialSync/pods=10k/mode=list", unit: "allocs/pod", kind: cost, target: 0.1},
	{name: "initial-sync-10k-stream-time", bench: "BenchmarkInitialSync/pods=10k/mode=stream", unit: "ns/pod", kind: cost, target: 0.3},
	{name: "initial-sync-10k-stream-allocs", bench: "BenchmarkInitialSync/pods=10k/mode=stream", unit: "allocs/pod", kind: cost, target: 0.1},
	{name: "initial-sync-100k-list-time", bench: "BenchmarkInitialSync/pods=100k/mode=list", unit: "ns/pod", kind: cost, target: 0.3},
	{name: "initial-sync-100k-list-allocs", bench: "BenchmarkInitialSync/pods=100k/mode=list", unit: "allocs/pod", kind: cost, target: 0.1},
	{name: "initial-sync-100k-stream-time", bench: "BenchmarkInitialSync/pods=100k/mode=stream", unit: "ns/pod", kind: cost, target: 0.3},
	{name: "initial-sync-100k-stream-allocs", bench: "BenchmarkInitialSync/pods=100k/mode=stream", unit: "allocs/pod", kind: cost, target: 0.1},
	{name: "relist-100k-stream-peak-heap", bench: "BenchmarkRelistPeakHeap/pods=100k/mode=stream", unit: "peak/steady", kind: absolute, target: 1.2},
	{name: "relist-100k-list-peak-heap", bench: "BenchmarkRelistPeakHeap/pods=100k/mode=list", unit: "peak/steady", kind: absolute, target: 1.2},
	{name: "heap-per-pod", bench: "BenchmarkHeapPerPod", unit: "B/pod", kind: cost, target: 0.65},
	{name: "decode-json-watch-event", bench: "BenchmarkDecodeWatchEvent", unit: "ns/op", kind: cost, target: 0.35},
	{name: "wire-json", bench: "BenchmarkWire/format=json", unit: "events/s", kind: throughput, target: 2.5},
	{name: "wire-json-allocs", bench: "BenchmarkWire/format=json", unit: "allocs/op", kind: cost, target: 0.85},
	{name: "wire-protobuf", bench: "BenchmarkWire/format=protobuf", unit: "events/s", kind: throughput, target: 1.3},
	{name: "wire-json-parallel-procs-1", bench: "BenchmarkWireParallel/procs=1", unit: "events/s", kind: throughput},
	{name: "wire-json-parallel-procs-2", bench: "BenchmarkWireParallel/procs=2", unit: "events/s", kind: throughput},
	{name: "wire-json-parallel-speedup", bench: "BenchmarkWireParallel/procs=1", alt: "BenchmarkWireParallel/procs=2", unit: "events/s", kind: speedup, target: 1.6},
	{name: "list-all-namespaces-scan", bench: "BenchmarkLister/query=list-all", unit: "ns/op", kind: cost, target: 0.5},
	{name: "list-all-namespaces-label-index", bench: "BenchmarkLister/query=list-all-label-index", unit: "ns/op", kind: cost, target: 0.05},
	{name: "list-namespace", bench: "BenchmarkLister/query=list-namespace", unit: "ns/op", kind: cost, target: 0.5},
	{name: "get", bench: "BenchmarkLister/query=get", unit: "ns/op", kind: cost, target: 1.0},
}

// floors are information lines: what moving a value between goroutines
// costs on the machine, the floor under every pipeline figure.
var floors = []struct{ name, bench, unit string }{
	{"floor-goroutine-ping-pong", "BenchmarkHandoff/kind=ping-pong", "ns/op"},
	{"floor-buffered-channel", "BenchmarkHandoff/kind=buffered", "ns/op"},
	// A streaming list of 100k pods read and dropped beside a synced
	// informer: the peak the source's own copies make.
	{"floor-relist-100k-stream-source", "BenchmarkRelistPeakHeap/pods=100k/mode=stream/impl=floor", "peak/steady"},
	// The same for a whole LIST: the list holds a copy of every object.
	{"floor-relist-100k-list-source", "BenchmarkRelistPeakHeap/pods=100k/mode=list/impl=floor", "peak/steady"},
	// Our source alone, its initial list read and dropped: for a LIST
	// the copy of each item out of the list, which both sides make.
	{"floor-initial-sync-10k-list-source", "BenchmarkInitialSync/pods=10k/mode=list/impl=floor", "ns/pod"},
	{"floor-initial-sync-10k-stream-source", "BenchmarkInitialSync/pods=10k/mode=stream/impl=floor", "ns/pod"},
	{"floor-initial-sync-100k-list-source", "BenchmarkInitialSync/pods=100k/mode=list/impl=floor", "ns/pod"},
	{"floor-initial-sync-100k-stream-source", "BenchmarkInitialSync/pods=100k/mode=stream/impl=floor", "ns/pod"},
}

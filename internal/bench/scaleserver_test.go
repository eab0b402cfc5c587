package bench_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/typedinformer/informer/internal/bench"
)

// scaleServerEnv, set in the environment of the test binary with a pod
// count, makes TestScaleServer serve that many pods.
const scaleServerEnv = "BENCH_SCALE_SERVER_PODS"

type scaleServer struct {
	url   string
	cmd   *exec.Cmd
	stdin io.Closer
}

func startScaleServer(b *testing.B, n int) *scaleServer {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestScaleServer$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", scaleServerEnv, n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s := &scaleServer{cmd: cmd, stdin: stdin}
	if _, err := fmt.Fscan(stdout, &s.url); err != nil {
		s.stop()
		b.Fatalf("the scale server's URL: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return s
}

func (s *scaleServer) stop() {
	_ = s.stdin.Close()
	_ = s.cmd.Wait()
}

func (s *scaleServer) post(b *testing.B, path string) {
	b.Helper()
	resp, err := http.Post(s.url+"/control"+path, "", nil)
	if err != nil {
		b.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %s", path, resp.Status)
	}
}

// TestScaleServer is the server process of startScaleServer; without its
// environment variable it does nothing. It encodes scalePool server pods
// once and serves n of them, each a pool pod under a name and UID of its
// own, as one whole list at resourceVersion 1 (2 after /expire), in
// protobuf if the client accepts it and in JSON if not; a watch at the
// current version waits until /expire, then sends a 410, and one at any
// other version gets the 410 at once; a streaming list is refused, as by
// a server without the feature.
func TestScaleServer(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(scaleServerEnv))
	if err != nil {
		t.Skip("not a scale server process")
	}
	pool := make([]scaleItem, min(n, scalePool))
	protoPool := make([]protoItem, len(pool))
	for i := range pool {
		p := bench.Pod(i, bench.PodOptions{ManagedFields: true, Labels: bench.LabelsDeployment})
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		pool[i] = splitItem(t, raw, p)
		protoPool[i] = newProtoItem(t, p)
	}
	var (
		mu      sync.Mutex
		epoch   = 1
		expired = make(chan struct{})
		churn   = make(chan int, 1) // events for the open watch to send
	)
	current := func() (int, chan struct{}) {
		mu.Lock()
		defer mu.Unlock()
		return epoch, expired
	}
	gone := []byte(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version","reason":"Expired","code":410}}` + "\n")
	goneProto := protoGone(t)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /control/reset", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		epoch, expired = 1, make(chan struct{})
		mu.Unlock()
		select {
		case <-churn: // a churn no watch took
		default:
		}
	})
	mux.HandleFunc("POST /control/churn", func(w http.ResponseWriter, r *http.Request) {
		k, err := strconv.Atoi(r.URL.Query().Get("events"))
		if err != nil || k < 1 {
			http.Error(w, "events: want a count", http.StatusBadRequest)
			return
		}
		churn <- k
	})
	mux.HandleFunc("POST /control/expire", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		epoch++
		close(expired)
		expired = make(chan struct{})
		mu.Unlock()
	})
	mux.HandleFunc("GET /api/v1/pods", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		ep, exp := current()
		if q.Get("watch") == "true" || q.Get("watch") == "1" {
			if q.Get("sendInitialEvents") == "true" {
				http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Invalid","code":422}`, http.StatusUnprocessableEntity)
				return
			}
			ct, msg := "application/json", gone
			if wantsProto(r) {
				ct, msg = protoContentType+";stream=watch", goneProto
			}
			w.Header().Set("Content-Type", ct)
			if q.Get("resourceVersion") == strconv.Itoa(ep) {
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
			wait:
				for {
					select {
					case <-exp:
						break wait
					case k := <-churn:
						bw := bufio.NewWriterSize(w, 256<<10)
						writeEvents(bw, pool, protoPool, k, churnFirstRV, wantsProto(r))
						_ = bw.Flush()
						w.(http.Flusher).Flush()
					case <-r.Context().Done():
						return
					}
				}
			}
			_, _ = w.Write(msg)
			return
		}
		bw := bufio.NewWriterSize(w, 256<<10)
		if wantsProto(r) {
			w.Header().Set("Content-Type", protoContentType)
			writeProtoList(bw, protoPool, n, ep)
			_ = bw.Flush()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		writeJSONList(bw, pool, n, ep)
		_ = bw.Flush()
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mux}
	go func() { _ = hs.Serve(l) }()
	fmt.Printf("http://%s\n", l.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it
	_ = hs.Close()
	goruntime.KeepAlive(pool)
}

// scaleItem is a pool pod's JSON cut around its name, UID and
// resourceVersion.
type scaleItem struct {
	name, rv               string // the pool pod's name and resourceVersion
	before, mid, mid2, end []byte // raw = before name mid uid mid2 rv end
}

func splitItem(t *testing.T, raw []byte, p *corev1.Pod) scaleItem {
	n := bytes.Index(raw, []byte(`"name":"`+p.Name+`"`))
	u := bytes.Index(raw, []byte(`"uid":"`+string(p.UID)+`"`))
	r := bytes.Index(raw, []byte(`"resourceVersion":"`+p.ResourceVersion+`"`))
	if n < 0 || u < 0 || r < 0 || u < n || r < u {
		t.Fatalf("pod JSON without its name, uid and resourceVersion in that order: %s", raw[:200])
	}
	ns, us, rs := n+len(`"name":"`), u+len(`"uid":"`), r+len(`"resourceVersion":"`)
	return scaleItem{name: p.Name, rv: p.ResourceVersion, before: raw[:ns], mid: raw[ns+len(p.Name) : us],
		mid2: raw[us+len(p.UID) : rs], end: raw[rs+len(p.ResourceVersion):]}
}

// write writes the pod under name and uid, at resourceVersion rv (the
// pool pod's own if nil).
func (it *scaleItem) write(w *bufio.Writer, name, uid, rv []byte) {
	_, _ = w.Write(it.before)
	_, _ = w.Write(name)
	_, _ = w.Write(it.mid)
	_, _ = w.Write(uid)
	_, _ = w.Write(it.mid2)
	if rv == nil {
		_, _ = w.WriteString(it.rv)
	} else {
		_, _ = w.Write(rv)
	}
	_, _ = w.Write(it.end)
}

// writeJSONList writes n pods as kube-apiserver writes a JSON PodList.
func writeJSONList(w *bufio.Writer, pool []scaleItem, n, rv int) {
	fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"%d"},"items":[`, rv)
	var name, uid []byte
	for i := range n {
		if i > 0 {
			_ = w.WriteByte(',')
		}
		it := &pool[i%len(pool)]
		name, uid = scaleNameUID(name, uid, it.name, i, len(pool))
		it.write(w, name, uid, nil)
	}
	_, _ = w.WriteString("]}")
}

// scaleNameUID is pod i's name and UID: its pool pod's name with a
// suffix, and a UID of its own.
func scaleNameUID(name, uid []byte, poolName string, i, pool int) ([]byte, []byte) {
	name = fmt.Appendf(name[:0], "%s-%d", poolName, i/pool)
	uid = fmt.Appendf(uid[:0], "6f1c2d3e-%04x-4000-8000-%012x", i%0xffff, i)
	return name, uid
}

const protoContentType = "application/vnd.kubernetes.protobuf"

// churnFirstRV is the resourceVersion of the first churn event: past every
// pool pod's own.
const churnFirstRV = 10_000_000

// wantsProto tells whether the client asked for protobuf first.
func wantsProto(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("Accept"), protoContentType)
}

// protoItem is a pool pod's protobuf message cut around its name and UID:
// its metadata without them (the empty name and UID fields the generated
// code writes come first, so the ones appended after them win, as the
// last of a field does in protobuf; a resourceVersion, too), and its spec
// and status fields.
type protoItem struct {
	name       string
	meta, rest []byte
}

func newProtoItem(t *testing.T, p *corev1.Pod) protoItem {
	meta := p.ObjectMeta
	meta.Name, meta.UID = "", ""
	m, err := meta.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	spec, err := p.Spec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	status, err := p.Status.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return protoItem{name: p.Name, meta: m, rest: protoField(protoField(nil, 2, spec), 3, status)}
}

// protoField appends protobuf field num, length-delimited, holding val.
func protoField(b []byte, num int, val []byte) []byte {
	return append(protoHead(b, num, len(val)), val...)
}

// protoHead appends the tag and length of protobuf field num,
// length-delimited, of n bytes.
func protoHead(b []byte, num, n int) []byte {
	return binary.AppendUvarint(binary.AppendUvarint(b, uint64(num)<<3|2), uint64(n))
}

// fieldLen is the length of a length-delimited field of a small number
// holding n bytes.
func fieldLen(n int) int {
	return 1 + len(binary.AppendUvarint(nil, uint64(n))) + n
}

// sizes are the lengths of the metadata and item messages of the pod
// under name and uid, at resourceVersion rv if not nil.
func (it *protoItem) sizes(name, uid, rv []byte) (meta, item int) {
	meta = len(it.meta) + fieldLen(len(name)) + fieldLen(len(uid))
	if rv != nil {
		meta += fieldLen(len(rv))
	}
	return meta, fieldLen(meta) + len(it.rest)
}

// appendItem appends the pod's message (without a field tag around it).
func (it *protoItem) appendItem(b, name, uid, rv []byte) []byte {
	meta, _ := it.sizes(name, uid, rv)
	b = append(protoHead(b, 1, meta), it.meta...)
	b = protoField(protoField(b, 1, name), 5, uid)
	if rv != nil {
		b = protoField(b, 6, rv)
	}
	return append(b, it.rest...)
}

// writeProtoList writes n pods as kube-apiserver writes a protobuf
// PodList: the "k8s\x00" envelope of type v1 PodList around the list
// message, whose length is added up first, without building the list.
func writeProtoList(w *bufio.Writer, pool []protoItem, n, rv int) {
	lm, _ := (&metav1.ListMeta{ResourceVersion: strconv.Itoa(rv)}).Marshal()
	total := fieldLen(len(lm))
	var name, uid []byte
	for i := range n {
		it := &pool[i%len(pool)]
		name, uid = scaleNameUID(name, uid, it.name, i, len(pool))
		_, item := it.sizes(name, uid, nil)
		total += fieldLen(item)
	}
	typ := protoField(protoField(nil, 1, []byte("v1")), 2, []byte("PodList"))
	head := protoField([]byte("k8s\x00"), 1, typ)
	head = protoField(protoHead(head, 2, total), 1, lm)
	_, _ = w.Write(head)
	var b []byte
	for i := range n {
		it := &pool[i%len(pool)]
		name, uid = scaleNameUID(name, uid, it.name, i, len(pool))
		_, item := it.sizes(name, uid, nil)
		b = it.appendItem(protoHead(b[:0], 2, item), name, uid, nil)
		_, _ = w.Write(b)
	}
}

// writeEvents writes k MODIFIED watch events, of pods 0 to k-1 at
// resourceVersions from first up, in JSON or as protobuf frames.
func writeEvents(w *bufio.Writer, pool []scaleItem, protoPool []protoItem, k, first int, proto bool) {
	var name, uid, rv, b []byte
	podType := protoField(protoField(nil, 1, []byte("v1")), 2, []byte("Pod"))
	for i := range k {
		rv = strconv.AppendInt(rv[:0], int64(first+i), 10)
		if !proto {
			it := &pool[i%len(pool)]
			name, uid = scaleNameUID(name, uid, it.name, i, len(pool))
			_, _ = w.WriteString(`{"type":"MODIFIED","object":`)
			it.write(w, name, uid, rv)
			_, _ = w.WriteString("}\n")
			continue
		}
		it := &protoPool[i%len(protoPool)]
		name, uid = scaleNameUID(name, uid, it.name, i, len(protoPool))
		_, item := it.sizes(name, uid, rv)
		envelope := len("k8s\x00") + fieldLen(len(podType)) + fieldLen(item)
		event := fieldLen(len("MODIFIED")) + fieldLen(fieldLen(envelope))
		b = binary.BigEndian.AppendUint32(b[:0], uint32(event))
		b = protoHead(protoField(b, 1, []byte("MODIFIED")), 2, fieldLen(envelope))
		b = protoHead(b, 1, envelope)
		b = protoHead(protoField(append(b, "k8s\x00"...), 1, podType), 2, item)
		b = it.appendItem(b, name, uid, rv)
		_, _ = w.Write(b)
	}
}

// protoGone is a protobuf watch frame of a 410 Expired: a length prefix
// and a WatchEvent of type ERROR around a Status in the envelope.
func protoGone(t *testing.T) []byte {
	st := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Message: "too old resource version", Reason: metav1.StatusReasonExpired, Code: http.StatusGone}
	raw, err := runtime.Encode(protobuf.NewSerializer(nil, nil), st)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := (&metav1.WatchEvent{Type: "ERROR", Object: runtime.RawExtension{Raw: raw}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(ev))), ev...)
}

// TestScaleBodies: the scale server's JSON and protobuf lists decode, by
// client-go's codecs, into the same pods: pool pods under names and UIDs
// of their own, and the 410 frame into an Expired status.
func TestScaleBodies(t *testing.T) {
	const n, poolSize = 7, 3
	pool := make([]scaleItem, poolSize)
	protoPool := make([]protoItem, poolSize)
	for i := range pool {
		p := bench.Pod(i, bench.PodOptions{ManagedFields: true, Labels: bench.LabelsDeployment})
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		pool[i], protoPool[i] = splitItem(t, raw, p), newProtoItem(t, p)
	}
	var jb, pb bytes.Buffer
	jw, pw := bufio.NewWriter(&jb), bufio.NewWriter(&pb)
	writeJSONList(jw, pool, n, 4)
	writeProtoList(pw, protoPool, n, 4)
	_, _ = jw.Flush(), pw.Flush()
	decode := func(body []byte) *corev1.PodList {
		t.Helper()
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		l, ok := obj.(*corev1.PodList)
		if !ok {
			t.Fatalf("decoded a %T", obj)
		}
		return l
	}
	fromJSON, fromProto := decode(jb.Bytes()), decode(pb.Bytes())
	fromList := fromProto.DeepCopy()
	if len(fromJSON.Items) != n || fromProto.ResourceVersion != "4" {
		t.Fatalf("%d pods at version %q, want %d at 4", len(fromJSON.Items), fromProto.ResourceVersion, n)
	}
	fromJSON.TypeMeta, fromProto.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
	for i := range fromJSON.Items { // the pool's JSON carries each item's kind
		fromJSON.Items[i].TypeMeta = metav1.TypeMeta{}
	}
	if diff := cmp.Diff(fromJSON, fromProto); diff != "" {
		t.Errorf("JSON and protobuf lists differ (-json +protobuf):\n%s", diff)
	}
	want := bench.Pod(1, bench.PodOptions{ManagedFields: true, Labels: bench.LabelsDeployment})
	got := fromProto.Items[4] // pool pod 1, second time round
	if got.Name != want.Name+"-1" || got.UID == want.UID || got.Spec.NodeName != want.Spec.NodeName || len(got.ManagedFields) == 0 {
		t.Errorf("pod 4 is %s %s on %q with %d managedFields; want pool pod 1's (%s) under a name and UID of its own", got.Name, got.UID, got.Spec.NodeName, len(got.ManagedFields), want.Name)
	}
	// Events: pods 0 to 2 in both formats, at versions 50 to 52.
	var je, pe bytes.Buffer
	jw, pw = bufio.NewWriter(&je), bufio.NewWriter(&pe)
	writeEvents(jw, pool, protoPool, 3, 50, false)
	writeEvents(pw, pool, protoPool, 3, 50, true)
	_, _ = jw.Flush(), pw.Flush()
	lines := strings.Split(strings.TrimSuffix(je.String(), "\n"), "\n")
	frames := pe.Bytes()
	if len(lines) != 3 {
		t.Fatalf("%d JSON events, want 3", len(lines))
	}
	for i, line := range lines {
		var je struct {
			Type   string
			Object json.RawMessage
		}
		if err := json.Unmarshal([]byte(line), &je); err != nil || je.Type != "MODIFIED" {
			t.Fatalf("JSON event %d: %s (%v)", i, line[:80], err)
		}
		size := int(binary.BigEndian.Uint32(frames))
		var pe metav1.WatchEvent
		if err := pe.Unmarshal(frames[4 : 4+size]); err != nil || pe.Type != "MODIFIED" {
			t.Fatalf("protobuf event %d: %s (%v)", i, pe.Type, err)
		}
		frames = frames[4+size:]
		fromJSON, fromProto := decodePod(t, je.Object), decodePod(t, pe.Object.Raw)
		want := fromList.Items[i].DeepCopy()
		want.ResourceVersion = fmt.Sprint(50 + i)
		want.TypeMeta = metav1.TypeMeta{}
		if diff := cmp.Diff(want, fromJSON); diff != "" {
			t.Errorf("JSON event %d (-list pod at its new version +event):\n%s", i, diff)
		}
		if diff := cmp.Diff(want, fromProto); diff != "" {
			t.Errorf("protobuf event %d (-list pod at its new version +event):\n%s", i, diff)
		}
	}
	if len(frames) != 0 {
		t.Errorf("%d bytes after the protobuf events", len(frames))
	}

	frame := protoGone(t)
	var ev metav1.WatchEvent
	if err := ev.Unmarshal(frame[4:]); err != nil || int(binary.BigEndian.Uint32(frame)) != len(frame)-4 {
		t.Fatalf("the 410 frame: %v", err)
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(ev.Object.Raw, nil, nil)
	if st, ok := obj.(*metav1.Status); err != nil || !ok || st.Code != http.StatusGone || ev.Type != "ERROR" {
		t.Errorf("the 410 frame holds %s %v (%v)", ev.Type, obj, err)
	}
}

// decodePod decodes one pod, JSON or protobuf, by client-go's codecs,
// without its kind.
func decodePod(t *testing.T, b []byte) *corev1.Pod {
	t.Helper()
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(b, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		t.Fatalf("decoded a %T", obj)
	}
	p.TypeMeta = metav1.TypeMeta{}
	return p
}

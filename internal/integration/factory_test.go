//go:build integration

package integration

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/typedinformer/informer/factory"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/internal/leakcheck"
)

// configMapsCollection matches the configmaps collection, cluster-wide or
// in one namespace.
var configMapsCollection = regexp.MustCompile(`^/api/v1/(namespaces/[^/]+/)?configmaps$`)

// startFactory runs f.Start until the test ends, then checks it returned
// nil.
func startFactory(t *testing.T, f *factory.Factory) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start returned %v, want nil", err)
		}
	})
}

func newTestFactory(t *testing.T, cfg *rest.Config, opts factory.Options) *factory.Factory {
	t.Helper()
	f, err := factory.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func configMap(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"k": name}}
}

// TestFactorySharing: two InformerFor callers of one scope get one
// informer, and the API server gets one watch request for them (counted
// at the transport); another namespace is another informer with a watch
// of its own. A ConfigMap created later reaches the shared cache.
func TestFactorySharing(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	cs := protobufClientset(t, c.AdminConfig())
	shop, lab := uniqueName("fshare"), uniqueName("fshare")
	createNamespaces(ctx, t, cs, shop, lab)
	for i := range 3 {
		if _, err := cs.CoreV1().ConfigMaps(shop).Create(ctx, configMap(shop, fmt.Sprintf("cm-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	counter := newCounter(configMapsCollection)
	f := newTestFactory(t, counter.wrap(c.AdminConfig()), factory.Options{})
	one, releaseOne, err := factory.InformerFor[*corev1.ConfigMap](f, factory.Scope{Namespace: shop})
	if err != nil {
		t.Fatal(err)
	}
	defer releaseOne()
	startFactory(t, f)
	two, releaseTwo, err := factory.InformerFor[*corev1.ConfigMap](f, factory.Scope{Namespace: shop})
	if err != nil {
		t.Fatal(err)
	}
	defer releaseTwo()
	if one != two {
		t.Fatalf("two callers of namespace %s got two informers", shop)
	}
	if err := f.WaitForSync(waitCtxFor(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(shop).Create(ctx, configMap(shop, "later"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "the later ConfigMap is cached", func() bool { return one.Store().Len() == 4 })
	shared := counter.snapshot()

	other, releaseOther, err := factory.InformerFor[*corev1.ConfigMap](f, factory.Scope{Namespace: lab})
	if err != nil {
		t.Fatal(err)
	}
	defer releaseOther()
	if other == one {
		t.Fatal("another namespace got the same informer")
	}
	if err := f.WaitForSync(waitCtxFor(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	both := counter.snapshot()
	t.Logf("figures: factory sharing: two callers of one scope: %s; with a second scope: %s", shared, both)
	if n := shared.Watches + shared.WatchLists; n != 1 {
		t.Errorf("two callers of one scope made %d watch requests (%s), want 1", n, shared)
	}
	if n := both.Watches + both.WatchLists; n != 2 {
		t.Errorf("two scopes made %d watch requests (%s), want 2", n, both)
	}
}

// listGauge counts the list requests of one collection in flight at the
// transport: a LIST from RoundTrip until its body is closed, a streaming
// list (watch with sendInitialEvents=true) until its body has carried the
// initial-events-end bookmark or is closed. Each list request is held
// back by delay before it is sent, so that requests overlap.
type listGauge struct {
	collection *regexp.Regexp
	delay      time.Duration

	mu                       sync.Mutex
	now, max, lists, streams int
}

func (g *listGauge) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return gaugeTransport{rt: rt, g: g} }
	return cfg
}

func (g *listGauge) add(d int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now += d
	g.max = max(g.max, g.now)
}

func (g *listGauge) figures() (maxNow, lists, streams int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.max, g.lists, g.streams
}

type gaugeTransport struct {
	rt http.RoundTripper
	g  *listGauge
}

func (t gaugeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	g := t.g
	if req.Method != http.MethodGet || !g.collection.MatchString(req.URL.Path) {
		return t.rt.RoundTrip(req)
	}
	q := req.URL.Query()
	watching := q.Get("watch") == "true" || q.Get("watch") == "1"
	streaming := watching && q.Get("sendInitialEvents") == "true"
	if watching && !streaming {
		return t.rt.RoundTrip(req)
	}
	g.mu.Lock()
	if streaming {
		g.streams++
	} else {
		g.lists++
	}
	g.mu.Unlock()
	g.add(1)
	done := sync.OnceFunc(func() { g.add(-1) })
	time.Sleep(g.delay)
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		done()
		return nil, err
	}
	if resp.Header.Get("Content-Encoding") == "gzip" {
		// The server compresses a streaming list for a client that asks
		// for gzip (the REST sources do): decompress it here, so that the
		// gauge can see the end bookmark; the source then reads it plain.
		resp.Header.Del("Content-Encoding")
		resp.ContentLength = -1
		resp.Body = &gunzipped{ReadCloser: resp.Body}
	}
	resp.Body = &gaugedBody{ReadCloser: resp.Body, done: done, scan: streaming}
	return resp, nil
}

// gunzipped decompresses its body, from the first Read on.
type gunzipped struct {
	io.ReadCloser
	z *gzip.Reader
}

func (g *gunzipped) Read(p []byte) (int, error) {
	if g.z == nil {
		z, err := gzip.NewReader(g.ReadCloser)
		if err != nil {
			return 0, err
		}
		g.z = z
	}
	return g.z.Read(p)
}

// endMarker is how the initial-events-end annotation appears in a JSON
// bookmark.
var endMarker = []byte(`"` + metav1.InitialEventsAnnotationKey + `":"true"`)

// gaugedBody ends its request's count when closed, or, for a streaming
// list, once the end bookmark has been read.
type gaugedBody struct {
	io.ReadCloser
	done func()
	scan bool
	tail []byte // the end of what was read, to find a marker across reads
}

func (b *gaugedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.scan && n > 0 {
		b.tail = append(b.tail, p[:n]...)
		if bytes.Contains(b.tail, endMarker) {
			b.scan = false
			b.done()
		}
		if keep := len(endMarker) - 1; len(b.tail) > keep {
			b.tail = append(b.tail[:0], b.tail[len(b.tail)-keep:]...)
		}
	}
	return n, err
}

func (b *gaugedBody) Close() error {
	b.done()
	return b.ReadCloser.Close()
}

// TestFactoryListBound: 30 informers (the ConfigMaps of 30 namespaces) of
// a factory bounded to 5 concurrent lists never have more than 5 list
// requests in flight at the transport (LISTs and streaming lists until
// their end bookmark), and more than one; all sync.
func TestFactoryListBound(t *testing.T) {
	const informers, bound = 30, 5
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	cs := protobufClientset(t, c.AdminConfig())
	var nss []string
	for range informers {
		nss = append(nss, uniqueName("fbound"))
	}
	createNamespaces(ctx, t, cs, nss...)
	for _, ns := range nss {
		for i := range 5 {
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, fmt.Sprintf("cm-%d", i)), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}

	g := &listGauge{collection: configMapsCollection, delay: 50 * time.Millisecond}
	f := newTestFactory(t, g.wrap(c.AdminConfig()), factory.Options{MaxConcurrentLists: bound})
	for _, ns := range nss {
		_, release, err := factory.InformerFor[*corev1.ConfigMap](f, factory.Scope{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		defer release()
	}
	startFactory(t, f)
	if err := f.WaitForSync(waitCtxFor(t, 2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	maxNow, lists, streams := g.figures()
	t.Logf("figures: factory list bound: %d informers, MaxConcurrentLists %d: %d LISTs and %d streaming lists, at most %d in flight",
		informers, bound, lists, streams, maxNow)
	if maxNow > bound || maxNow < 2 {
		t.Errorf("at most %d list requests in flight, want 2..%d", maxNow, bound)
	}
	if lists+streams < informers {
		t.Errorf("%d list requests for %d informers", lists+streams, informers)
	}
}

// fWidget is the widgets CRD's type as a plain Go struct, registered in a
// scheme of the test's own.
type fWidget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size int64 `json:"size"`
	} `json:"spec"`
}

func (w *fWidget) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// TestFactoryCRDDeleted: a CRD deleted while its informer runs. The
// informer's Status().LastError becomes NotFound and it retries with
// backoff, not in a tight loop (requests counted over a few seconds, with
// a generous bound); once the CRD is created again, the same informer
// resumes and sees a new widget.
func TestFactoryCRDDeleted(t *testing.T) {
	c := sharedCluster(t)
	leakcheck.Check(t)
	ctx := t.Context()
	group := uniqueName("fcrd") + ".example.test"
	gv := schema.GroupVersion{Group: group, Version: "v1"}
	gvr := gv.WithResource("widgets")
	ns := uniqueName("fcrd")
	createNamespaces(ctx, t, protobufClientset(t, c.AdminConfig()), ns)
	createEstablishedCRD(ctx, t, dynamicClient(t, c.AdminConfig()), group)
	dynAdmin := dynamicClient(t, c.AdminConfig())
	widgets := dynAdmin.Resource(gvr).Namespace(ns)
	if _, err := widgets.Create(ctx, widget(gv, ns, "before", 1, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(gv.WithKind("Widget"), &fWidget{})
	counter := newCounter(regexp.MustCompile(`^/apis/` + regexp.QuoteMeta(group) + `/v1/(namespaces/[^/]+/)?widgets$`))
	f := newTestFactory(t, counter.wrap(c.AdminConfig()), factory.Options{Scheme: scheme, ErrorHandler: func(error) {}})
	inf, release, err := factory.InformerFor[*fWidget](f, factory.Scope{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	startFactory(t, f)
	if err := f.WaitForSync(waitCtxFor(t, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if keys := inf.Store().ListKeys(); len(keys) != 1 || keys[0].Name != "before" {
		t.Fatalf("cache holds %v, want the widget created before", keys)
	}

	// Delete the CRD: its watch ends and every later request is a 404.
	if err := dynAdmin.Resource(crdResource).Delete(ctx, "widgets."+group, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "the informer reports NotFound", func() bool {
		return apierrors.IsNotFound(inf.Status().LastError)
	})
	lastErr := inf.Status().LastError
	const window = 5 * time.Second
	before := counter.snapshot()
	time.Sleep(window)
	during := counter.snapshot().sub(before)
	rate := float64(during.All) / window.Seconds()
	t.Logf("figures: factory CRD deleted: LastError %v; over %v: %s (%.1f requests/s); stats %s",
		lastErr, window, during, rate, statsString(inf.Status().Stats))
	if during.All > 30 {
		t.Errorf("%d requests in %v after the CRD was deleted (%s): a tight loop, want a backoff", during.All, window, during)
	}

	// Create the CRD again: the informer resumes and sees a new widget.
	createEstablishedCRD(ctx, t, dynamicClient(t, c.AdminConfig()), group)
	it.Eventually(t, "a widget is created in the new CRD", func() bool {
		_, err := widgets.Create(ctx, widget(gv, ns, "after", 2, nil), metav1.CreateOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create widget: %v", err)
		}
		return err == nil || apierrors.IsAlreadyExists(err)
	})
	it.Eventually(t, "the informer sees the new widget and not the old one", func() bool {
		keys := inf.Store().ListKeys()
		return len(keys) == 1 && keys[0].Name == "after" && inf.Status().LastError == nil
	})
	w, _ := inf.Lister().Namespace(ns).Get("after")
	t.Logf("figures: factory CRD recreated: informer resumed with %s/%s size %d; stats %s",
		w.Namespace, w.Name, w.Spec.Size, statsString(inf.Status().Stats))
}

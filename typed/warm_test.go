package typed_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/typedinformer/informer/cache"
	it "github.com/typedinformer/informer/internal/informertest"
	"github.com/typedinformer/informer/source/sourcetest"
	"github.com/typedinformer/informer/typed"
)

// warmInformer is an informer of fake with a warm start saving to path
// only when it stops, and the sink of its errors.
func warmInformer(t *testing.T, fake *sourcetest.Fake[*corev1.Pod], ws typed.WarmStart) (*typed.Informer[*corev1.Pod], *it.ErrSink) {
	t.Helper()
	if ws.Interval == 0 {
		ws.Interval = -1
	}
	errs := &it.ErrSink{}
	inf, err := typed.NewInformer[*corev1.Pod](fake, typed.Options[*corev1.Pod]{WarmStart: &ws, ErrorHandler: errs.Handle})
	if err != nil {
		t.Fatal(err)
	}
	return inf, errs
}

// saveOnce runs a warm-start informer of fake until it synced and stops
// it, which saves its cache to path.
func saveOnce(t *testing.T, fake *sourcetest.Fake[*corev1.Pod], ws typed.WarmStart) {
	t.Helper()
	inf, errs := warmInformer(t, fake, ws)
	startSynced(t, inf)()
	if e := errs.All(); len(e) > 0 {
		t.Fatalf("errors of the saving run: %v", e)
	}
	if s := inf.WarmStatus(); s.Objects != fake.Len() || s.ResourceVersion == "" || s.Bytes == 0 {
		t.Fatalf("WarmStatus after stop = %+v, want %d objects saved", s, fake.Len())
	}
}

// bookmarking sends the fake's watches a bookmark every 20ms until the
// test ends, as a watch cache sends one before each watch's deadline.
func bookmarking(t *testing.T, fake *sourcetest.Fake[*corev1.Pod]) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
				fake.Bookmark()
			}
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
}

func TestWarmStartResumesWithoutList(t *testing.T) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(50)...)
	path := filepath.Join(t.TempDir(), "pods.cache")
	saveOnce(t, fake, typed.WarmStart{Path: path})
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("saved file mode = %v, want 0600", m)
	}
	// What happens while the controller is down reaches it by the watch.
	churnFake(t, fake, "down")
	lists := fake.ListCalls()
	bookmarking(t, fake)

	inf, errs := warmInformer(t, fake, typed.WarmStart{Path: path})
	rec := it.NewRecorder()
	startSynced(t, inf, rec)
	it.Converge(t, fake, inf.Store(), rec)
	if n := fake.ListCalls() - lists; n != 0 {
		t.Errorf("the warm start sent %d LIST requests, want 0", n)
	}
	st := inf.Status().Stats
	if st.WarmStarts != 1 || st.Lists != 0 || st.WatchLists != 0 {
		t.Errorf("Stats = %+v, want 1 warm start, no list and no streaming list", st)
	}
	if !inf.WarmStatus().Started {
		t.Error("WarmStatus().Started = false after a warm start")
	}
	if e := errs.All(); len(e) > 0 {
		t.Errorf("errors of the warm start: %v", e)
	}
}

func TestWarmStartNotSyncedUntilAccepted(t *testing.T) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(20)...)
	path := filepath.Join(t.TempDir(), "pods.cache")
	saveOnce(t, fake, typed.WarmStart{Path: path})
	watches := fake.WatchCalls()

	inf, _ := warmInformer(t, fake, typed.WarmStart{Path: path, Accept: time.Hour})
	it.Run(t, inf)
	it.Eventually(t, "the warm start's watch", func() bool { return fake.WatchCalls() > watches })
	time.Sleep(100 * time.Millisecond) // the load is done by now; a sync would be a bug
	if inf.HasSynced() {
		t.Fatal("synced before the server sent anything on the watch from the saved version")
	}
	fake.Bookmark()
	it.Eventually(t, "sync after the bookmark", inf.HasSynced)
	if got := inf.Status().Stats; got.WarmStarts != 1 || got.Lists != 0 {
		t.Errorf("Stats = %+v, want 1 warm start and no list", got)
	}
	it.Converge(t, fake, inf.Store())
}

func TestWarmStartFallsBack(t *testing.T) {
	t.Run("no word from the server", func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(10)...)
		path := filepath.Join(t.TempDir(), "pods.cache")
		saveOnce(t, fake, typed.WarmStart{Path: path})
		inf, errs := warmInformer(t, fake, typed.WarmStart{Path: path, Accept: 50 * time.Millisecond})
		startSynced(t, inf)
		it.Converge(t, fake, inf.Store())
		checkFellBack(t, inf, errs)
	})
	t.Run("version compacted away", func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{Window: 5}, it.Pods(10)...)
		path := filepath.Join(t.TempDir(), "pods.cache")
		saveOnce(t, fake, typed.WarmStart{Path: path})
		for i := range 10 {
			churnFake(t, fake, fmt.Sprint(i))
		}
		fake.Compact()
		bookmarking(t, fake)
		inf, errs := warmInformer(t, fake, typed.WarmStart{Path: path})
		rec := it.NewRecorder()
		startSynced(t, inf, rec)
		it.Converge(t, fake, inf.Store(), rec)
		checkFellBack(t, inf, errs)
	})
	t.Run("no file", func(t *testing.T) {
		fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(10)...)
		inf, errs := warmInformer(t, fake, typed.WarmStart{Path: filepath.Join(t.TempDir(), "none")})
		startSynced(t, inf)
		if e := errs.All(); len(e) != 0 {
			t.Errorf("a first start without a file reported %v, want nothing", e)
		}
		if s := inf.Status().Stats; s.WarmStarts != 0 {
			t.Errorf("Stats = %+v, want no warm start", s)
		}
	})
}

// checkFellBack checks that inf listed instead of starting warm and said
// so once.
func checkFellBack(t *testing.T, inf *typed.Informer[*corev1.Pod], errs *it.ErrSink) {
	t.Helper()
	if s := inf.Status().Stats; s.WarmStarts != 0 || s.Lists+s.WatchLists == 0 {
		t.Errorf("Stats = %+v, want no warm start and a list", s)
	}
	it.Eventually(t, "the warm start's error", func() bool { return errs.Count(it.Is(typed.ErrWarmStart)) > 0 })
	if n := errs.Count(it.Is(typed.ErrWarmStart)); n != 1 {
		t.Errorf("%d errors wrapping ErrWarmStart, want 1 (all: %v)", n, errs.All())
	}
}

// TestWarmStartRefusesBadFiles saves a file holding a pod the server no
// longer has, damages or mismatches it, and checks that the informer
// lists instead and that nothing of the file reached its cache or its
// handlers.
func TestWarmStartRefusesBadFiles(t *testing.T) {
	type variant struct {
		name   string
		load   typed.WarmStart                     // the loading informer's
		damage func(t *testing.T, b []byte) []byte // of the file's bytes
		opts   func(o *typed.Options[*corev1.Pod])
	}
	flip := func(at func(n int) int) func(*testing.T, []byte) []byte {
		return func(_ *testing.T, b []byte) []byte { b[at(len(b))] ^= 0x20; return b }
	}
	variants := []variant{
		{name: "truncated", damage: func(_ *testing.T, b []byte) []byte { return b[:len(b)*2/3] }},
		{name: "checksum cut off", damage: func(_ *testing.T, b []byte) []byte { return b[:len(b)-1] }},
		{name: "bytes appended", damage: func(_ *testing.T, b []byte) []byte { return append(b, 0) }},
		{name: "object edited", damage: flip(func(n int) int { return n / 2 })},
		{name: "checksum edited", damage: flip(func(n int) int { return n - 1 })},
		{name: "header edited", damage: flip(func(int) int { return 40 })},
		{name: "not a saved cache", damage: func(_ *testing.T, b []byte) []byte { return []byte("apiVersion: v1\nkind: Pod\n") }},
		{name: "empty", damage: func(_ *testing.T, b []byte) []byte { return nil }},
		{name: "another cluster", load: typed.WarmStart{Cluster: "other"}},
		{name: "another selector", opts: func(o *typed.Options[*corev1.Pod]) { o.LabelSelector = "app!=none" }},
		{name: "another resource", opts: func(o *typed.Options[*corev1.Pod]) {
			o.Resource = schema.GroupResource{Group: "example.com", Resource: "pods"}
		}},
		{name: "managedFields kept", opts: func(o *typed.Options[*corev1.Pod]) { o.KeepManagedFields = true }},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(30)...)
			dir := t.TempDir()
			path := filepath.Join(dir, "pods.cache")
			saveOnce(t, fake, typed.WarmStart{Path: path})
			gone := fake.Items()[3]
			if _, err := fake.Delete(cache.KeyOf(gone)); err != nil {
				t.Fatal(err)
			}
			if v.damage != nil {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, v.damage(t, b), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			bookmarking(t, fake)
			ws := v.load
			ws.Path, ws.Interval = path, -1
			errs := &it.ErrSink{}
			opts := typed.Options[*corev1.Pod]{WarmStart: &ws, ErrorHandler: errs.Handle}
			if v.opts != nil {
				v.opts(&opts)
			}
			inf, err := typed.NewInformer[*corev1.Pod](fake, opts)
			if err != nil {
				t.Fatal(err)
			}
			rec := it.NewRecorder()
			startSynced(t, inf, rec)
			it.Converge(t, fake, inf.Store(), rec)
			if evs := rec.Events(cache.KeyOf(gone)); len(evs) > 0 {
				t.Errorf("a handler got %v of %s, a pod only the refused file holds", evs, cache.KeyOf(gone))
			}
			checkFellBack(t, inf, errs)
		})
	}
}

func TestWarmStartRefusesSensitive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache")
	secrets := sourcetest.NewFake(sourcetest.FakeOptions[*corev1.Secret]{})
	_, err := typed.NewInformer[*corev1.Secret](secrets, typed.Options[*corev1.Secret]{WarmStart: &typed.WarmStart{Path: path}})
	if !errors.Is(err, typed.ErrSensitive) {
		t.Errorf("NewInformer of Secrets with WarmStart: %v, want ErrSensitive", err)
	}
	if _, err := typed.NewInformer[*corev1.Secret](secrets, typed.Options[*corev1.Secret]{WarmStart: &typed.WarmStart{Path: path, AllowSensitive: true}}); err != nil {
		t.Errorf("NewInformer of Secrets with AllowSensitive: %v", err)
	}
	pods := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{})
	_, err = typed.NewInformer[*corev1.Pod](pods, typed.Options[*corev1.Pod]{WarmStart: &typed.WarmStart{Path: path, Sensitive: []schema.GroupResource{podsResource}}})
	if !errors.Is(err, typed.ErrSensitive) {
		t.Errorf("NewInformer of pods named Sensitive: %v, want ErrSensitive", err)
	}
	for name, ws := range map[string]*typed.WarmStart{"no path": {}} {
		if _, err := typed.NewInformer[*corev1.Pod](pods, typed.Options[*corev1.Pod]{WarmStart: ws}); err == nil {
			t.Errorf("NewInformer with WarmStart %s: no error", name)
		}
	}
}

// TestWarmStartSavesAtInterval checks the periodic save: a change is in
// the file without a stop, and an unchanged cache is not written again.
func TestWarmStartSavesAtInterval(t *testing.T) {
	fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, it.Pods(5)...)
	path := filepath.Join(t.TempDir(), "pods.cache")
	inf, errs := warmInformer(t, fake, typed.WarmStart{Path: path, Interval: 20 * time.Millisecond})
	startSynced(t, inf)
	it.Eventually(t, "the first save", func() bool { return inf.WarmStatus().Objects == 5 })
	first := inf.WarmStatus()
	if _, err := fake.Create(it.Pod("ns-0", "later", nil)); err != nil {
		t.Fatal(err)
	}
	it.Eventually(t, "a save with the new pod", func() bool { return inf.WarmStatus().Objects == 6 })
	saved := inf.WarmStatus()
	time.Sleep(100 * time.Millisecond)
	if again := inf.WarmStatus(); !again.LastSave.Equal(saved.LastSave) {
		t.Errorf("an unchanged cache was saved again (%v, then %v)", saved.LastSave, again.LastSave)
	}
	if !saved.LastSave.After(first.LastSave) {
		t.Errorf("LastSave did not move: %v then %v", first.LastSave, saved.LastSave)
	}
	if e := errs.All(); len(e) > 0 {
		t.Errorf("errors: %v", e)
	}
}

// TestWarmStartSharesStrings: the objects of a saved file, decoded on one
// goroutine (a small file) or on several (a large one), share their equal
// strings and maps in the cache as listed ones do, whether the decoders
// share them or, under a Transform, the writer does.
func TestWarmStartSharesStrings(t *testing.T) {
	for _, tc := range []struct {
		name      string
		n         int
		transform bool
	}{
		{"small file", 20, false},
		{"large file", 1500, false},
		{"large file, transform", 1500, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := make([]*corev1.Pod, tc.n)
			for i := range pods {
				pods[i] = podWith(fmt.Sprintf("p-%04d", i))
			}
			fake := fakeOf(sourcetest.FakeOptions[*corev1.Pod]{}, pods...)
			path := filepath.Join(t.TempDir(), "pods.cache")
			opts := typed.Options[*corev1.Pod]{WarmStart: &typed.WarmStart{Path: path, Interval: -1}}
			if tc.transform {
				opts.Transform = func(p *corev1.Pod) (*corev1.Pod, error) { p.Spec.NodeName = "n"; return p, nil }
			}
			for run := range 2 {
				errs := &it.ErrSink{}
				opts.ErrorHandler = errs.Handle
				inf, err := typed.NewInformer[*corev1.Pod](exclusive{fake, true}, opts)
				if err != nil {
					t.Fatal(err)
				}
				if run == 1 {
					bookmarking(t, fake)
				}
				stop := startSynced(t, inf)
				if e := errs.All(); len(e) > 0 {
					t.Fatalf("run %d: %v", run, e)
				}
				if run == 0 {
					stop() // saves
					continue
				}
				if !inf.WarmStatus().Started || inf.Store().Len() != tc.n {
					t.Fatalf("warm start: %+v with %d pods, want a warm start of %d", inf.WarmStatus(), inf.Store().Len(), tc.n)
				}
				got := inf.Store().List()
				a := got[0]
				for _, b := range got[1:] {
					if unsafe.StringData(a.Namespace) != unsafe.StringData(b.Namespace) ||
						unsafe.StringData(a.Spec.Containers[0].Image) != unsafe.StringData(b.Spec.Containers[0].Image) ||
						reflect.ValueOf(a.Labels).Pointer() != reflect.ValueOf(b.Labels).Pointer() {
						t.Fatalf("%s and %s, loaded, do not share their namespace, image and labels", a.Name, b.Name)
					}
					if unsafe.StringData(a.Name) == unsafe.StringData(b.Name) {
						t.Fatalf("%s and %s share their name", a.Name, b.Name)
					}
				}
				stop()
			}
		})
	}
}

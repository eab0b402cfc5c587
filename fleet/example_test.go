package fleet_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/typedinformer/informer/factory"
	"github.com/typedinformer/informer/fleet"
	"github.com/typedinformer/informer/source"
)

// A fleet of two clusters, each a fake clientset here (Engage takes a
// rest.Config for a real one): one lister answers over both, with the
// cluster in every key.
func ExampleNew() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fl, err := fleet.New(fleet.Options{})
	if err != nil {
		panic(err)
	}
	pods, err := fleet.InformerFor[*corev1.Pod](fl, factory.Scope{})
	if err != nil {
		panic(err)
	}
	for name, pod := range map[string]string{"east": "web-0", "west": "web-1"} {
		cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: pod}})
		f, err := factory.NewForClientsets([]any{cs}, factory.Options{})
		if err != nil {
			panic(err)
		}
		if err := fl.EngageFactory(name, f); err != nil {
			panic(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx) }()
	if err := pods.WaitForSync(ctx); err != nil {
		panic(err)
	}
	list, err := pods.List(nil)
	if err != nil {
		panic(err)
	}
	for _, it := range sortItems(list) {
		fmt.Printf("%s: %s/%s\n", it.Cluster, it.Object.Namespace, it.Object.Name)
	}
	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// east: shop/web-0
	// west: shop/web-1
	// Run: <nil>
}

// A handler of a fleet informer is told the cluster of each event; a
// cluster engaged while the fleet runs gets the informer at once.
func ExampleInformerFor() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fl, _ := fleet.New(fleet.Options{})
	pods, err := fleet.InformerFor[*corev1.Pod](fl, factory.Scope{Namespace: "shop"})
	if err != nil {
		panic(err)
	}
	added := make(chan string, 4)
	_ = pods.AddHandler(fleet.HandlerFuncs[*corev1.Pod]{
		AddFunc: func(cluster string, p *corev1.Pod, initial bool) {
			added <- fmt.Sprintf("%s: %s/%s initial=%t", cluster, p.Namespace, p.Name, initial)
		},
	})
	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx) }()

	cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0"}})
	f, _ := factory.NewForClientsets([]any{cs}, factory.Options{})
	if err := fl.EngageFactory("east", f); err != nil {
		panic(err)
	}
	fmt.Println(<-added)
	east, err := pods.WaitForCluster(ctx, "east")
	if err != nil {
		panic(err)
	}
	_, _ = cs.CoreV1().Pods("shop").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}}, metav1.CreateOptions{})
	fmt.Println(<-added)
	fmt.Println("east's own informer synced:", east.HasSynced())
	cancel()
	<-done
	// Output:
	// east: shop/web-0 initial=true
	// east: shop/web-1 initial=false
	// east's own informer synced: true
}

// Kubeconfigs engages the current context of each file under its cluster
// name; a file that does not load is reported for its cluster, and the
// others are engaged. Engaging contacts no server: a fleet informer would.
func ExampleKubeconfigs() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, _ := os.MkdirTemp("", "fleet-example")
	defer os.RemoveAll(dir)
	east := filepath.Join(dir, "east.kubeconfig")
	if err := os.WriteFile(east, exampleKubeconfig("https://east.example:6443"), 0o600); err != nil {
		panic(err)
	}
	reported := make(chan string, 1)
	fl, _ := fleet.New(fleet.Options{ErrorHandler: func(cluster string, err error) {
		reported <- fmt.Sprintf("%s: %t", cluster, strings.Contains(err.Error(), "no such file"))
	}})
	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx) }()
	go func() {
		_ = fleet.Kubeconfigs{"east": east, "west": filepath.Join(dir, "missing.kubeconfig")}.Run(ctx, fl)
	}()
	fmt.Println("reported", <-reported)
	for len(fl.Clusters()) == 0 {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("engaged", fl.Clusters())
	cancel()
	<-done
	// Output:
	// reported west: true
	// engaged [east]
}

// Secrets engages the clusters whose kubeconfigs are Secrets of a hub, as
// cluster-api keeps them ("<cluster>-kubeconfig", the kubeconfig under
// "value"), and follows them: a Secret deleted disengages its cluster.
func ExampleSecrets() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hub := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "east-kubeconfig"},
		Data:       map[string][]byte{"value": exampleKubeconfig("https://east.example:6443")},
	})
	// The fake clientset sends a watch only what changes after the watch
	// starts, so the example deletes the Secret once the hub is watched.
	watching := make(chan struct{})
	var once sync.Once
	hub.PrependWatchReactor("secrets", func(a clienttesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions // the watch's, as the fake's own reactor passes them
		if wa, ok := a.(clienttesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		w, err := hub.Tracker().Watch(a.GetResource(), a.GetNamespace(), opts)
		once.Do(func() { close(watching) })
		return true, w, err
	})
	fl, _ := fleet.New(fleet.Options{})
	done := make(chan error, 2)
	go func() { done <- fl.Run(ctx) }()
	secrets, err := source.FromClient[*corev1.Secret](hub.CoreV1().Secrets("clusters"))
	if err != nil {
		panic(err)
	}
	go func() { done <- fleet.Secrets{Source: secrets}.Run(ctx, fl) }()
	waitFor := func(want string) {
		for fmt.Sprint(fl.Clusters()) != want {
			time.Sleep(time.Millisecond)
		}
		fmt.Println("engaged", want)
	}
	waitFor("[east]")
	<-watching
	_ = hub.CoreV1().Secrets("clusters").Delete(ctx, "east-kubeconfig", metav1.DeleteOptions{})
	waitFor("[]")
	cancel()
	<-done
	<-done
	// Output:
	// engaged [east]
	// engaged []
}

func exampleKubeconfig(server string) []byte {
	b, err := clientcmd.Write(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: server}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": {Token: "t"}},
		Contexts:       map[string]*clientcmdapi.Context{"x": {Cluster: "c", AuthInfo: "u"}},
		CurrentContext: "x",
	})
	if err != nil {
		panic(err)
	}
	return b
}

func sortItems(list []fleet.Item[*corev1.Pod]) []fleet.Item[*corev1.Pod] {
	slices.SortFunc(list, func(a, b fleet.Item[*corev1.Pod]) int {
		return strings.Compare(a.Cluster+"/"+a.Object.Name, b.Cluster+"/"+b.Object.Name)
	})
	return list
}

// A controller over a fleet reconciles each cluster's objects with the
// cluster in the key; each cluster has its own queue and workers.
func ExampleNewController() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fl, _ := fleet.New(fleet.Options{})
	pods, err := fleet.InformerFor[*corev1.Pod](fl, factory.Scope{})
	if err != nil {
		panic(err)
	}
	reconciled := make(chan string, 4)
	_, err = fleet.NewController(fl, pods, fleet.ReconcileFunc(func(ctx context.Context, k fleet.Key) error {
		p, err := pods.Get(k)
		if err != nil {
			return err
		}
		reconciled <- fmt.Sprintf("%s: %s/%s", k.Cluster, p.Namespace, p.Name)
		return nil
	}), fleet.ControllerOptions[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	for name, pod := range map[string]string{"east": "web-0", "west": "web-1"} {
		cs := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: pod}})
		f, _ := factory.NewForClientsets([]any{cs}, factory.Options{})
		if err := fl.EngageFactory(name, f); err != nil {
			panic(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx) }()
	got := []string{<-reconciled, <-reconciled}
	slices.Sort(got)
	fmt.Println(strings.Join(got, "\n"))
	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// east: shop/web-0
	// west: shop/web-1
	// Run: <nil>
}

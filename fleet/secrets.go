package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/source"
	"github.com/typedinformer/informer/typed"
)

// DefaultSecretKey is the key of a Secret's data that holds the
// kubeconfig, as cluster-api keeps it ("<cluster>-kubeconfig" Secrets).
const DefaultSecretKey = "value"

// Secrets is a Provider of the clusters whose kubeconfigs are Secrets of a
// hub cluster, followed by an informer of this library: a Secret added
// engages its cluster, a Secret whose kubeconfig changed engages it again
// with the new one, and a Secret deleted disengages it. A Secret that
// holds no kubeconfig, or one that does not parse, is reported with its
// cluster's name and engages nothing.
type Secrets struct {
	// Source is the hub's Secrets, such as
	// source.FromClient[*corev1.Secret](hub.CoreV1().Secrets("clusters")).
	// Required.
	Source source.Source[*corev1.Secret]
	// LabelSelector, if set, limits the Secrets to those it selects
	// (typed.Options.LabelSelector), such as Argo CD's
	// "argocd.argoproj.io/secret-type=cluster".
	LabelSelector string
	// Key is the data key that holds the kubeconfig. Default:
	// DefaultSecretKey.
	Key string
	// Name is the name of a Secret's cluster. Default: the Secret's name,
	// without a "-kubeconfig" suffix.
	Name func(*corev1.Secret) string
	// Config makes the rest.Config of a Secret's cluster, for Secrets
	// that keep something else than a kubeconfig (Argo CD's keep a server
	// and a JSON config). Default: the kubeconfig under Key, its current
	// context.
	Config func(*corev1.Secret) (*rest.Config, error)
}

// secretCluster is what a Secret engaged.
type secretCluster struct {
	name string
	data []byte // the Secret's data the config was made from
}

// Run follows the Secrets until ctx ends, then disengages the clusters it
// engaged and returns nil. It fails at once for a Secrets without a
// Source, and if the Secrets' informer stops with an error (the hub
// refused the label selector, say).
func (s Secrets) Run(ctx context.Context, fl *Fleet) error {
	if fl == nil {
		return ErrNil
	}
	if s.Source == nil {
		return errors.New("fleet: Secrets: no Source")
	}
	if s.Key == "" {
		s.Key = DefaultSecretKey
	}
	if s.Name == nil {
		s.Name = func(sec *corev1.Secret) string { return strings.TrimSuffix(sec.Name, "-kubeconfig") }
	}
	inf, err := typed.NewInformer(s.Source, typed.Options[*corev1.Secret]{LabelSelector: s.LabelSelector,
		ErrorHandler: func(err error) { fl.opts.ErrorHandler("", fmt.Errorf("fleet: the Secrets of the clusters: %w", err)) }})
	if err != nil {
		return fmt.Errorf("fleet: Secrets: %w", err)
	}
	q := workqueue.NewTyped[cache.Key]()
	if _, err := inf.AddHandler(handler.EnqueueKeys[*corev1.Secret](q)); err != nil {
		return fmt.Errorf("fleet: Secrets: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- inf.Run(ctx) }()
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()

	engaged := map[cache.Key]secretCluster{}
	for {
		key, quit := q.Get()
		if quit {
			break
		}
		s.sync(fl, inf, key, engaged)
		q.Done(key)
	}
	for _, c := range engaged {
		_ = fl.Disengage(c.name) // ErrUnknownCluster: disengaged already
	}
	if err := <-runErr; err != nil {
		return fmt.Errorf("fleet: Secrets: %w", err)
	}
	return nil
}

// sync engages, engages again or disengages the cluster of the Secret of
// key, as the Secret now is.
func (s Secrets) sync(fl *Fleet, inf *typed.Informer[*corev1.Secret], key cache.Key, engaged map[cache.Key]secretCluster) {
	sec, err := inf.Lister().Namespace(key.Namespace).Get(key.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		fl.opts.ErrorHandler("", fmt.Errorf("fleet: Secret %v: %w", key, err))
		return
	}
	old, had := engaged[key]
	var name string
	var data []byte
	if sec != nil {
		name, data = s.Name(sec), secretData(sec)
		if had && old.name == name && bytes.Equal(old.data, data) {
			return // nothing that matters changed (its labels, say)
		}
	}
	if had {
		delete(engaged, key)
		_ = fl.Disengage(old.name) // ErrUnknownCluster: disengaged by someone else
	}
	if sec == nil {
		return
	}
	cfg, err := s.config(sec)
	if err != nil {
		fl.opts.ErrorHandler(name, fmt.Errorf("fleet: cluster %q: Secret %v: %w", name, key, err))
		return
	}
	if err := fl.Engage(name, cfg); err != nil {
		fl.opts.ErrorHandler(name, fmt.Errorf("fleet: Secret %v: %w", key, err))
		return
	}
	engaged[key] = secretCluster{name: name, data: data}
}

func (s Secrets) config(sec *corev1.Secret) (*rest.Config, error) {
	if s.Config != nil {
		return s.Config(sec)
	}
	kc, ok := sec.Data[s.Key]
	if !ok || len(kc) == 0 {
		return nil, fmt.Errorf("no kubeconfig under the key %q", s.Key)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig under the key %q: %w", s.Key, err)
	}
	return cfg, nil
}

// secretData is the Secret's data in a canonical form, to tell whether it
// changed.
func secretData(sec *corev1.Secret) []byte {
	var b bytes.Buffer
	for _, k := range sortedKeys(sec.Data) {
		fmt.Fprintf(&b, "%d:%s%d:", len(k), k, len(sec.Data[k]))
		b.Write(sec.Data[k])
	}
	for _, k := range sortedKeys(sec.StringData) {
		fmt.Fprintf(&b, "%d:%s%d:%s", len(k), k, len(sec.StringData[k]), sec.StringData[k])
	}
	return b.Bytes()
}

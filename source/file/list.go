package file

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/typedinformer/informer/cache"
	"github.com/typedinformer/informer/source"
)

// List returns the objects matching opts, by namespace then name. It
// reads the directory first (except for the next page of a list), so it
// sees what was written before it was called.
//
// It honours label selectors, the metadata.name and metadata.namespace
// field selectors (others are a BadRequest), and Limit and Continue: every
// page is of the snapshot of the first one, until that snapshot is older
// than the remembered history (410 Gone). ResourceVersion "" or "0" reads
// the current state, as does a version the source has reached; one it has
// not reached, or does not know, is a 410 Gone. ResourceVersionMatch Exact
// reads the state at that version while it is remembered. Errors are
// *source.Error with source.PhaseList.
func (s *Source[T]) List(ctx context.Context, opts metav1.ListOptions) (source.List[T], error) {
	out, err := s.list(ctx, opts)
	if err != nil {
		return source.List[T]{}, &source.Error{Phase: source.PhaseList, Err: err}
	}
	return out, nil
}

func (s *Source[T]) list(ctx context.Context, opts metav1.ListOptions) (source.List[T], error) {
	if err := ctx.Err(); err != nil {
		return source.List[T]{}, err
	}
	f, err := newFilter(opts)
	if err != nil {
		return source.List[T]{}, err
	}
	var tok token
	if opts.Continue != "" {
		if opts.ResourceVersion != "" || opts.ResourceVersionMatch != "" {
			return source.List[T]{}, apierrors.NewBadRequest("resourceVersion and resourceVersionMatch are not allowed with continue")
		}
		if tok, err = parseToken(opts.Continue); err != nil {
			return source.List[T]{}, err
		}
	} else {
		_ = s.Rescan(ctx) // a directory that cannot be read was reported
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.rv
	switch {
	case opts.Continue != "":
		at = tok.RV
	case opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact:
		n, ok := parseRV(opts.ResourceVersion)
		if !ok {
			return source.List[T]{}, apierrors.NewBadRequest(fmt.Sprintf("resourceVersionMatch Exact needs a resourceVersion, not %q", opts.ResourceVersion))
		}
		at = n
	case opts.ResourceVersion == "" || opts.ResourceVersion == "0":
	default:
		if n, ok := parseRV(opts.ResourceVersion); !ok || n > s.rv {
			return source.List[T]{}, s.gone(opts.ResourceVersion)
		}
	}
	objs, err := s.snapshot(at)
	if err != nil {
		return source.List[T]{}, err
	}
	start := 0
	if opts.Continue != "" {
		start, _ = slices.BinarySearchFunc(objs, tok.After, func(o T, k cache.Key) int { return compareKeys(cache.KeyOf(o), k) })
		if start < len(objs) && cache.KeyOf(objs[start]) == tok.After {
			start++
		}
	}
	out := source.List[T]{ResourceVersion: strconv.FormatInt(at, 10)}
	for _, obj := range objs[start:] {
		if !f.matches(obj) {
			continue
		}
		if opts.Limit > 0 && int64(len(out.Items)) == opts.Limit {
			out.Continue = token{RV: at, After: cache.KeyOf(out.Items[len(out.Items)-1])}.String()
			break
		}
		out.Items = append(out.Items, s.clone(obj))
	}
	if out.Items == nil {
		out.Items = []T{}
	}
	return out, nil
}

// snapshot returns the objects the source held at resourceVersion at, by
// key: the current ones with the changes after at undone. The caller holds
// mu.
func (s *Source[T]) snapshot(at int64) ([]T, error) {
	if at < s.floor || at > s.rv {
		return nil, s.gone(strconv.FormatInt(at, 10))
	}
	state := make(map[cache.Key]T, len(s.objects))
	for k, st := range s.objects {
		state[k] = st.obj
	}
	for i := len(s.history) - 1; i >= 0 && s.history[i].rv > at; i-- {
		c := s.history[i]
		if c.typ == watch.Added {
			delete(state, c.key)
		} else {
			state[c.key] = c.prev
		}
	}
	keys := make([]cache.Key, 0, len(state))
	for k := range state {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareKeys)
	objs := make([]T, len(keys))
	for i, k := range keys {
		objs[i] = state[k]
	}
	return objs, nil
}

// gone is the 410 Gone for a resourceVersion the source does not remember:
// older than its history, from an earlier run, or not one of its versions.
func (s *Source[T]) gone(rv string) error {
	return apierrors.NewResourceExpired(fmt.Sprintf("resourceVersion %q is not in the remembered history of %s (%d to %d): list again",
		rv, s, s.floor, s.rv))
}

// clone returns a copy of a stored object for a caller to keep.
func (s *Source[T]) clone(obj T) T {
	cp, err := source.As[T](obj.DeepCopyObject())
	if err != nil {
		return s.dec.newT() // a T's DeepCopyObject returns a T: cannot happen
	}
	return cp
}

func parseRV(rv string) (int64, bool) {
	n, err := strconv.ParseInt(rv, 10, 64)
	return n, err == nil && n > 0
}

// token is what a continue token carries: the snapshot's resourceVersion
// and the key of the last object served.
type token struct {
	RV    int64     `json:"rv"`
	After cache.Key `json:"after"`
}

func (t token) String() string {
	b, _ := json.Marshal(t) // a struct of an int and strings: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

func parseToken(s string) (token, error) {
	var t token
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	if err != nil || t.RV <= 0 {
		return token{}, apierrors.NewBadRequest(fmt.Sprintf("continue token %q is not one of this source's", s))
	}
	return t, nil
}

// filter is what a list or watch selects.
type filter struct {
	label labels.Selector
	field fields.Selector
}

// newFilter reads the selectors of opts; only metadata.name and
// metadata.namespace can be field-selected, as for most resources.
func newFilter(opts metav1.ListOptions) (filter, error) {
	l, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return filter{}, apierrors.NewBadRequest(fmt.Sprintf("label selector %q: %v", opts.LabelSelector, err))
	}
	f, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return filter{}, apierrors.NewBadRequest(fmt.Sprintf("field selector %q: %v", opts.FieldSelector, err))
	}
	for _, r := range f.Requirements() {
		if r.Field != "metadata.name" && r.Field != "metadata.namespace" {
			return filter{}, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s (only metadata.name and metadata.namespace)", r.Field))
		}
	}
	return filter{label: l, field: f}, nil
}

func (f filter) matches(obj metav1.Object) bool {
	return f.label.Matches(labels.Set(obj.GetLabels())) &&
		f.field.Matches(fields.Set{"metadata.name": obj.GetName(), "metadata.namespace": obj.GetNamespace()})
}

package source

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDecodeListItemsMatchesDecodeList checks the streaming decode against
// the whole one on random list bodies: members in any order, escapes and
// nesting in strings, undecodable and failing items, empty lists, broken
// bodies, all read in random chunks.
func TestDecodeListItemsMatchesDecodeList(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var ok, malformed, failed, undecodable int
	for i := range 1000 {
		body := randomListBody(rng)
		switch rng.IntN(8) {
		case 0: // cut short
			body = body[:rng.IntN(len(body)+1)]
		case 1: // a stray byte
			at := rng.IntN(len(body) + 1)
			const stray = "x{}[],:\"\\ 0"
			body = append(body[:at:at], append([]byte{stray[rng.IntN(len(stray))]}, body[at:]...)...)
		}
		src := &restSource[*corev1.Pod]{gvk: corev1.SchemeGroupVersion.WithKind("Pod"), cutMF: rng.IntN(2) == 0}
		want, wantErr := src.decodeList(bytes.NewReader(body))
		var items []*corev1.Pod
		got, gotErr := src.decodeListItems(&chunkReader{b: body, rng: rng}, func(p *corev1.Pod) error {
			items = append(items, p)
			return nil
		})
		if msg := sameListResult(want, wantErr, got, gotErr, items); msg != "" {
			t.Fatalf("seed %d, body %d: %s\nbody: %.2000s", seed, i, msg, body)
		}
		switch {
		case errors.Is(wantErr, ErrMalformed):
			malformed++
		case wantErr != nil:
			failed++
		case len(want.Undecodable) > 0:
			undecodable++
		default:
			ok++
		}
	}
	t.Logf("%d lists, %d with undecodable items, %d malformed, %d failed by an item", ok, undecodable, malformed, failed)
}

// sameListResult compares decodeList's result with decodeListItems's and
// the items it yielded; "" if they agree.
func sameListResult(want List[*corev1.Pod], wantErr error, got List[*corev1.Pod], gotErr error, items []*corev1.Pod) string {
	switch {
	case (wantErr == nil) != (gotErr == nil):
		return fmt.Sprintf("decodeList error %v, decodeListItems error %v", wantErr, gotErr)
	case wantErr != nil && errors.Is(wantErr, ErrMalformed) != errors.Is(gotErr, ErrMalformed):
		return fmt.Sprintf("decodeList error %v, decodeListItems error %v: one is malformed", wantErr, gotErr)
	case wantErr != nil && !errors.Is(wantErr, ErrMalformed) && wantErr.Error() != gotErr.Error():
		return fmt.Sprintf("decodeList error %v, decodeListItems error %v", wantErr, gotErr)
	case wantErr != nil:
		return ""
	case got.Items != nil:
		return "decodeListItems returned Items"
	}
	got.Items = items
	if len(want.Items) == 0 && len(got.Items) == 0 {
		want.Items, got.Items = nil, nil
	}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b *UndecodableError) bool {
		return a.Namespace == b.Namespace && a.Name == b.Name && a.ResourceVersion == b.ResourceVersion &&
			a.Index == b.Index && a.Event == b.Event && a.Err.Error() == b.Err.Error()
	})); d != "" {
		return "lists differ (-decodeList +decodeListItems):\n" + d
	}
	return ""
}

// randomListBody is a JSON pod list with random members and items.
func randomListBody(rng *rand.Rand) []byte {
	var members []string
	meta := metav1.ListMeta{ResourceVersion: fmt.Sprint(rng.IntN(1000)), Continue: randomString(rng)}
	if rng.IntN(4) == 0 {
		meta.ShardInfo = &metav1.ShardInfo{Selector: "shardRange(object.metadata.uid, '0x0', '0x8')"}
	}
	m, _ := json.Marshal(meta)
	switch rng.IntN(10) {
	case 0: // none
	case 1:
		members = append(members, `"metadata":{"resourceVersion":7}`) // not a list
	case 2:
		members = append(members, `"metadata":null`)
	default:
		members = append(members, `"metadata":`+string(m))
	}
	switch rng.IntN(10) {
	case 0: // none
	case 1:
		members = append(members, `"items":null`)
	case 2:
		members = append(members, `"items":{"a":1}`) // not a list
	default:
		var items []string
		for range rng.IntN(6) * rng.IntN(4) {
			items = append(items, randomItem(rng))
		}
		members = append(members, `"items":[`+strings.Join(items, spaced(rng, ","))+`]`)
	}
	members = append(members, `"kind":"PodList"`, `"apiVersion":"v1"`)
	if rng.IntN(3) == 0 {
		members = append(members, `"extra":{"a":[{"b":"}]\"{["}],"c":null,"d":[1,2.5e3,true,false]}`)
	}
	if rng.IntN(4) == 0 { // escaped member names
		for i, m := range members {
			members[i] = strings.Replace(strings.Replace(m, `"items":`, `"it\u0065ms":`, 1), `"metadata":`, `"met\u0061data":`, 1)
		}
	}
	rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	body := spaced(rng, "{") + strings.Join(members, spaced(rng, ",")) + spaced(rng, "}")
	switch rng.IntN(30) {
	case 0:
		body = "null"
	case 1:
		body = "[]"
	case 2:
		body = ""
	case 3:
		body += " {}" // data after the list
	}
	return []byte(body)
}

// randomItem is a list item: mostly a pod, with strings that need escapes
// and nested values, sometimes one that does not decode, has no name, is
// of another kind, or is null.
func randomItem(rng *rand.Rand) string {
	switch rng.IntN(20) {
	case 0:
		return fmt.Sprintf(`{"metadata":{"name":%q,"namespace":"shop","resourceVersion":"9"},"spec":{"containers":"oops"}}`, randomString(rng))
	case 1:
		return `{"metadata":{"namespace":"shop"},"spec":{"containers":"oops"}}` // undecodable, no name
	case 2:
		return `{"kind":"Service","apiVersion":"v1","metadata":{"name":"svc"}}`
	case 3:
		return "null"
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: randomString(rng), Namespace: "shop", ResourceVersion: fmt.Sprint(rng.IntN(100)),
		Labels:      map[string]string{"app": randomString(rng)},
		Annotations: map[string]string{"note": randomString(rng), "json": `{"a":["}",{"b":"\\\""}]}`}}}
	if rng.IntN(20) == 0 {
		p.Annotations["big"] = strings.Repeat(`{"x":"\"]"}`, 10000) // larger than the scanner's first buffer
	}
	if rng.IntN(3) == 0 {
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{}}}`)}}}
	}
	if rng.IntN(2) == 0 {
		p.Kind, p.APIVersion = "Pod", "v1"
	}
	p.Spec.Containers = []corev1.Container{{Name: "c", Image: randomString(rng), Args: []string{randomString(rng), "]},"}}}
	b, _ := json.Marshal(p)
	if rng.IntN(4) == 0 {
		var v any
		_ = json.Unmarshal(b, &v)
		b, _ = json.MarshalIndent(v, "", " \t")
	}
	return string(b)
}

// randomString has characters that JSON escapes, and braces, brackets,
// quotes and backslashes a scanner could mistake for structure.
func randomString(rng *rand.Rand) string {
	const chars = `abc"\{}[]:, <>&é` + "\n\t\u2028\x01"
	rs := []rune(chars)
	var b strings.Builder
	for range rng.IntN(12) {
		b.WriteRune(rs[rng.IntN(len(rs))])
	}
	return b.String()
}

// spaced is s with random white space around it.
func spaced(rng *rand.Rand, s string) string {
	ws := []string{"", " ", "\n", "\t ", "\r\n  "}
	return ws[rng.IntN(len(ws))] + s + ws[rng.IntN(len(ws))]
}

// chunkReader reads b in random chunks, sometimes empty ones.
type chunkReader struct {
	b   []byte
	rng *rand.Rand
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(r.b), r.rng.IntN(300))
	if r.rng.IntN(2) == 0 {
		n = min(len(p), len(r.b))
	}
	copy(p, r.b[:n])
	r.b = r.b[n:]
	return n, nil
}

// A failing connection is the list's error, not a malformed body, and
// yield's error stops the list and is returned as it is.
func TestDecodeListItemsErrors(t *testing.T) {
	src := &restSource[*corev1.Pod]{gvk: corev1.SchemeGroupVersion.WithKind("Pod")}
	body := `{"metadata":{"resourceVersion":"5"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}`
	broken := errors.New("connection reset")
	_, err := src.decodeListItems(io.MultiReader(strings.NewReader(body[:50]), iotestErrReader{broken}), func(*corev1.Pod) error { return nil })
	var serr *Error
	if !errors.As(err, &serr) || serr.Phase != PhaseList || !errors.Is(err, broken) || errors.Is(err, ErrMalformed) {
		t.Errorf("broken connection: error %v, want a list *Error wrapping %v, not malformed", err, broken)
	}
	stop := errors.New("stop")
	var names []string
	_, err = src.decodeListItems(strings.NewReader(body), func(p *corev1.Pod) error {
		names = append(names, p.Name)
		return stop
	})
	if err != stop || len(names) != 1 {
		t.Errorf("yield's error: got %v after %v, want %v after [a]", err, names, stop)
	}
	l, err := src.decodeListItems(strings.NewReader(body), func(p *corev1.Pod) error { return nil })
	if err != nil || l.ResourceVersion != "5" || l.Items != nil {
		t.Errorf("got %+v, %v; want resourceVersion 5 and no Items", l, err)
	}
}

type iotestErrReader struct{ err error }

func (r iotestErrReader) Read([]byte) (int, error) { return 0, r.err }

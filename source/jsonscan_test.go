package source

import (
	"bytes"
	gojson "encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func TestEnvelope(t *testing.T) {
	for _, tc := range []struct {
		frame     string
		typ, obj  string
		wantFrame bool
	}{
		{frame: `{"type":"ADDED","object":{"a":1}}`, typ: "ADDED", obj: `{"a":1}`, wantFrame: true},
		{frame: ` { "type" : "MODIFIED" , "object" : {"s":"}\"{"} } `, typ: "MODIFIED", obj: `{"s":"}\"{"}`, wantFrame: true},
		{frame: `{"type":"ERROR","object":{"kind":"Status"}}`, typ: "ERROR", obj: `{"kind":"Status"}`, wantFrame: true},
		{frame: `{"object":{},"type":"ADDED"}`}, // another order
		{frame: `{"type":"ADDED","object":{},"extra":1}`, typ: "ADDED", obj: `{},"extra":1`, wantFrame: true}, // another member: the object's decoder refuses it
		{frame: `{"type":"ADD\u0045D","object":{}}`},                                                          // an escaped type
		{frame: `{"type":"ADDED","object":{"a":1}`, typ: "ADDED", obj: `{"a":1`, wantFrame: true},             // unterminated: the same
		{frame: `{"type":"ADDED","object":{"a":"b}}`, typ: "ADDED", obj: `{"a":"b}`, wantFrame: true},
		{frame: `{"type":"ADDED","object":{}}{"type":"ADDED"}`, typ: "ADDED", obj: `{}}{"type":"ADDED"`, wantFrame: true},
		{frame: `{"type":"ADDED"}`},
		{frame: `[]`},
		{frame: ``},
	} {
		typ, obj, ok := envelope([]byte(tc.frame))
		if ok != tc.wantFrame || (ok && (string(typ) != tc.typ || string(obj) != tc.obj)) {
			t.Errorf("envelope(%s) = %q, %q, %v; want %q, %q, %v", tc.frame, typ, obj, ok, tc.typ, tc.obj, tc.wantFrame)
		}
	}
}

func TestCutManagedFields(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"metadata":{"name":"a","managedFields":[{"m":"x"}]},"spec":{}}`, `{"metadata":{"name":"a"},"spec":{}}`},
		{`{"metadata":{"managedFields":[{"m":"}"}],"name":"a"}}`, `{"metadata":{"name":"a"}}`},
		{`{"metadata":{"managedFields":[]}}`, `{"metadata":{}}`},
		{`{"metadata" : { "name" : "a" , "managedFields" : [ ] , "uid" : "u" } }`, `{"metadata" : { "name" : "a" , "uid" : "u" } }`},
		{`{"kind":"Pod","spec":{"managedFields":[]},"metadata":{"name":"a"}}`, `{"kind":"Pod","spec":{"managedFields":[]},"metadata":{"name":"a"}}`},
		{`{"metadata":{"name":"managedFields"}}`, `{"metadata":{"name":"managedFields"}}`},
		{`{"metadata":"odd"}`, `{"metadata":"odd"}`},
		{`{"metadata":{"name":"a","managedFields":[}`, `{"metadata":{"name":"a","managedFields":[}`}, // not recognised: unchanged
	} {
		in := []byte(tc.in)
		got := string(cutManagedFields(nil, in))
		if string(in) != tc.in {
			t.Errorf("cutManagedFields changed its input to %s", in)
		}
		if got != tc.want {
			t.Errorf("cutManagedFields(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if gojson.Valid([]byte(tc.in)) && !gojson.Valid([]byte(got)) {
			t.Errorf("cutManagedFields(%s) made invalid JSON %s", tc.in, got)
		}
	}
}

// TestLineReader: lines come out whole whatever the reads' sizes, a line
// longer than the buffer grows it, and a stream cut within a line is an
// unexpected EOF.
func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	in := "a\n\nbb\n" + long + "\nlast"
	for name, r := range map[string]io.Reader{
		"whole":    strings.NewReader(in),
		"one byte": iotest.OneByteReader(strings.NewReader(in)),
		"halves":   iotest.HalfReader(strings.NewReader(in)),
	} {
		l := newLineReader(r)
		var got []string
		var err error
		for {
			var line []byte
			if line, err = l.next(); err != nil {
				break
			}
			got = append(got, string(line))
			l.shrink()
		}
		if diff := cmp.Diff([]string{"a", "", "bb", long}, got); diff != "" {
			t.Errorf("%s: lines (-want +got):\n%.500s", name, diff)
		}
		if err != io.ErrUnexpectedEOF {
			t.Errorf("%s: ended with %v, want %v", name, err, io.ErrUnexpectedEOF)
		}
	}
}

// TestFramesMatchGeneralDecoder: a watch stream written one event per
// line, one with its members reordered, and one pretty-printed over many
// lines all decode to the same events; the two odd ones through the
// general decoder.
func TestFramesMatchGeneralDecoder(t *testing.T) {
	src := &restSource[*corev1.Pod]{gvk: corev1.SchemeGroupVersion.WithKind("Pod")}
	var pods []*corev1.Pod
	var lines, reordered, extra, pretty bytes.Buffer
	for i := range 5 {
		p := benchPod(i)
		pods = append(pods, p)
		obj, err := gojson.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		lines.WriteString(`{"type":"MODIFIED","object":` + string(obj) + "}\n")
		reordered.WriteString(`{"object":` + string(obj) + `,"type":"MODIFIED"}` + "\n")
		extra.WriteString(`{"type":"MODIFIED","object":` + string(obj) + `,"extra":{"a":[1]}}` + "\n")
		indented, err := gojson.MarshalIndent(wireEvent{Type: watch.Modified, Object: p}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		pretty.Write(indented)
		pretty.WriteString("\n")
	}
	for _, cutMF := range []bool{false, true} {
		for name, stream := range map[string][]byte{"lines": lines.Bytes(), "reordered": reordered.Bytes(), "extra member": extra.Bytes(), "pretty": pretty.Bytes()} {
			rr := &recordingReader{r: iotest.HalfReader(bytes.NewReader(stream))}
			w := &restWatcher[*corev1.Pod]{src: src, read: rr, lines: newLineReader(rr), cutMF: cutMF}
			for i, p := range pods {
				want := p.DeepCopy()
				want.TypeMeta = metav1.TypeMeta{}
				if cutMF && name == "lines" {
					want.ManagedFields = nil // only the one-line path cuts them
				}
				ev, err := w.decode()
				if err != nil {
					t.Fatalf("%s, cut %v: event %d: %v", name, cutMF, i, err)
				}
				for _, mf := range ev.Object.ManagedFields {
					// Indenting indented the raw fields too.
					var c bytes.Buffer
					if err := gojson.Compact(&c, mf.FieldsV1.GetRawBytes()); err != nil {
						t.Fatal(err)
					}
					mf.FieldsV1.SetRawBytes(c.Bytes())
				}
				if diff := cmp.Diff(want, ev.Object); diff != "" || ev.Type != watch.Modified {
					t.Errorf("%s, cut %v: event %d: %s (-want +got):\n%s", name, cutMF, i, ev.Type, diff)
				}
			}
			if _, err := w.decode(); err != io.EOF {
				t.Errorf("%s: after the last event: %v, want EOF", name, err)
			}
		}
	}
}

// FuzzFrameMatchesGeneral: whenever the one-line path decodes a line, the
// general decoder decodes it to the same event; the line is left as it
// was either way.
func FuzzFrameMatchesGeneral(f *testing.F) {
	obj, err := gojson.Marshal(benchPod(1))
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"type":"MODIFIED","object":` + string(obj) + `}`))
	f.Add([]byte(`{"type":"ADDED","object":{"metadata":{"name":"a","managedFields":[{"manager":"m"}]}},"x":1}`))
	f.Add([]byte(`{"type":"ERROR","object":{"kind":"Status","code":410}}`))
	f.Add([]byte(`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}} `))
	src := &restSource[*corev1.Pod]{gvk: corev1.SchemeGroupVersion.WithKind("Pod")}
	f.Fuzz(func(t *testing.T, line []byte) {
		orig := bytes.Clone(line)
		var scratch []byte
		for _, cut := range []bool{false, true} {
			fast, err := src.decodeFrame(line, cut, &scratch)
			if !bytes.Equal(line, orig) {
				t.Fatalf("decodeFrame changed the line")
			}
			if err != nil {
				continue
			}
			general, gerr := src.decodeAnyFrame(line)
			if gerr != nil && cut {
				continue // managedFields the general decoder refuses were cut: never decoded
			}
			if gerr != nil {
				t.Fatalf("the one-line path decoded %q, the general decoder refused it: %v", line, gerr)
			}
			if cut && general.Object != nil {
				general.Object.ManagedFields = nil
			}
			if fast.Object != nil && len(fast.Object.ManagedFields) == 0 {
				fast.Object.ManagedFields = nil
			}
			if general.Object != nil && len(general.Object.ManagedFields) == 0 {
				general.Object.ManagedFields = nil
			}
			if diff := cmp.Diff(general, fast); diff != "" {
				t.Fatalf("%q, cut %v: the two decoders differ (-general +fast):\n%s", line, cut, diff)
			}
		}
	})
}

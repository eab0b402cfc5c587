package file

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/util/json"
	kyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/typedinformer/informer/cache"
)

// document is one YAML or JSON document of a file, with the line it starts
// on.
type document struct {
	line int    // 1-based line of the document's first byte
	data []byte // the document's text
	json bool   // data is JSON (line offsets come from byte offsets)
}

// parsed is one object read from a file: what the scan merges.
type parsed[T cache.Object] struct {
	key  cache.Key
	obj  T
	line int
}

// typeMeta is what every document is read as first: its type, and the
// items of a list.
type typeMeta struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
}

// decoder turns the bytes of one file into objects of type T.
type decoder[T cache.Object] struct {
	gvk       schema.GroupVersionKind
	namespace string // default namespace, or ""
	newT      func() T
}

// decode returns the objects of type T in data, the content of the file
// named name, in document order, and an error for each document that could
// not be read. Documents of other kinds are skipped.
func (d *decoder[T]) decode(name string, data []byte) ([]parsed[T], []error) {
	var docs []document
	var errs []error
	if isJSONFile(name) {
		var err error
		docs, err = splitJSON(data)
		if err != nil {
			errs = append(errs, &Error{File: name, Line: lineAt(data, offsetOf(err)), Err: fmt.Errorf("%w: %w", ErrSyntax, err)})
		}
	} else {
		docs = splitYAML(data)
	}
	var out []parsed[T]
	for _, doc := range docs {
		objs, err := d.decodeDocument(name, doc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, objs...)
	}
	return out, errs
}

// decodeDocument decodes one document: an object of type T, a list of
// them, or nothing (another kind, or an empty document).
func (d *decoder[T]) decodeDocument(name string, doc document) ([]parsed[T], error) {
	data := doc.data
	if !doc.json {
		j, err := kyaml.ToJSON(data)
		if err != nil {
			return nil, &Error{File: name, Line: doc.line + yamlLine(err) - 1, Err: fmt.Errorf("%w: %w", ErrSyntax, err)}
		}
		data = j
	}
	if t := bytes.TrimSpace(data); len(t) == 0 || string(t) == "null" {
		return nil, nil // only comments
	}
	fail := func(path []string, err error) error {
		return &Error{File: name, Line: d.lineOf(doc, path, err), Err: err}
	}
	var tm typeMeta
	if err := kjson.Unmarshal(data, &tm); err != nil {
		return nil, fail(nil, fmt.Errorf("%w: not an object: %w", ErrInvalid, err))
	}
	if tm.APIVersion == "" || tm.Kind == "" {
		return nil, fail(nil, fmt.Errorf("%w: a manifest needs apiVersion and kind", ErrInvalid))
	}
	gvk := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
	switch {
	case gvk == d.gvk:
		obj, err := d.object(data, d.gvk)
		if err != nil {
			return nil, fail(fieldPath(err), err)
		}
		return []parsed[T]{{key: cache.KeyOf(obj), obj: obj, line: doc.line}}, nil
	case gvk.Kind == "List" || gvk == d.gvk.GroupVersion().WithKind(d.gvk.Kind+"List"):
		// Items of a typed list (PodList) may omit their type; those of a
		// v1 List name theirs.
		var def schema.GroupVersionKind
		if gvk.Kind != "List" {
			def = d.gvk
		}
		var out []parsed[T]
		for i, raw := range tm.Items {
			obj, ok, err := d.item(raw, def)
			if err != nil {
				line := d.lineOf(doc, append([]string{"items"}, fieldPath(err)...), nil)
				if at := bytes.Index(data, raw); doc.json && at >= 0 {
					line = doc.line + lineAt(data, int64(at)+offsetOf(err)) - 1
				}
				return nil, &Error{File: name, Line: line, Err: fmt.Errorf("items[%d]: %w", i, err)}
			}
			if ok {
				out = append(out, parsed[T]{key: cache.KeyOf(obj), obj: obj, line: doc.line})
			}
		}
		return out, nil
	}
	return nil, nil // another kind
}

// item decodes one item of a list: an object of type T (true), or of
// another kind (false).
func (d *decoder[T]) item(raw json.RawMessage, def schema.GroupVersionKind) (T, bool, error) {
	var zero T
	var tm typeMeta
	if err := kjson.Unmarshal(raw, &tm); err != nil {
		return zero, false, fmt.Errorf("%w: not an object: %w", ErrInvalid, err)
	}
	gvk := def
	if tm.APIVersion != "" || tm.Kind != "" || def.Empty() {
		gvk = schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
	}
	if gvk != d.gvk {
		return zero, false, nil
	}
	obj, err := d.object(raw, d.gvk)
	return obj, err == nil, err
}

// object decodes data into a new T with the JSON rules of the API
// machinery (case-sensitive field names), checks it has a name, and
// readies it for the store: the type set, the file's resourceVersion
// dropped (the source assigns its own), the default namespace given.
func (d *decoder[T]) object(data []byte, gvk schema.GroupVersionKind) (T, error) {
	var zero T
	obj := d.newT()
	if err := kjson.Unmarshal(data, obj); err != nil {
		return zero, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if obj.GetName() == "" {
		return zero, fmt.Errorf("%w: %s without metadata.name", ErrInvalid, gvk.Kind)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	obj.SetResourceVersion("")
	if obj.GetNamespace() == "" && d.namespace != "" {
		obj.SetNamespace(d.namespace)
	}
	return obj, nil
}

// splitYAML cuts a YAML stream into documents at separator lines ("---",
// optionally followed by a comment).
func splitYAML(data []byte) []document {
	var docs []document
	start, startLine := 0, 1
	line := 1
	for off := 0; off < len(data); line++ {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		if isSeparator(data[off:next]) {
			docs = append(docs, document{line: startLine, data: data[start:off]})
			start, startLine = next, line+1
		}
		off = next
	}
	return append(docs, document{line: startLine, data: data[start:]})
}

func isSeparator(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || rest[0] == '#'
}

// splitJSON cuts a stream of JSON values into documents. A syntax error
// ends the stream: the documents before it are returned with it.
func splitJSON(data []byte) ([]document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs []document
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		end := int(dec.InputOffset())
		start := end - len(raw)
		docs = append(docs, document{line: lineAt(data, int64(start)), data: raw, json: true})
	}
}

// isJSONFile reports a file read as JSON rather than YAML.
func isJSONFile(name string) bool { return strings.HasSuffix(strings.ToLower(name), ".json") }

// lineAt returns the 1-based line of byte offset off in data.
func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

// offsetOf returns the byte offset a JSON error gives, or 0.
func offsetOf(err error) int64 {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return se.Offset
	case errors.As(err, &te):
		return te.Offset
	}
	return 0
}

var yamlLineRE = regexp.MustCompile(`\bline (\d+)\b`)

// yamlLine returns the 1-based line a YAML error names, or 1. The YAML
// parser names it only in its message.
func yamlLine(err error) int {
	m := yamlLineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 1
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// fieldPath returns the path of the field a JSON type error is about
// (spec.containers.ports.containerPort), or nil.
func fieldPath(err error) []string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" {
		return nil
	}
	return strings.Split(te.Field, ".")
}

// lineOf returns the line in the file of what err is about: in a JSON
// document the byte offset of a type error; in a YAML document the line
// of the field at path (or of its longest prefix found); else the
// document's first line.
func (d *decoder[T]) lineOf(doc document, path []string, err error) int {
	if doc.json {
		if off := offsetOf(err); off > 0 {
			return doc.line + lineAt(doc.data, off) - 1
		}
		return doc.line
	}
	return doc.line + yamlFieldLine(doc.data, path) - 1
}

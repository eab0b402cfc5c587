package source

import (
	gojson "encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/json"
)

// This file decodes a JSON list body as it is read: the list's members are
// found with a small scanner that knows strings and nesting and nothing
// else, each item's bytes are decoded on their own, and the item is handed
// over before the next one is read. Only one item's bytes and one decoded
// item are held at a time.

// errListSyntax is the cause of a list body the scanner cannot read as a
// JSON object of members; the decoders' own syntax errors say more.
var errListSyntax = errors.New("invalid JSON in list body")

// listBufSize is the scanner's first buffer; it grows to the largest item.
const listBufSize = 64 << 10

// decodeListItems decodes the JSON list body read from r as decodeList
// does, but calls yield with each item as soon as it is decoded, and
// returns the list without its Items. Its errors are decodeList's, with
// the same precedence: a body that is not JSON is malformed whatever
// else is wrong with it, then a list that is not a list, then the first
// item that fails; so the rest of the body is read after an item fails,
// though no other item is decoded or handed over. yield's error is
// returned as it is, at once. A body with two "items" members hands over
// both arrays (decodeList keeps the last): an API server writes one.
func (s *restSource[T]) decodeListItems(r io.Reader, yield func(T) error) (List[T], error) {
	sc := &listScanner{r: r}
	var (
		meta     metav1.ListMeta
		out      List[T]
		shapeErr error // the list is not a list: a member of the wrong JSON type
		itemErr  error // the first item that fails the list
	)
	c, err := sc.peek()
	if err != nil {
		return List[T]{}, s.scanError(sc, err)
	}
	if c != '{' {
		v, err := sc.value()
		if err != nil {
			return List[T]{}, s.scanError(sc, err)
		}
		if string(v) != "null" { // null decodes into an empty list
			return List[T]{}, s.listError(fmt.Errorf("%w: not an object: %.20q", errListSyntax, v))
		}
		return out, s.scanEnd(sc)
	}
	sc.pos++
	for first := true; ; first = false {
		c, err := sc.peek()
		if err != nil {
			return List[T]{}, s.scanError(sc, err)
		}
		if c == '}' {
			sc.pos++
			break
		}
		if !first {
			if c != ',' {
				return List[T]{}, s.listError(errListSyntax)
			}
			sc.pos++
		}
		key, err := sc.key()
		if err != nil {
			return List[T]{}, s.scanError(sc, err)
		}
		switch key {
		case "metadata":
			v, err := sc.value()
			if err != nil {
				return List[T]{}, s.scanError(sc, err)
			}
			if err := json.UnmarshalCaseSensitivePreserveInts(v, &meta); err != nil {
				if syntax, _ := json.SyntaxErrorOffset(err); syntax {
					return List[T]{}, s.listError(err)
				}
				shapeErr = cmpOr(shapeErr, s.listError(err))
			}
		case "items":
			if c, err := sc.peek(); err == nil && c == '[' {
				sc.pos++
				err := s.items(sc, &out, yield, shapeErr != nil, &itemErr)
				if err != nil {
					return List[T]{}, err
				}
				continue
			}
			v, err := sc.value()
			if err != nil {
				return List[T]{}, s.scanError(sc, err)
			}
			if err := s.skipped(v); err != nil {
				return List[T]{}, err
			}
			if string(v) != "null" {
				shapeErr = cmpOr(shapeErr, s.listError(fmt.Errorf("items: want an array, got %.20s", v)))
			}
		default:
			v, err := sc.value()
			if err != nil {
				return List[T]{}, s.scanError(sc, err)
			}
			if err := s.skipped(v); err != nil {
				return List[T]{}, err
			}
		}
	}
	if err := s.scanEnd(sc); err != nil {
		return List[T]{}, err
	}
	if err := cmpOr(shapeErr, itemErr); err != nil {
		return List[T]{}, err
	}
	out.ResourceVersion, out.Continue, out.ShardInfo = meta.ResourceVersion, meta.Continue, meta.ShardInfo
	return out, nil
}

// items reads the elements of an "items" array, the '[' read, up to its
// ']': each one is decoded and handed to yield, or kept in out's
// Undecodable, until one fails the list (*failed); from then on, or if
// skip, elements are only checked to be JSON.
func (s *restSource[T]) items(sc *listScanner, out *List[T], yield func(T) error, skip bool, failed *error) error {
	for i := 0; ; i++ {
		c, err := sc.peek()
		if err != nil {
			return s.scanError(sc, err)
		}
		if c == ']' {
			sc.pos++
			return nil
		}
		if i > 0 {
			if c != ',' {
				return s.listError(errListSyntax)
			}
			sc.pos++
		}
		v, err := sc.value()
		if err != nil {
			return s.scanError(sc, err)
		}
		if skip || *failed != nil {
			if err := s.skipped(v); err != nil {
				return err
			}
			continue
		}
		var obj T
		if err := json.UnmarshalCaseSensitivePreserveInts(v, &obj); err != nil {
			if syntax, _ := json.SyntaxErrorOffset(err); syntax {
				return s.listError(err)
			}
			u := undecodableJSON(v, err)
			u.Index = i
			if u.Name == "" {
				*failed = &Error{Phase: PhaseList, Err: fmt.Errorf("decode %v list: %w", s.info.Resource, u)}
				continue
			}
			out.Undecodable = append(out.Undecodable, u)
			continue
		}
		if err := s.listed(i, obj); err != nil {
			*failed = err
			continue
		}
		if err := yield(obj); err != nil {
			return err
		}
	}
}

// skipped checks that v, a value the decoder does not decode, is JSON.
func (s *restSource[T]) skipped(v []byte) error {
	if !gojson.Valid(v) {
		return s.listError(fmt.Errorf("%w: %.40q", errListSyntax, v))
	}
	return nil
}

// scanEnd checks that nothing but white space follows the list.
func (s *restSource[T]) scanEnd(sc *listScanner) error {
	_, err := sc.peek()
	switch {
	case err == nil:
		return s.listError(fmt.Errorf("%w: data after the list", errListSyntax))
	case errors.Is(err, io.EOF):
		return nil
	}
	return s.scanError(sc, err)
}

// scanError is the error of a list whose scanner failed with err: the
// connection's, or a malformed body (one that ends too soon included).
func (s *restSource[T]) scanError(sc *listScanner, err error) error {
	if sc.readErr != nil {
		return &Error{Phase: PhaseList, Err: sc.readErr}
	}
	if errors.Is(err, io.EOF) {
		err = fmt.Errorf("%w: unexpected end of the body", errListSyntax)
	}
	return s.listError(err)
}

// cmpOr returns the first non-nil error.
func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// listScanner reads JSON values from r into a buffer it reuses: a value's
// bytes are valid until the next call.
type listScanner struct {
	r       io.Reader
	buf     []byte // buf[pos:] is unread
	pos     int
	readErr error // the reader's first error other than io.EOF
	eof     bool
}

// fill reads more of the body, keeping buf[keep:], which moves to the
// start of buf; it returns io.EOF at the end of the body.
func (sc *listScanner) fill(keep int) error {
	n := copy(sc.buf, sc.buf[keep:])
	sc.buf, sc.pos = sc.buf[:n], sc.pos-keep
	switch {
	case sc.readErr != nil:
		return sc.readErr
	case sc.eof:
		return io.EOF
	case cap(sc.buf) == 0:
		sc.buf = make([]byte, 0, listBufSize)
	case n > cap(sc.buf)/2:
		sc.buf = slices.Grow(sc.buf, cap(sc.buf))
	}
	for {
		m, err := sc.r.Read(sc.buf[n:cap(sc.buf)])
		sc.buf = sc.buf[:n+m]
		switch {
		case err == io.EOF:
			sc.eof = true
		case err != nil:
			sc.readErr = err
		}
		if m > 0 {
			return nil
		}
		if err != nil {
			return cmpOr(sc.readErr, io.EOF)
		}
	}
}

// peek skips white space and returns the next byte without reading it.
func (sc *listScanner) peek() (byte, error) {
	for {
		for sc.pos < len(sc.buf) {
			switch c := sc.buf[sc.pos]; c {
			case ' ', '\t', '\r', '\n':
				sc.pos++
			default:
				return c, nil
			}
		}
		if err := sc.fill(sc.pos); err != nil {
			return 0, err
		}
	}
}

// value reads the next value: a string, an object or an array up to its
// closing delimiter (strings and nesting are followed, nothing else is
// checked), or a scalar up to the next delimiter or white space.
func (sc *listScanner) value() ([]byte, error) {
	if _, err := sc.peek(); err != nil {
		return nil, err
	}
	start, i := sc.pos, sc.pos
	var (
		depth    int
		inString bool
		escaped  bool
		scalar   = sc.buf[i] != '"' && sc.buf[i] != '{' && sc.buf[i] != '['
	)
	for {
		for ; i < len(sc.buf); i++ {
			c := sc.buf[i]
			switch {
			case inString:
				switch {
				case escaped:
					escaped = false
				case c == '\\':
					escaped = true
				case c == '"':
					inString = false
					if depth == 0 {
						sc.pos = i + 1
						return sc.buf[start:sc.pos], nil
					}
				}
			case scalar:
				switch c {
				case ',', '}', ']', ' ', '\t', '\r', '\n', '"', '{', '[', ':':
					sc.pos = i
					return sc.buf[start:i], nil
				}
			case c == '"':
				inString = true
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				depth--
				if depth == 0 {
					sc.pos = i + 1
					return sc.buf[start:sc.pos], nil
				}
			}
		}
		err := sc.fill(start)
		i, start = i-start, 0
		if err == io.EOF && scalar {
			sc.pos = len(sc.buf)
			return sc.buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// key reads a member's name and the colon after it.
func (sc *listScanner) key() (string, error) {
	c, err := sc.peek()
	if err != nil {
		return "", err
	}
	if c != '"' {
		return "", fmt.Errorf("%w: want a member name", errListSyntax)
	}
	v, err := sc.value()
	if err != nil {
		return "", err
	}
	var k string
	if raw := v[1 : len(v)-1]; plain(raw) {
		k = string(raw)
	} else if err := gojson.Unmarshal(v, &k); err != nil {
		return "", fmt.Errorf("%w: member name: %w", errListSyntax, err)
	}
	if c, err := sc.peek(); err != nil {
		return "", err
	} else if c != ':' {
		return "", fmt.Errorf("%w: want ':' after %q", errListSyntax, k)
	}
	sc.pos++
	return k, nil
}

// plain reports a member name of printable ASCII without escapes: its
// bytes are its value.
func plain(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e || c == '\\' {
			return false
		}
	}
	return true
}

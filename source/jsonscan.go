package source

import "bytes"

// This file finds the parts of a JSON watch frame the decoder needs without
// decoding it: the event's type and object, and the object's
// metadata.managedFields, so that they can be cut out before the object is
// decoded. The functions report false for anything they do not recognise;
// the caller then decodes the frame the general way.

// skipSpace returns the index of the first non-space byte of b from i.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index after the string starting at b[i] (a
// quote), and whether it has escapes.
func skipString(b []byte, i int) (end int, escaped, ok bool) {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0, false, false
		}
		j += i
		// An odd run of backslashes before the quote escapes it.
		n := 0
		for k := j - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n > 0 {
			escaped = true
		}
		if n%2 == 0 {
			return j + 1, escaped || bytes.IndexByte(b[i:j], '\\') >= 0, true
		}
		i = j + 1
	}
}

// skipValue returns the index after the JSON value starting at b[i].
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		end, _, ok := skipString(b, i)
		return end, ok
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, _, ok := skipString(b, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	}
	// A number, true, false or null: up to the next delimiter.
	for j := i; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j, j > i
		}
	}
	return len(b), true
}

// member is one member of a JSON object: where it starts (its key's quote)
// and where its value starts and ends.
type member struct {
	key             []byte // without quotes; escaped keys are not matched
	start, val, end int
}

// members calls f for each member of the object starting at b[i] until f
// returns false; it reports whether the object was well formed up to there.
func members(b []byte, i int, f func(m member) bool) bool {
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return true
	}
	for i < len(b) {
		if b[i] != '"' {
			return false
		}
		kend, escaped, ok := skipString(b, i)
		if !ok {
			return false
		}
		m := member{start: i}
		if !escaped {
			m.key = b[i+1 : kend-1]
		}
		j := skipSpace(b, kend)
		if j >= len(b) || b[j] != ':' {
			return false
		}
		m.val = skipSpace(b, j+1)
		if m.end, ok = skipValue(b, m.val); !ok {
			return false
		}
		if !f(m) {
			return true
		}
		i = skipSpace(b, m.end)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '}':
			return true
		case ',':
			i = skipSpace(b, i+1)
		default:
			return false
		}
	}
	return false
}

// envelope splits a watch frame {"type": T, "object": O} (in that order,
// nothing else, as the API server writes it) into T's bytes and O's. It
// reads only the frame's start and end: O is everything between the
// object's key and the frame's last brace, which the decoder of O then
// checks, so that the object's bytes are not scanned one time more. A frame
// with anything after the object (another member) makes O invalid JSON,
// and the caller then decodes the frame the general way.
func envelope(frame []byte) (typ, obj []byte, ok bool) {
	i := skipSpace(frame, 0)
	expect := func(lit string) bool {
		i = skipSpace(frame, i)
		if !bytes.HasPrefix(frame[i:], []byte(lit)) {
			return false
		}
		i += len(lit)
		return true
	}
	if !expect("{") || !expect(`"type"`) || !expect(":") {
		return nil, nil, false
	}
	i = skipSpace(frame, i)
	if i >= len(frame) || frame[i] != '"' {
		return nil, nil, false
	}
	end, escaped, ok := skipString(frame, i)
	if !ok || escaped {
		return nil, nil, false
	}
	typ = frame[i+1 : end-1]
	i = end
	if !expect(",") || !expect(`"object"`) || !expect(":") {
		return nil, nil, false
	}
	start := skipSpace(frame, i)
	last := len(frame) - 1
	for last > start && isSpaceByte(frame[last]) {
		last--
	}
	if last <= start || frame[last] != '}' {
		return nil, nil, false
	}
	stop := last
	for stop > start && isSpaceByte(frame[stop-1]) {
		stop--
	}
	if stop == start {
		return nil, nil, false
	}
	return typ, frame[start:stop], true
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

var managedFieldsKey = []byte("managedFields")

// cutManagedFields returns the JSON object in obj without
// metadata.managedFields, written into dst's space (obj itself is not
// changed, so that the caller can still decode the frame another way), or
// obj if it has none or is not recognised.
func cutManagedFields(dst, obj []byte) []byte {
	var meta member
	found := false
	members(obj, 0, func(m member) bool {
		if string(m.key) == "metadata" {
			meta, found = m, true
			return false
		}
		return true
	})
	if !found || obj[meta.val] != '{' {
		return obj
	}
	var prevEnd int
	var mf member
	first := true
	found = false
	members(obj, meta.val, func(m member) bool {
		if bytes.Equal(m.key, managedFieldsKey) {
			mf, found = m, true
			return false
		}
		prevEnd, first = m.end, false
		return true
	})
	if !found {
		return obj
	}
	start, end := prevEnd, mf.end // from the end of the previous member: its comma goes
	if first {
		// The first member: cut up to the next member, with its comma.
		start = mf.start
		j := skipSpace(obj, mf.end)
		if j < len(obj) && obj[j] == ',' {
			end = skipSpace(obj, j+1)
		}
	}
	return append(append(dst[:0], obj[:start]...), obj[end:]...)
}

// cutMetadata returns the JSON object in obj without
// metadata.managedFields (if mf) and without the metadata.annotations
// whose keys are in drop, written into dst's space, or obj if nothing is
// cut or obj is not recognised. An annotation whose key has escapes is
// left: the decoded object loses it instead.
func cutMetadata(dst, obj []byte, mf bool, drop map[string]bool) []byte {
	var meta member
	found := false
	members(obj, 0, func(m member) bool {
		if string(m.key) == "metadata" {
			meta, found = m, true
			return false
		}
		return true
	})
	if !found || obj[meta.val] != '{' {
		return obj
	}
	var (
		kept   []member // metadata's members, but managedFields
		ann    member
		hasAnn bool
		cutMF  bool
	)
	if !members(obj, meta.val, func(m member) bool {
		switch {
		case mf && bytes.Equal(m.key, managedFieldsKey):
			cutMF = true
			return true
		case string(m.key) == "annotations" && obj[m.val] == '{':
			ann, hasAnn = m, true
		}
		kept = append(kept, m)
		return true
	}) {
		return obj
	}
	var annKept []member
	cutAnn := false
	if hasAnn && !members(obj, ann.val, func(m member) bool {
		if m.key != nil && drop[string(m.key)] {
			cutAnn = true
		} else {
			annKept = append(annKept, m)
		}
		return true
	}) {
		cutAnn = false
	}
	if !cutMF && !cutAnn {
		return obj
	}
	out := append(dst[:0], obj[:meta.val]...)
	out = append(out, '{')
	for i, m := range kept {
		if i > 0 {
			out = append(out, ',')
		}
		if cutAnn && m.start == ann.start {
			out = append(out, obj[m.start:m.val]...) // the key and its colon
			out = append(out, '{')
			for j, a := range annKept {
				if j > 0 {
					out = append(out, ',')
				}
				out = append(out, obj[a.start:a.end]...)
			}
			out = append(out, '}')
			continue
		}
		out = append(out, obj[m.start:m.end]...)
	}
	out = append(out, '}')
	return append(out, obj[meta.end:]...)
}

package file

import (
	"bytes"
	"strings"
)

// yamlFieldLine returns the 1-based line, in the YAML document data, of
// the field at path (keys from the root, list indexes left out, as JSON
// type errors name fields): the first line whose chain of parent keys is
// path, or, if there is none, that of the longest prefix of path found,
// or 1. It reads block-style YAML by indentation, which is what manifests
// are written in; a field inside a flow collection ({...}, [...]) is found
// at the line of the collection's key.
func yamlFieldLine(data []byte, path []string) int {
	if len(path) == 0 {
		return 1
	}
	type level struct {
		indent int
		key    string
	}
	var stack []level
	best, bestDepth := 1, 0
	scalarIndent := -1 // indent of the key of the block scalar being skipped
	for i, raw := range bytes.Split(data, []byte("\n")) {
		s := strings.TrimRight(string(raw), " \t\r")
		text := strings.TrimLeft(s, " ")
		indent := len(s) - len(text)
		if scalarIndent >= 0 {
			if text == "" || indent > scalarIndent {
				continue // a line of a block scalar (| or >)
			}
			scalarIndent = -1
		}
		if text == "" || text[0] == '#' {
			continue
		}
		// A list item's content starts after its dash.
		for text == "-" || strings.HasPrefix(text, "- ") {
			rest := strings.TrimLeft(text[1:], " ")
			indent += len(text) - len(rest)
			text = rest
		}
		key, value, ok := yamlKey(text)
		if !ok {
			continue
		}
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, level{indent: indent, key: key})
		if isBlockScalar(value) {
			scalarIndent = indent
		}
		if len(stack) > len(path) || len(stack) <= bestDepth {
			continue
		}
		match := true
		for j, l := range stack {
			if l.key != path[j] {
				match = false
				break
			}
		}
		if match {
			best, bestDepth = i+1, len(stack)
			if bestDepth == len(path) {
				return best
			}
		}
	}
	return best
}

// yamlKey splits a line "key: value" (the key plain or quoted) into its
// key and value.
func yamlKey(text string) (key, value string, ok bool) {
	if q := text[0]; q == '"' || q == '\'' {
		end := strings.IndexByte(text[1:], q)
		if end < 0 {
			return "", "", false
		}
		key, rest := text[1:1+end], text[2+end:]
		rest, ok = strings.CutPrefix(strings.TrimLeft(rest, " "), ":")
		if !ok || (rest != "" && rest[0] != ' ') {
			return "", "", false
		}
		return key, strings.TrimSpace(rest), true
	}
	if text[0] == '{' || text[0] == '[' {
		return "", "", false
	}
	if k, ok := strings.CutSuffix(text, ":"); ok {
		return strings.TrimSpace(k), "", true
	}
	i := strings.Index(text, ": ")
	if i < 0 {
		return "", "", false
	}
	return strings.TrimSpace(text[:i]), strings.TrimSpace(text[i+2:]), true
}

// isBlockScalar reports a value that starts a literal or folded block
// (|, >, with their modifiers).
func isBlockScalar(value string) bool {
	if value == "" || (value[0] != '|' && value[0] != '>') {
		return false
	}
	v, _, _ := strings.Cut(value, "#")
	return strings.Trim(strings.TrimSpace(v), "|>+-0123456789") == ""
}

package source

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// chunks reads its data in reads of random sizes up to max.
type chunks struct {
	data []byte
	rnd  *rand.Rand
	max  int
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), 1+c.rnd.IntN(c.max))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// TestLineReaderBuffer: every line comes back whole whatever the reads' sizes,
// lines longer than the buffer included; a burst grows the buffer, and
// once the stream is caught up the buffer is back to minLineBuf.
func TestLineReaderBuffer(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 0))
	var want []string
	var data bytes.Buffer
	for i := range 2000 {
		line := fmt.Sprintf("%d:%s", i, strings.Repeat("x", rnd.IntN(3000)))
		if i%500 == 7 {
			line += strings.Repeat("y", 100<<10) // longer than any buffer of a burst
		}
		want = append(want, line)
		data.WriteString(line + "\n")
	}
	l := newLineReader(&chunks{data: data.Bytes(), rnd: rnd, max: 256 << 10})
	for i, w := range want {
		got, err := l.next()
		if err != nil || string(got) != w {
			t.Fatalf("seed %d: line %d: %d bytes, %v; want %d bytes", seed, i, len(got), err, len(w))
		}
	}
	if _, err := l.next(); err != io.EOF {
		t.Fatalf("seed %d: after the last line: %v, want EOF", seed, err)
	}

	// A burst read in full reads, then single small events.
	var burst bytes.Buffer
	for range 200 {
		burst.WriteString(strings.Repeat("b", 999) + "\n")
	}
	small := &chunks{data: burst.Bytes(), rnd: rnd, max: 1 << 30}
	l = newLineReader(small)
	grown := 0
	for range 200 {
		if _, err := l.next(); err != nil {
			t.Fatal(err)
		}
		grown = max(grown, len(l.buf))
	}
	if grown <= minLineBuf {
		t.Errorf("in a burst of full reads the buffer stayed at %d bytes; want it grown", grown)
	}
	l.r = &chunks{data: []byte(strings.Repeat(strings.Repeat("e", 200)+"\n", 2)), rnd: rnd, max: 201}
	for range 2 {
		if _, err := l.next(); err != nil {
			t.Fatal(err)
		}
	}
	if len(l.buf) != minLineBuf {
		t.Errorf("caught up on small events, the buffer is %d bytes; want %d", len(l.buf), minLineBuf)
	}
}

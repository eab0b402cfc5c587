package source

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

// TestGunzipBody: a stream of gzip members, as kube-apiserver writes a
// watch with its initial events (a member per flush), reads back whole
// through reads of any size, with no decompressor held at its end; a
// plain stream passes through; a member cut short is an error, not EOF.
func TestGunzipBody(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 1))
	var plain, zipped bytes.Buffer
	var starts []int // where each member begins
	for i := range 300 {
		starts = append(starts, zipped.Len())
		ev := fmt.Sprintf(`{"type":"ADDED","object":{"n":%d,"pad":"%s"}}`+"\n", i, bytes.Repeat([]byte("p"), rnd.IntN(5000)))
		plain.WriteString(ev)
		zw := gzip.NewWriter(&zipped)
		zw.Write([]byte(ev))
		zw.Close()
	}
	for name, stream := range map[string][]byte{"gzip members": zipped.Bytes(), "plain": plain.Bytes()} {
		g := newGunzipBody(io.NopCloser(&chunks{data: bytes.Clone(stream), rnd: rnd, max: 3000}))
		var got bytes.Buffer
		buf := make([]byte, 4096)
		for {
			n, err := g.Read(buf[:1+rnd.IntN(len(buf))])
			got.Write(buf[:n])
			if g.cur != nil && name == "plain" {
				t.Fatalf("%s: a decompressor for a plain stream", name)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("seed %d: %s: %v", seed, name, err)
			}
		}
		if !bytes.Equal(got.Bytes(), plain.Bytes()) {
			t.Errorf("seed %d: %s: read %d bytes, want the %d of the events", seed, name, got.Len(), plain.Len())
		}
		if g.cur != nil {
			t.Errorf("%s: a decompressor held at the end of the stream", name)
		}
		if name == "plain" && g.in != nil {
			t.Errorf("%s: the sniffing buffer is still held after the stream was read", name)
		}
	}

	// Cut inside a member, never on a boundary between two (that would be
	// a whole, shorter stream).
	m := rnd.IntN(len(starts) - 1)
	cut := zipped.Bytes()[:starts[m]+1+rnd.IntN(starts[m+1]-starts[m]-1)]
	g := newGunzipBody(io.NopCloser(bytes.NewReader(cut)))
	if _, err := io.ReadAll(g); err == nil || err == io.EOF {
		t.Errorf("a stream cut within a member: %v, want an error", err)
	}
}

package source

import (
	"bufio"
	"compress/gzip"
	"errors"
	"io"
	"sync"
)

// kube-apiserver compresses the stream of a watch that sends its initial
// events (WatchListCompression) when the client accepts gzip, one gzip
// member per flush, and keeps the connection as the ongoing watch. Go's
// transport decompresses such a body with a gzip reader held for the life
// of the stream: 40 KiB of decompressor state per idle watch. A REST
// source instead asks for gzip itself and reads the body with
// gunzipBody, which holds a decompressor only within a member and hands
// it back to a pool between members: an idle watch holds none.

// gunzipPool holds the decompressors of no member in progress.
var gunzipPool sync.Pool // of *gzip.Reader

// gunzipBufSize is the compressed input a watch buffers.
const gunzipBufSize = 2 << 10

// gunzipBody reads a body that is gzip, one or more members, or plain
// (the server did not compress it, as it does not a watch without initial
// events): the first two bytes tell, since neither a JSON stream nor a
// protobuf one can start with gzip's magic number.
type gunzipBody struct {
	body  io.ReadCloser
	in    *bufio.Reader // nil once a plain stream has drained it
	plain bool          // not gzip: reads go to in, then to body
	known bool          // plain or gzip was told
	cur   *gzip.Reader  // the member being read; nil between members
}

func newGunzipBody(body io.ReadCloser) *gunzipBody {
	return &gunzipBody{body: body, in: bufio.NewReaderSize(body, gunzipBufSize)}
}

func (g *gunzipBody) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if !g.known {
		magic, err := g.in.Peek(2)
		if err != nil && len(magic) == 0 {
			return 0, err
		}
		g.known, g.plain = true, len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b
	}
	if g.plain {
		if g.in != nil && g.in.Buffered() > 0 {
			return g.in.Read(p)
		}
		g.in = nil // what Peek read is consumed: an idle plain watch holds no buffer
		return g.body.Read(p)
	}
	for {
		if g.cur == nil {
			if _, err := g.in.Peek(1); err != nil {
				return 0, err // io.EOF between members: the stream's end
			}
			z, _ := gunzipPool.Get().(*gzip.Reader)
			var err error
			if z == nil {
				z, err = gzip.NewReader(g.in)
			} else {
				err = z.Reset(g.in)
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return 0, err
			}
			z.Multistream(false)
			g.cur = z
		}
		n, err := g.cur.Read(p)
		if errors.Is(err, io.EOF) {
			gunzipPool.Put(g.cur)
			g.cur = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

// Close closes the body. A member in progress keeps its decompressor (a
// Read may be in progress on another goroutine: Stop closes the body to
// end it), and the collector takes it.
func (g *gunzipBody) Close() error { return g.body.Close() }

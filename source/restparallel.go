package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/typedinformer/informer/cache"
)

// parallelWatcher decodes a JSON watch stream on several goroutines and
// hands the events out in the order the server sent them: one goroutine
// reads lines (cheap: it only looks for newlines), workers decode them,
// and Next takes them in order. Jobs circulate through a fixed pool, so
// the read-ahead, and the memory it holds, is bounded.
type parallelWatcher[T cache.Object] struct {
	src    *restSource[T]
	ctx    context.Context
	cancel context.CancelFunc
	body   io.ReadCloser
	read   *recordingReader

	free  chan *frameJob[T] // jobs not in use
	work  chan *frameJob[T] // to the workers
	order chan *frameJob[T] // in stream order, to Next; closed when the reader ends

	readErr error // why the reader ended; written before order is closed
	stopped atomic.Bool
	once    sync.Once
	wg      sync.WaitGroup
}

// frameJob is one line and, once a worker is done with it, its event.
type frameJob[T cache.Object] struct {
	line []byte
	ev   Event[T]
	err  error
	done chan struct{}
}

func newParallelWatcher[T cache.Object](s *restSource[T], ctx context.Context, cancel context.CancelFunc, body io.ReadCloser, cutMF bool) *parallelWatcher[T] {
	jobs := 2*s.workers + 2
	w := &parallelWatcher[T]{
		src: s, ctx: ctx, cancel: cancel, body: body, read: &recordingReader{r: body},
		free: make(chan *frameJob[T], jobs), work: make(chan *frameJob[T], jobs), order: make(chan *frameJob[T], jobs),
	}
	for range jobs {
		w.free <- &frameJob[T]{done: make(chan struct{}, 1)}
	}
	w.wg.Go(w.readLines)
	for range s.workers {
		w.wg.Go(func() {
			var scratch []byte
			for job := range w.work {
				job.ev, job.err = s.decodeFrame(job.line, cutMF, &scratch)
				if errors.Is(job.err, errNotAFrame) {
					job.ev, job.err = s.decodeAnyFrame(job.line)
				}
				job.done <- struct{}{}
				// The send readied the goroutine waiting in Next, if this
				// was the job it waits for, to run on this P next; left
				// alone it would wait until this worker blocks, by which
				// time every job of the read-ahead is decoded and the
				// workers idle. Yielding lets it take the event now.
				runtime.Gosched()
			}
		})
	}
	return w
}

// readLines hands each line to the workers and, in order, to Next.
func (w *parallelWatcher[T]) readLines() {
	defer close(w.order)
	defer close(w.work)
	lines := newLineReader(w.read)
	for {
		line, err := lines.next()
		if err != nil {
			w.readErr = err
			return
		}
		if len(line) == 0 || isSpace(line) {
			continue
		}
		var job *frameJob[T]
		select {
		case job = <-w.free:
		case <-w.ctx.Done():
			w.readErr = w.ctx.Err()
			return
		}
		job.line = append(job.line[:0], line...)
		lines.shrink()
		// Neither send blocks: both channels hold every job.
		w.order <- job
		w.work <- job
	}
}

func isSpace(b []byte) bool {
	return skipSpace(b, 0) == len(b)
}

// Next returns the next event in stream order.
func (w *parallelWatcher[T]) Next(ctx context.Context) (Event[T], error) {
	if err := ctx.Err(); err != nil {
		return Event[T]{}, err
	}
	if w.stopped.Load() {
		return Event[T]{}, ErrWatchClosed
	}
	var job *frameJob[T]
	var ok bool
	select {
	case job, ok = <-w.order:
	case <-ctx.Done():
		return Event[T]{}, ctx.Err()
	}
	if !ok {
		return Event[T]{}, ErrWatchClosed // the stream ended, failed or was stopped
	}
	<-job.done // a worker always finishes a job it was given
	ev, err := job.ev, job.err
	job.ev, job.err = Event[T]{}, nil
	if cap(job.line) > maxKeptLine {
		job.line = nil
	}
	w.free <- job // never blocks: free holds every job
	switch {
	case err == nil:
		return ev, nil
	case w.stopped.Load():
		return Event[T]{}, ErrWatchClosed
	}
	var se *Error
	if errors.As(err, &se) {
		return Event[T]{}, err
	}
	return Event[T]{}, &Error{Phase: PhaseWatch, Err: fmt.Errorf("%w: decode %v watch event: %w", ErrMalformed, w.src.info.Resource, err)}
}

// Stop ends the stream and waits for the reader and the workers.
func (w *parallelWatcher[T]) Stop() {
	w.once.Do(func() {
		w.stopped.Store(true)
		w.cancel()
		_ = w.body.Close()
		w.wg.Wait()
	})
}

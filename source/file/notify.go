package file

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// How long the directory must be quiet after a notification before it is
// read, so that a file written in several steps is read once, whole; and
// the most a stream of notifications can delay a read.
const (
	settleQuiet = 50 * time.Millisecond
	settleMax   = time.Second
)

// notifier is the goroutine that follows the directory while watches are
// open.
type notifier struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// acquire counts an open watch; the first starts following the directory.
func (s *Source[T]) acquire() {
	s.nmu.Lock()
	s.refs++
	if s.refs > 1 {
		s.nmu.Unlock()
		return
	}
	fsw, err := s.notifications()
	ctx, cancel := context.WithCancel(context.Background())
	n := &notifier{cancel: cancel, done: make(chan struct{})}
	s.notes = n
	s.nmu.Unlock()
	if err != nil {
		s.report(err)
	}
	go s.follow(ctx, fsw, n.done)
}

// release counts a watch stopped; the last stops following the directory
// and waits for the goroutine that did.
func (s *Source[T]) release() {
	s.nmu.Lock()
	s.refs--
	var n *notifier
	if s.refs == 0 {
		n, s.notes = s.notes, nil
	}
	s.nmu.Unlock()
	if n != nil {
		n.cancel()
		<-n.done
	}
}

// notifications sets up file notifications for the directory, or returns
// why they cannot be had; the periodic rescan then stands in for them.
func (s *Source[T]) notifications() (*fsnotify.Watcher, error) {
	fsw, err := fsnotify.NewWatcher()
	if err == nil {
		err = fsw.Add(s.dir)
		if err != nil {
			_ = fsw.Close()
		}
	}
	if err != nil {
		return nil, &Error{File: s.dir, Err: fmt.Errorf("no file notifications, reading the directory every %v instead: %w", s.opts.RescanInterval, err)}
	}
	return fsw, nil
}

// follow rescans the directory when a notification says something in it
// changed (once it settled), when notifications were lost, and every
// RescanInterval, until ctx ends. fsw may be nil: rescans only.
func (s *Source[T]) follow(ctx context.Context, fsw *fsnotify.Watcher, done chan struct{}) {
	defer close(done)
	var events <-chan fsnotify.Event
	var errs <-chan error
	if fsw != nil {
		defer func() { _ = fsw.Close() }()
		events, errs = fsw.Events, fsw.Errors
	}
	var tick <-chan time.Time
	if s.opts.RescanInterval > 0 {
		t := time.NewTicker(s.opts.RescanInterval)
		defer t.Stop()
		tick = t.C
	}
	lost := false // the directory itself went away: its notifications ended
	parent := ""  // while lost: the parent directory, watched for its return
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events, errs = nil, nil
				continue
			}
			if parent != "" && ev.Name != s.dir && filepath.Dir(ev.Name) == parent {
				continue // another entry of the parent
			}
			lost = lost || s.dirGone(ev)
			if !s.settle(ctx, events, &lost) {
				return
			}
			if lost {
				lost = !s.rewatch(fsw, &parent)
			}
		case err, ok := <-errs:
			if !ok {
				events, errs = nil, nil
				continue
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				s.report(&Error{File: s.dir, Err: fmt.Errorf("file notifications: %w", err)})
			}
		case <-tick:
			if lost {
				lost = !s.rewatch(fsw, &parent)
			}
		}
		_ = s.Rescan(ctx) // problems are reported
	}
}

// rewatch follows the directory again after it went away, and reports
// whether it does. Until it is back, the parent directory is watched
// (parent names it), so that the directory's return is noticed at once,
// not at the next rescan.
func (s *Source[T]) rewatch(fsw *fsnotify.Watcher, parent *string) bool {
	if *parent == "" {
		if p := filepath.Dir(s.dir); p != s.dir && fsw.Add(p) == nil {
			*parent = p
		}
	}
	if fsw.Add(s.dir) != nil {
		return false // not back yet: its creation in the parent will say so
	}
	if *parent != "" {
		_ = fsw.Remove(*parent)
		*parent = ""
	}
	return true
}

// dirGone reports a notification that the directory itself was removed
// or renamed.
func (s *Source[T]) dirGone(ev fsnotify.Event) bool {
	return ev.Name == s.dir && ev.Has(fsnotify.Remove|fsnotify.Rename)
}

// settle waits until no notification came for settleQuiet (at most
// settleMax), and reports false if ctx ended first. A removal of the
// directory seen meanwhile sets lost.
func (s *Source[T]) settle(ctx context.Context, events <-chan fsnotify.Event, lost *bool) bool {
	quiet := time.NewTimer(settleQuiet)
	defer quiet.Stop()
	limit := time.NewTimer(settleMax)
	defer limit.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case ev, ok := <-events:
			if !ok {
				return true
			}
			*lost = *lost || s.dirGone(ev)
			quiet.Reset(settleQuiet)
		case <-quiet.C:
			return true
		case <-limit.C:
			return true
		}
	}
}

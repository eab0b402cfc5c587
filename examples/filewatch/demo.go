package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// stepWait bounds the wait for a step's handler calls: a hang guard.
const stepWait = 30 * time.Second

// step is one edit of the demo and the line it waits for.
type step struct {
	say   string
	edit  func(dir string) error
	until string // a line that contains this ends the step
}

func pod(name, labels, image string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: shop\n  labels: {%s}\n"+
		"spec:\n  containers:\n  - name: app\n    image: %s\n", name, labels, image)
}

func write(name, content string) func(string) error {
	return func(dir string) error { return os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644) }
}

// save writes as editors that save by rename do.
func save(name, content string) func(string) error {
	return func(dir string) error {
		tmp := filepath.Join(dir, "."+name+".swp")
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, filepath.Join(dir, name))
	}
}

var steps = []step{
	{"a new file with two pods", write("shop.yaml", pod("web", "app: web", "nginx:1.27")+"---\n"+pod("db", "app: db", "postgres:17")), "add    shop/db"},
	{"an editor saves a new image for web (write and rename)", save("web.yaml", pod("web", "app: web", "nginx:1.28")), "problem: web.yaml:"},
	{"shop.yaml sorts first, so its web wins: take web out of shop.yaml", write("shop.yaml", pod("db", "app: db", "postgres:17")), "update shop/web"},
	{"a broken save: the file keeps its pods", save("web.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels: [\n"), "problem: web.yaml:5"},
	{"the fix", save("web.yaml", pod("web", "app: web, tier: front", "nginx:1.28")), "update shop/web"},
	{"a deleted file", func(dir string) error { return os.Remove(filepath.Join(dir, "shop.yaml")) }, "delete shop/db"},
}

// demo runs the scripted edits on a directory of its own, printing to w.
func demo(ctx context.Context, w io.Writer) error {
	dir, err := os.MkdirTemp("", "filewatch")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := write("cache.yaml", pod("cache", "app: cache", "redis:8"))(dir); err != nil {
		return err
	}
	lw := &lineWaiter{w: w, wake: make(chan struct{})}
	return follow(ctx, lw, dir, func(ctx context.Context, say func(string, ...any)) error {
		for _, s := range steps {
			lw.mark()
			say("\n# %s", s.say)
			if err := s.edit(dir); err != nil {
				return err
			}
			if err := lw.waitFor(ctx, s.until); err != nil {
				return fmt.Errorf("%s: %w", s.say, err)
			}
		}
		return nil
	})
}

// lineWaiter passes lines on to w and lets the demo wait for one.
type lineWaiter struct {
	w     io.Writer
	mu    sync.Mutex
	lines []string
	from  int // lines before this one are of earlier steps
	wake  chan struct{}
}

func (l *lineWaiter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.Split(strings.TrimRight(string(b), "\n"), "\n")...)
	close(l.wake)
	l.wake = make(chan struct{})
	return l.w.Write(b)
}

// mark starts a step: waitFor looks only at the lines written after it.
func (l *lineWaiter) mark() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.from = len(l.lines)
}

func (l *lineWaiter) waitFor(ctx context.Context, substr string) error {
	timeout := time.NewTimer(stepWait)
	defer timeout.Stop()
	for {
		l.mu.Lock()
		for _, line := range l.lines[l.from:] {
			if strings.Contains(line, substr) {
				l.mu.Unlock()
				return nil
			}
		}
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout.C:
			return fmt.Errorf("no %q after %v", substr, stepWait)
		case <-wake:
		}
	}
}

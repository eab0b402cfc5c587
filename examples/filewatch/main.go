// Command filewatch runs a typed pod informer over a directory of
// manifests and prints every handler call: edit the files and watch the
// cache follow them, with no cluster.
//
// By default it makes a directory of its own, edits it step by step the
// way people and tools do (a new file, an editor's rename-style save, a
// broken file and its fix, a deletion), prints what the handlers see after
// each step, and exits. With -dir it follows that directory until
// interrupted (or for -duration).
//
//	go run ./examples/filewatch                      # scripted demo
//	go run ./examples/filewatch -dir ./manifests     # follow a directory
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"

	"github.com/typedinformer/informer/handler"
	"github.com/typedinformer/informer/source/file"
	"github.com/typedinformer/informer/typed"
)

func main() {
	dir := flag.String("dir", "", "directory of manifests to follow (default: a scripted demo in a directory of its own)")
	duration := flag.Duration("duration", 0, "with -dir: how long to run (0: until interrupted)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if *dir == "" {
		err = demo(ctx, os.Stdout)
	} else {
		if *duration > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, *duration)
			defer cancel()
		}
		err = follow(ctx, os.Stdout, *dir, nil)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "filewatch:", err)
		os.Exit(1)
	}
}

// follow runs an informer over dir until ctx ends, printing every handler
// call and every problem with a file to w. Once the informer synced it
// calls synced, if set, with the function that prints a line in turn with
// the handlers'; when synced returns, follow stops and returns its error.
func follow(ctx context.Context, w io.Writer, dir string, synced func(context.Context, func(string, ...any)) error) error {
	out := make(chan string, 64) // lines, printed by one goroutine in order
	say := func(format string, args ...any) { out <- fmt.Sprintf(format, args...) }
	src, err := file.New[*corev1.Pod](dir, file.Options{
		ErrorHandler: func(err error) {
			var fe *file.Error
			if errors.As(err, &fe) {
				rel, _ := filepath.Rel(dir, fe.File)
				say("problem: %s:%d: %v", rel, fe.Line, fe.Err)
				return
			}
			say("problem: %v", err)
		},
	})
	if err != nil {
		return err
	}
	inf, err := typed.NewInformer(src, typed.Options[*corev1.Pod]{})
	if err != nil {
		return err
	}
	reg, err := inf.AddHandler(handler.Funcs[*corev1.Pod]{
		AddFunc:    func(p *corev1.Pod, initial bool) { say("add    %s/%s %s", p.Namespace, p.Name, describe(p)) },
		UpdateFunc: func(_, p *corev1.Pod) { say("update %s/%s %s", p.Namespace, p.Name, describe(p)) },
		DeleteFunc: func(d handler.Deleted[*corev1.Pod]) { say("delete %s", d.Key) },
	})
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		for line := range out {
			fmt.Fprintln(w, line)
		}
	}()
	var result error
	if err := typed.WaitForCacheSync(ctx, inf, reg); err != nil {
		result = err
	} else {
		say("synced: %d pods", len(inf.Store().List()))
		if synced != nil {
			result = synced(ctx, say)
		} else {
			<-ctx.Done()
		}
	}
	cancel()
	if err := <-done; err != nil && result == nil {
		result = err
	}
	close(out) // no handler runs once Run returned; the source's last watch stopped
	<-printed
	return result
}

// describe says what a pod's labels and image are.
func describe(p *corev1.Pod) string {
	var ls []string
	for k, v := range p.Labels {
		ls = append(ls, k+"="+v)
	}
	slices.Sort(ls)
	var images []string
	for _, c := range p.Spec.Containers {
		images = append(images, c.Image)
	}
	return fmt.Sprintf("labels [%s] images [%s]", strings.Join(ls, " "), strings.Join(images, " "))
}

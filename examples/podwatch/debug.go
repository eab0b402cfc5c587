package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/typedinformer/informer/httpinfo"
)

// serveDebug serves /readyz and /debug/informers for the controller's
// informer and handler on addr until ctx ends, and prints the address. Keep
// addr private (the default is loopback): the page shows names, counts and
// status, never object contents, but it is not meant for the world.
func serveDebug(ctx context.Context, addr string, ctrl *controller) error {
	reg, err := httpinfo.NewRegistry(httpinfo.Options{})
	if err != nil {
		return err
	}
	e, err := httpinfo.Add(reg, ctrl.inf)
	if err != nil {
		return err
	}
	if err := e.AddHandler("demo", ctrl.reg); err != nil {
		return err
	}
	ready, err := httpinfo.NewReadiness(reg, httpinfo.ReadinessOptions{})
	if err != nil {
		return err
	}
	page, err := httpinfo.NewPage(reg, httpinfo.PageOptions{Readiness: ready})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/readyz", ready)
	mux.Handle("/debug/informers", page)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("debug page: %w", err)
	}
	fmt.Printf("podwatch: debug page: http://%s/debug/informers (readiness: /readyz)\n", ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("debug page: %w", err)
	}
	return nil
}

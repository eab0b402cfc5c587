package httpinfo

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// DefaultErrorThreshold is the default of ReadinessOptions.ErrorThreshold:
// longer than two retries at the informer's longest backoff (30s, with up to
// as much again of jitter), so one failed request that a retry fixes does not
// flip readiness, while revoked permissions or a deleted CRD do within a few
// minutes.
const DefaultErrorThreshold = 2 * time.Minute

// ReadinessOptions configures NewReadiness. The zero value is ready to use.
type ReadinessOptions struct {
	// Name is the check's name (Readiness.Name), as a healthz-style
	// endpoint lists it. Default: "informers".
	Name string
	// ErrorThreshold is how long an informer's errors may go on (since
	// Status().StaleSince) before the check fails: after sync, an informer
	// whose permission was revoked or whose CRD was deleted keeps serving
	// its last cache and retries; past the threshold it is reported. Default
	// (0): DefaultErrorThreshold. Negative is an error.
	ErrorThreshold time.Duration
}

// Readiness is a readiness check over a Registry: it fails until every
// registered informer and handler has synced, while an informer's errors
// have gone on for longer than ReadinessOptions.ErrorThreshold, and for a
// stopped informer. It passes again once the errors stop. Use it as an
// http.Handler (200 "ok", or 503 with the reasons) or as a healthz-style
// checker (Name and Check).
type Readiness struct {
	reg       *Registry
	name      string
	threshold time.Duration
}

// NewReadiness returns a readiness check over r. It fails for a nil r and
// a negative ErrorThreshold.
func NewReadiness(r *Registry, opts ReadinessOptions) (*Readiness, error) {
	if r == nil {
		return nil, fmt.Errorf("NewReadiness: %w", ErrNilRegistry)
	}
	if opts.ErrorThreshold < 0 {
		return nil, fmt.Errorf("%w: ErrorThreshold %v is negative", ErrInvalidOptions, opts.ErrorThreshold)
	}
	c := &Readiness{reg: r, name: opts.Name, threshold: opts.ErrorThreshold}
	if c.name == "" {
		c.name = "informers"
	}
	if c.threshold == 0 {
		c.threshold = DefaultErrorThreshold
	}
	return c, nil
}

// NotReadyError is the error of a failed check: one reason per informer or
// handler that is not ready, such as
// `informer "secrets": failing since 2026-01-02T15:04:05Z (3m0s): list: Forbidden (403): secrets is forbidden: ...`.
// Each error is the text of ErrorStatus.Text.
type NotReadyError struct {
	// Reasons are the lines of the report, in registration order.
	Reasons []string
}

func (e *NotReadyError) Error() string {
	return "not ready: " + strings.Join(e.Reasons, "; ")
}

// Name returns the check's name.
func (c *Readiness) Name() string { return c.name }

// Check returns nil when every informer is ready, else a *NotReadyError
// saying why. The request is not used; it is there for healthz-style
// checker interfaces.
func (c *Readiness) Check(*http.Request) error {
	return c.check(c.reg.Snapshot())
}

func (c *Readiness) check(s Snapshot) error {
	var reasons []string
	for _, is := range s.Informers {
		reasons = append(reasons, c.problems(s.Time, is)...)
	}
	for _, cs := range s.Controllers {
		reasons = append(reasons, controllerProblems(cs)...)
	}
	if len(reasons) == 0 {
		return nil
	}
	return &NotReadyError{Reasons: reasons}
}

// problems are the reasons why one informer is not ready.
func (c *Readiness) problems(now time.Time, is InformerStatus) []string {
	var out []string
	name := fmt.Sprintf("informer %q", is.Name)
	switch {
	case is.Stopped:
		out = append(out, name+": stopped")
	case !is.Synced:
		msg := name + ": not synced"
		if is.Error != nil {
			msg += fmt.Sprintf(": failing since %s: %s", stamp(is.Error.Since), is.Error.Text)
		}
		out = append(out, msg)
	case is.Error != nil && now.Sub(is.Error.Since) > c.threshold:
		out = append(out, fmt.Sprintf("%s: failing since %s (%v, threshold %v): %s", name,
			stamp(is.Error.Since), now.Sub(is.Error.Since).Round(time.Second), c.threshold, is.Error.Text))
	}
	if is.Stopped {
		return out
	}
	for _, h := range is.Handlers {
		if !h.Synced {
			out = append(out, fmt.Sprintf("%s: handler %q not synced (%d pending)", name, h.Name, h.Pending))
		}
	}
	return out
}

// controllerProblems are the reasons why a controller is not ready.
func controllerProblems(cs ControllerStatus) []string {
	name := fmt.Sprintf("controller %q", cs.Name)
	switch {
	case cs.Stopped:
		return []string{name + ": stopped"}
	case !cs.Started:
		return []string{name + ": waiting for its caches to sync"}
	}
	return nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// ServeHTTP answers 200 with "ok", or 503 with one reason a line. With the
// query parameter verbose it lists every informer, "[+]name ok" or
// "[-]name" and the reasons, as Kubernetes' health endpoints do. It answers
// GET and HEAD, and any other method with 405 and an Allow header.
func (c *Readiness) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s := c.reg.Snapshot()
	var b strings.Builder
	ready := true
	_, verbose := req.URL.Query()["verbose"]
	for _, is := range s.Informers {
		p := c.problems(s.Time, is)
		if len(p) > 0 {
			ready = false
		}
		if !verbose {
			for _, line := range p {
				b.WriteString(line + "\n")
			}
			continue
		}
		if len(p) == 0 {
			fmt.Fprintf(&b, "[+]%s ok\n", is.Name)
			continue
		}
		fmt.Fprintf(&b, "[-]%s\n", is.Name)
		for _, line := range p {
			b.WriteString("    " + line + "\n")
		}
	}
	for _, cs := range s.Controllers {
		p := controllerProblems(cs)
		if len(p) > 0 {
			ready = false
		}
		switch {
		case !verbose:
			for _, line := range p {
				b.WriteString(line + "\n")
			}
		case len(p) == 0:
			fmt.Fprintf(&b, "[+]controller %s ok\n", cs.Name)
		default:
			fmt.Fprintf(&b, "[-]controller %s\n    %s\n", cs.Name, p[0])
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	if ready {
		w.WriteHeader(http.StatusOK)
		if verbose {
			fmt.Fprintf(w, "%s%s check passed\n", b.String(), c.name)
			return
		}
		fmt.Fprintln(w, "ok")
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintf(w, "%s%s check failed\n", b.String(), c.name)
}

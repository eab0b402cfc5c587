package httpinfo

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"mime"
	"net/http"
	"strings"
	"time"
)

//go:embed page.html
var pageHTML string

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"stamp": stamp,
	"ago":   func(now, t time.Time) string { return roundAge(now.Sub(t)) },
	"deref": func(p *int64) int64 { return *p },
	"bytes": humanBytes,
	"secs":  seconds,
	"lastEvent": func(is InformerStatus) string {
		if is.LastEventAgeSeconds != nil {
			return roundAge(time.Duration(*is.LastEventAgeSeconds*float64(time.Second))) + " ago"
		}
		return "none yet"
	},
}).Parse(pageHTML))

// roundAge rounds an age to what a person reads: seconds, or less below one.
func roundAge(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// PageOptions configures NewPage. The zero value is ready to use.
type PageOptions struct {
	// Title heads the HTML page. Default: "Informers".
	Title string
	// Readiness, if set, is checked on every request: the page and the
	// JSON then say whether the program is ready and why not.
	// Default: nil, no verdict.
	Readiness *Readiness
	// Refresh, if positive, makes browsers reload the HTML page at that
	// period (a meta refresh: the page has no script). Default: 0, no
	// reload. Less than a second is an error.
	Refresh time.Duration
}

// Page is the debug page of a Registry, an http.Handler for a path such as
// /debug/informers. It answers GET and HEAD: HTML for people, and the
// registry's Snapshot as JSON for a request with the query format=json or
// an Accept header that prefers application/json to text/html. It shows
// names, counts and status, never an object's content.
type Page struct {
	reg     *Registry
	title   string
	ready   *Readiness
	refresh int // seconds
}

// NewPage returns the debug page of r. It fails for a nil r and a Refresh
// below one second.
func NewPage(r *Registry, opts PageOptions) (*Page, error) {
	if r == nil {
		return nil, fmt.Errorf("NewPage: %w", ErrNilRegistry)
	}
	if opts.Refresh < 0 || (opts.Refresh > 0 && opts.Refresh < time.Second) {
		return nil, fmt.Errorf("%w: Refresh %v is below a second", ErrInvalidOptions, opts.Refresh)
	}
	p := &Page{reg: r, title: opts.Title, ready: opts.Readiness, refresh: int(opts.Refresh / time.Second)}
	if p.title == "" {
		p.title = "Informers"
	}
	return p, nil
}

// ReadinessStatus is the readiness verdict the page adds to the snapshot
// when PageOptions.Readiness is set.
type ReadinessStatus struct {
	// Ready is whether the check passed.
	Ready bool `json:"ready"`
	// Reasons say why it did not (NotReadyError.Reasons).
	Reasons []string `json:"reasons,omitempty"`
}

// pageData is what the template and the JSON get.
type pageData struct {
	Snapshot
	Readiness *ReadinessStatus `json:"readiness,omitempty"`
	Title     string           `json:"-"`
	Refresh   int              `json:"-"`
}

// ServeHTTP serves the page, or its JSON.
func (p *Page) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	d := pageData{Snapshot: p.reg.Snapshot(), Title: p.title, Refresh: p.refresh}
	if p.ready != nil {
		rs := &ReadinessStatus{Ready: true}
		var nre *NotReadyError
		if err := p.ready.check(d.Snapshot); errors.As(err, &nre) {
			rs.Ready, rs.Reasons = false, nre.Reasons
		}
		d.Readiness = rs
	}
	var buf bytes.Buffer
	if wantsJSON(req) {
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			http.Error(w, "encode: "+err.Error(), http.StatusInternalServerError)
			return
		}
		h.Set("Content-Type", "application/json")
	} else {
		if err := pageTemplate.Execute(&buf, d); err != nil {
			http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
			return
		}
		h.Set("Content-Type", "text/html; charset=utf-8")
		// No script, no frames, no requests to anywhere else.
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
		h.Set("Referrer-Policy", "no-referrer")
	}
	h.Set("Content-Length", fmt.Sprint(buf.Len()))
	w.WriteHeader(http.StatusOK)
	if req.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// wantsJSON reports a request for JSON: format=json, or an Accept header
// naming application/json before (or without) text/html.
func wantsJSON(req *http.Request) bool {
	switch req.URL.Query().Get("format") {
	case "json":
		return true
	case "html":
		return false
	}
	best, bestQ := "", -1.0
	for _, part := range strings.Split(req.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || (mt != "application/json" && mt != "text/html") {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if _, err := fmt.Sscan(v, &q); err != nil {
				continue
			}
		}
		if q > bestQ {
			best, bestQ = mt, q
		}
	}
	return best == "application/json"
}

// humanBytes writes n bytes as people read them: "512 B", "3.4 KiB",
// "1.2 GiB".
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n), -1
	for f >= unit && i < 4 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", f, "KMGTP"[i])
}

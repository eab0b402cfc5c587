// Command report reads the output of `go test -bench` for the benchmarks
// of internal/bench (one or more runs of each, as with -count) and prints
// one line per figure, last:
//
//	<figure> ours=<v> client-go=<v> ratio=<ours/client-go> target=<t> met|MISSED
//
// with medians over the runs. With -svg it draws the ratios as a chart,
// and with -md it rewrites the generated part of a Markdown file (between
// the markers <!-- bench:begin --> and <!-- bench:end -->) with the
// machine, the command, the table and the chart.
//
//	go run ./internal/bench/report -svg docs/benchmarks.svg -md docs/benchmarks.md docs/benchmarks.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	svgPath := flag.String("svg", "", "write the chart to this SVG file")
	mdPath := flag.String("md", "", "rewrite the generated part of this Markdown file")
	command := flag.String("command", "make bench", "the command that produced the input, for the Markdown")
	flag.Parse()
	if err := run(flag.Args(), *svgPath, *mdPath, *command, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(inputs []string, svgPath, mdPath, command string, out io.Writer) error {
	if len(inputs) == 0 {
		return fmt.Errorf("no input: give the files `go test -bench` wrote")
	}
	res := newResults()
	for _, in := range inputs {
		f, err := os.Open(in)
		if err != nil {
			return err
		}
		err = res.parse(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", in, err)
		}
	}
	lines := evaluate(res)
	if svgPath != "" {
		if err := os.WriteFile(svgPath, []byte(chart(lines)), 0o644); err != nil {
			return err
		}
	}
	if mdPath != "" {
		if err := rewriteMarkdown(mdPath, markdown(res, lines, command, svgPath, inputs)); err != nil {
			return err
		}
	}
	for _, f := range floors {
		if v, ok := f.value(res); ok {
			fmt.Fprintf(out, "%s %s=%s\n", f.name, f.label(), format(v))
		}
	}
	for _, l := range lines {
		fmt.Fprintln(out, l.String())
	}
	return nil
}

// results holds every value of every metric of every benchmark.
type results struct {
	values map[string]map[string][]float64 // benchmark -> unit -> runs
	meta   map[string]string               // goos, goarch, pkg, cpu
}

func newResults() *results {
	return &results{values: map[string]map[string][]float64{}, meta: map[string]string{}}
}

// procsSuffix is the -GOMAXPROCS suffix go test appends to names.
var procsSuffix = regexp.MustCompile(`-\d+$`)

// parse reads benchmark lines: a name, the iteration count, then value
// and unit pairs.
func (r *results) parse(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if k, v, ok := strings.Cut(line, ": "); ok && !strings.Contains(k, " ") && !strings.HasPrefix(k, "Benchmark") {
			r.meta[k] = v
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") || len(fields)%2 != 0 {
			continue
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			continue
		}
		name := procsSuffix.ReplaceAllString(fields[0], "")
		m := r.values[name]
		if m == nil {
			m = map[string][]float64{}
			r.values[name] = m
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return fmt.Errorf("%q: %w", line, err)
			}
			m[fields[i+1]] = append(m[fields[i+1]], v)
		}
	}
	return sc.Err()
}

func (r *results) runs(bench, unit string) []float64 { return r.values[bench][unit] }

func (r *results) median(bench, unit string) (float64, bool) {
	v := r.runs(bench, unit)
	if len(v) == 0 {
		return 0, false
	}
	return median(v), true
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// line is one evaluated figure.
type line struct {
	figure
	ours, theirs float64 // medians (for speedup: ours' rate at bench and at alt)
	ratio        float64 // the median of the rounds' ratios
	worst        float64 // the worst round's ratio (or value), when figure.worst
	extra        float64 // ours' median of figure.extra
	runs         int
	missing      string // what is missing, if the figure could not be computed
}

// met reports whether the target holds; true if there is none.
func (l line) met() bool {
	if l.target == 0 || l.missing != "" {
		return l.target == 0 && l.missing == ""
	}
	v := l.ratio
	if l.kind == absolute {
		v = l.ours
	}
	if l.figure.worst {
		v = l.worst
	}
	switch l.kind {
	case throughput, speedup:
		return v >= l.target
	default:
		return v <= l.target
	}
}

// advantage is how many times better than client-go ours is, and the
// target in the same terms, for the chart: the ratio for rates, its
// inverse for costs. Absolute figures are not drawn.
func (l line) advantage() (v, target float64, ok bool) {
	switch {
	case l.missing != "" || l.kind == absolute:
		return 0, 0, false
	case l.kind == cost:
		t := 0.0
		if l.target != 0 {
			t = 1 / l.target
		}
		return 1 / l.ratio, t, true
	}
	return l.ratio, l.target, true
}

func (l line) String() string {
	if l.missing != "" {
		return fmt.Sprintf("%s missing: %s", l.name, l.missing)
	}
	var b strings.Builder
	switch l.kind {
	case speedup:
		fmt.Fprintf(&b, "%s ours=%s client-go=- ratio=%.3g (%s at %s / at %s)", l.name, format(l.ratio), l.ratio,
			l.unit, strings.TrimPrefix(l.alt, "Benchmark"), strings.TrimPrefix(l.bench, "Benchmark"))
	default:
		fmt.Fprintf(&b, "%s ours=%s client-go=%s ratio=%.3g (%s)", l.name, format(l.ours), format(l.theirs), l.ratio, l.unit)
	}
	if l.figure.worst {
		fmt.Fprintf(&b, " worst-round=%.3g", l.worst)
	}
	if l.figure.extra != "" {
		fmt.Fprintf(&b, " %s=%s", l.figure.extra, format(l.extra))
	}
	if l.setting != "" {
		fmt.Fprintf(&b, " setting=%q", l.setting)
	}
	if l.target != 0 {
		op := "<="
		if l.kind == throughput || l.kind == speedup {
			op = ">="
		}
		what := "ratio"
		if l.kind == absolute {
			what = "ours"
		}
		verdict := "met"
		if !l.met() {
			verdict = "MISSED"
		}
		fmt.Fprintf(&b, " target=%s%s%g %s", what, op, l.target, verdict)
	}
	fmt.Fprintf(&b, " runs=%d", l.runs)
	return b.String()
}

func evaluate(r *results) []line {
	var out []line
	for _, f := range figures {
		out = append(out, evaluateOne(r, f))
	}
	return out
}

func evaluateOne(r *results, f figure) line {
	l := line{figure: f}
	oursName, theirsName := f.bench+"/impl=ours", f.bench+"/impl=client-go"
	if f.theirs != "" {
		theirsName = f.theirs + "/impl=client-go"
	}
	if f.kind == speedup {
		theirsName = f.alt + "/impl=ours"
	}
	ours, theirs := r.runs(oursName, f.unit), r.runs(theirsName, f.unit)
	switch {
	case len(ours) == 0:
		l.missing = oursName + " " + f.unit
		return l
	case len(theirs) == 0 && f.kind != absolute:
		l.missing = theirsName + " " + f.unit
		return l
	}
	l.runs = len(ours)
	l.ours = median(ours)
	if f.extra != "" {
		l.extra, _ = r.median(oursName, f.extra)
	}
	if len(theirs) > 0 {
		l.theirs = median(theirs)
		l.ratio = pairedRatio(ours, theirs)
	}
	if f.kind == speedup {
		l.ours, l.theirs = l.theirs, l.ours // at alt, at bench
		l.ratio = pairedRatio(theirs, ours)
	}
	if f.worst {
		l.worst = worstRun(f, ours, theirs)
	}
	return l
}

// pairedRatio is the median of the rounds' ratios a[i]/b[i]: run i of
// each side is of the same round (hack/bench.sh runs every benchmark once
// per side per round), so a round's ratio compares what ran under the
// same conditions. Runs that do not pair up (a side has more) fall back
// to the ratio of the medians.
func pairedRatio(a, b []float64) float64 {
	if len(a) != len(b) {
		return median(a) / median(b)
	}
	rs := make([]float64, len(a))
	for i := range a {
		rs[i] = a[i] / b[i]
	}
	return median(rs)
}

// worstRun pairs the runs of both sides by round and returns the worst
// round's ratio, or, for absolute figures, ours' worst value.
func worstRun(f figure, ours, theirs []float64) float64 {
	if f.kind == absolute {
		return slices.Max(ours) // every absolute target is an upper bound
	}
	n := min(len(ours), len(theirs))
	worst := 0.0
	for i := range n {
		r := ours[i] / theirs[i]
		if i == 0 || (f.kind == throughput && r < worst) || (f.kind != throughput && r > worst) {
			worst = r
		}
	}
	return worst
}

// format prints v with three significant digits, large values grouped.
func format(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 3, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

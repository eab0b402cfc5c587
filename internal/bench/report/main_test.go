package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/typedinformer/informer/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

const sample = `goos: linux
goarch: amd64
cpu: Test CPU
BenchmarkWatch/handlers=1/impl=ours-2        100  500 ns/op  2000000 events/s  0 B/op  0 allocs/op
BenchmarkWatch/handlers=1/impl=client-go-2   100  2500 ns/op  400000 events/s  896 B/op  12 allocs/op
BenchmarkWatch/handlers=1/impl=ours-2        100  600 ns/op  1000000 events/s  0 B/op  2 allocs/op
BenchmarkWatch/handlers=1/impl=client-go-2   100  2500 ns/op  400000 events/s  896 B/op  12 allocs/op
BenchmarkWatch/handlers=1/impl=ours-2        100  550 ns/op  3000000 events/s  0 B/op  0 allocs/op
BenchmarkWatch/handlers=1/impl=client-go-2   100  2500 ns/op  400000 events/s  896 B/op  12 allocs/op
BenchmarkLister/labels=deployment/query=get/impl=ours-2        100  40 ns/op
BenchmarkLister/labels=deployment/query=get/impl=client-go-2   100  80 ns/op
BenchmarkWireParallel/procs=1/impl=ours      100  1 ns/op  1000 events/s
BenchmarkWireParallel/procs=2/impl=ours-2    100  1 ns/op  1500 events/s
`

func find(t *testing.T, lines []line, name string) line {
	t.Helper()
	for _, l := range lines {
		if l.name == name {
			return l
		}
	}
	t.Fatalf("no figure %q", name)
	return line{}
}

// TestEvaluate: medians, ratios, worst runs and verdicts from a known
// input.
func TestEvaluate(t *testing.T) {
	r := newResults()
	if err := r.parse(strings.NewReader(sample)); err != nil {
		t.Fatal(err)
	}
	lines := evaluate(r)
	type got struct {
		Ours, Theirs, Ratio, Worst float64
		Met                        bool
	}
	for _, tc := range []struct {
		name string
		want got
	}{
		// medians 2M vs 400k: 5x; the worst run (1M) is 2.5x: missed.
		{"watch-1-handler", got{Ours: 2e6, Theirs: 4e5, Ratio: 5, Worst: 2.5, Met: false}},
		// one run had 2 allocs: the worst run breaks the bound of 1.
		{"watch-1-handler-allocs", got{Ours: 0, Theirs: 12, Ratio: 0, Worst: 2, Met: false}},
		{"get-deployment", got{Ours: 40, Theirs: 80, Ratio: 0.5, Met: true}},
		// 1500 / 1000 events/s: 1.5x, below 1.6x.
		{"wire-json-parallel-speedup", got{Ours: 1500, Theirs: 1000, Ratio: 1.5, Met: false}},
	} {
		l := find(t, lines, tc.name)
		g := got{Ours: l.ours, Theirs: l.theirs, Ratio: l.ratio, Worst: l.worst, Met: l.met()}
		if diff := cmp.Diff(tc.want, g); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if l := find(t, lines, "heap-per-pod-both-drop"); l.missing == "" || l.met() {
		t.Errorf("heap-per-pod-both-drop has no input but is %+v", l)
	}
}

// TestPairedRatio: a ratio is the median of the rounds' ratios, not the
// ratio of the medians: one slow round of both sides moves neither.
func TestPairedRatio(t *testing.T) {
	for _, tc := range []struct {
		ours, theirs []float64
		want         float64
	}{
		// rounds 1, 1 and 3: the median is 1; the medians' ratio is 3.
		{[]float64{1, 10, 3}, []float64{1, 10, 1}, 1},
		{[]float64{2, 4, 6, 8}, []float64{1, 1, 1, 1}, 5},
		// unpaired: the medians' ratio.
		{[]float64{1, 10, 3}, []float64{1, 1}, 3},
	} {
		if got := pairedRatio(tc.ours, tc.theirs); got != tc.want {
			t.Errorf("pairedRatio(%v, %v) = %v, want %v", tc.ours, tc.theirs, got, tc.want)
		}
	}
}

// TestFloors: a floor is its benchmark's median; a speed-up floor divides
// the medians of its two benchmarks and is printed as a speed-up.
func TestFloors(t *testing.T) {
	r := newResults()
	in := `BenchmarkHandoff/kind=ping-pong-2  100  300 ns/op
BenchmarkHandoff/kind=ping-pong-2  100  200 ns/op
BenchmarkHandoff/kind=ping-pong-2  100  250 ns/op
BenchmarkDecodeSpread/procs=1      100  1 ns/op  1000 events/s
BenchmarkDecodeSpread/procs=2-2    100  1 ns/op  1800 events/s
`
	if err := r.parse(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range floors {
		if v, ok := f.value(r); ok {
			got[f.name] = f.label() + "=" + format(v)
		}
	}
	want := map[string]string{"floor-goroutine-round-trip": "ns/op=250", "ceiling-decode-spread-speedup": "speedup=1.8"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("floors (-want +got):\n%s", diff)
	}
}

// TestRun: the report prints one line per figure, writes the chart and
// keeps the hand-written part of the Markdown.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "raw.txt")
	md := filepath.Join(dir, "b.md")
	svg := filepath.Join(dir, "b.svg")
	if err := os.WriteFile(in, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(md, []byte("# Benchmarks\n\nprose\n\n"+beginMarker+"\nold\n"+endMarker+"\n\nmore prose\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{in}, svg, md, "make bench", &out); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	if want := len(figures); len(got) != want {
		t.Errorf("printed %d lines, want %d:\n%s", len(got), want, out.String())
	}
	if !strings.Contains(out.String(), "\nget-deployment ours=40 client-go=80 ratio=0.5 ") {
		t.Errorf("no get-deployment line in:\n%s", out.String())
	}
	page, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"prose\n", "more prose\n", "| get-deployment | a Deployment's pods: a label set per ReplicaSet of 20 | ns/op | 40 | 80 | 0.5 | ratio ≤ 1 | met |", "Test CPU"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("markdown lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(string(page), "\nold\n") {
		t.Errorf("markdown kept the old generated part:\n%s", page)
	}
	chart, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(chart, []byte("<svg")) || !bytes.Contains(chart, []byte(">get-deployment<")) {
		t.Errorf("chart lacks its rows:\n%s", chart)
	}
}

// TestDefaultsRow: a "defaults vs defaults" row pairs ours' benchmark with
// another of client-go's, and the settings are printed with the line.
func TestDefaultsRow(t *testing.T) {
	r := newResults()
	in := `BenchmarkHeapPerPod/labels=deployment/mf=drop/impl=ours-2       1  1 ns/op  6000 B/pod
BenchmarkHeapPerPod/labels=deployment/mf=drop/impl=client-go-2  1  1 ns/op  8000 B/pod
BenchmarkHeapPerPod/labels=deployment/mf=keep/impl=client-go-2  1  1 ns/op  12000 B/pod
`
	if err := r.parse(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	lines := evaluate(r)
	if l := find(t, lines, "heap-per-pod-defaults"); l.ratio != 0.5 {
		t.Errorf("defaults row: ratio %v, want 0.5 (6000 / 12000)", l.ratio)
	}
	l := find(t, lines, "heap-per-pod-both-drop")
	if l.ratio != 0.75 || !strings.Contains(l.String(), `setting="both drop managedFields`) {
		t.Errorf("equal-settings row: %s", l)
	}
}

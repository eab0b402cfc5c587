package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Chart geometry: a label column, then bars on a log scale from
// chartMin to chartMax times client-go.
const (
	labelWidth = 290
	barWidth   = 560
	rowHeight  = 22
	topMargin  = 46
	chartMin   = 0.1
	chartMax   = 100
)

func xOf(v float64) float64 {
	v = math.Min(math.Max(v, chartMin), chartMax)
	span := math.Log10(chartMax) - math.Log10(chartMin)
	return labelWidth + (math.Log10(v)-math.Log10(chartMin))/span*barWidth
}

// chart draws each comparative figure as a bar from parity (1x) to how
// many times better than client-go ours is, on a log scale, with its
// target as a tick: green where the target is met, orange where not.
func chart(lines []line) string {
	var rows []line
	for _, l := range lines {
		if _, _, ok := l.advantage(); ok {
			rows = append(rows, l)
		}
	}
	height := topMargin + rowHeight*len(rows) + 40
	width := labelWidth + barWidth + 90
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14" font-weight="bold">How many times better than client-go (log scale; tick = target)</text>`+"\n")
	bottom := topMargin + rowHeight*len(rows)
	for _, v := range []float64{0.1, 0.3, 1, 3, 10, 30, 100} {
		x := xOf(v)
		stroke, w := "#ddd", 1
		if v == 1 {
			stroke, w = "#444", 2
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="%d"/>`+"\n", x, topMargin-6, x, bottom, stroke, w)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#444">%gx</text>`+"\n", x, bottom+16, v)
	}
	for i, l := range rows {
		v, target, _ := l.advantage()
		y := topMargin + i*rowHeight
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelWidth-8, y+14, html.EscapeString(l.name))
		x0, x1 := xOf(1), xOf(v)
		color := "#2e8b57"
		if !l.met() {
			color = "#d2691e"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", math.Min(x0, x1), y+3, math.Abs(x1-x0), rowHeight-6, color)
		if target != 0 {
			tx := xOf(target)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black" stroke-width="2"/>`+"\n", tx, y+1, tx, y+rowHeight-1)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#222">%.2gx</text>`+"\n", math.Max(x0, x1)+4, y+14, v)
	}
	fmt.Fprintf(&b, `<text x="10" y="%d" fill="#444">Bars right of 1x: ours is ahead (rates: ours/client-go; costs: client-go/ours). Speed-up: ours at 2 cores / at 1.</text>`+"\n", bottom+34)
	b.WriteString("</svg>\n")
	return b.String()
}

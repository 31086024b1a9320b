package main

import (
	"bytes"
	"fmt"
	"html"

	"github.com/warden-go/warden/bench/internal/bench"
)

// bar is one library's median throughput in one workload.
type bar struct {
	name  string
	value float64
	ratio float64 // to warden's
}

// panel is one workload's bars.
type panel struct {
	title, unit string
	bars        []bar
}

// panels returns a chart panel for each throughput workload that ran.
func (r report) panels() []panel {
	var ps []panel
	for _, w := range []byte(r.workloads) {
		switch w {
		case 'a', 'b':
			runs := r.res.throughput[w]
			p := panel{title: "(a) uncontended lock+unlock, 1 goroutine", unit: "pairs/s"}
			if w == 'b' {
				p.title = fmt.Sprintf("(b) %d goroutines, %d names, lock+unlock", parallelGoroutines, parallelGoroutines)
			}
			for _, name := range r.names(func(n string) bool { return len(runs[n]) > 0 }) {
				p.bars = append(p.bars, bar{name, median(runs[name], bench.Throughput.PerSecond),
					ratioMedian(runs[name], runs[bench.Warden], bench.Throughput.PerSecond)})
			}
			ps = append(ps, p)
		case 'c':
			runs := r.res.contention
			p := panel{title: fmt.Sprintf("(c) %d goroutines, one name, %v critical section", contendedGoroutines, r.cfg.critical), unit: "acquisitions/s"}
			for _, name := range r.names(func(n string) bool { return len(runs[n]) > 0 }) {
				p.bars = append(p.bars, bar{name, median(runs[name], bench.Contention.PerSecond),
					ratioMedian(runs[name], runs[bench.Warden], bench.Contention.PerSecond)})
			}
			ps = append(ps, p)
		}
	}
	return ps
}

// colors gives each library the same color in every panel.
func color(name string) string {
	switch name {
	case bench.Warden:
		return "#2b6cb0"
	case bench.Redsync:
		return "#dd6b20"
	case bench.RedsyncDefaults:
		return "#f6ad55"
	case bench.Redislock:
		return "#38a169"
	case bench.Textbook:
		return "#805ad5"
	case bench.Rueidislock:
		return "#d53f8c"
	case bench.RedissonBare:
		return "#718096"
	case bench.WardenBare:
		return "#90cdf4"
	default:
		return "#a0aec0"
	}
}

// svg draws one horizontal bar chart per throughput workload, each on its
// own scale, with every bar's median and its ratio to warden.
func (r report) svg() []byte {
	const (
		width    = 820
		left     = 150 // library names
		right    = 190 // value labels
		barH     = 18
		gap      = 6
		panelTop = 28
		panelGap = 22
	)
	ps := r.panels()
	height := 64
	for _, p := range ps {
		height += panelTop + len(p.bars)*(barH+gap) + panelGap
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="12" y="22" font-size="15" font-weight="bold">%s</text>`+"\n",
		html.EscapeString(fmt.Sprintf("warden and its peers, same Redis, median of %d runs (higher is better)", r.cfg.runs)))
	fmt.Fprintf(&b, `<text x="12" y="40" font-size="11" fill="#4a5568">%s</text>`+"\n", html.EscapeString(r.machine.String()))
	y := 64
	for _, p := range ps {
		fmt.Fprintf(&b, `<text x="12" y="%d" font-weight="bold">%s</text>`+"\n", y+14, html.EscapeString(p.title+" — "+p.unit))
		y += panelTop
		top := 0.0
		for _, br := range p.bars {
			top = max(top, br.value)
		}
		for _, br := range p.bars {
			w := 0.0
			if top > 0 {
				w = br.value / top * (width - left - right)
			}
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+barH-5, html.EscapeString(br.name))
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", left, y, w, barH, color(br.name))
			label := count(br.value)
			if br.name != bench.Warden && br.ratio > 0 {
				label += fmt.Sprintf("  (%.2f× warden)", br.ratio)
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", float64(left)+w+6, y+barH-5, html.EscapeString(label))
			y += barH + gap
		}
		y += panelGap
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

package sim

import (
	"bytes"
	"cmp"
	"fmt"
	"html"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/warden-go/warden/messages"
)

// WriteTimeline writes h as one self-contained HTML page (inline CSS and
// SVG, no script, nothing fetched): a header with the seed, the number of
// clients, the run's length and the counts of operations, holds, faults
// and violations; a time axis in simulation time; one row per owner,
// grouped by client and labelled "client N / owner", with each Hold a bar
// from From to To coloured by its lock (a legend maps colours to name and
// kind) and drawn by how it ended (released: plain; lost: red dashed with a
// cross; crashed: black with a square; run end: dotted with a chevron;
// expired, a permit's lease: dashed with a bar), its details, fencing
// token and lease in its tooltip; a count-down latch's operations on their
// owners' rows in its colour (an await a thin bar from its call to its
// answer, a count-down a small triangle) and its count's sets on the redis
// row; a MultiLock's acquire as a thin dark bar under its owner's row from
// its call to its answer, and the set it held as a dashed frame around its
// member holds from its answer until its owner began releasing it (each
// member hold is a bar like any other); faults on the rows of the
// client they hit (a band for those that last, a vertical marker for
// instant ones) and Redis-wide faults (Client < 0) on a row of their own
// and across all rows (latency, which lasts the whole run, only on its row);
// a user workload's events (History.Events) as dark diamonds at the foot
// of their rows (the process's row of the event's Owner, else its first
// row) and its log appends (History.Log) as grey squares on the process's
// first row, each with its details in a tooltip; violations as red markers
// at their time (orange when excused) with their text in a tooltip and in a
// table under the chart, then the events and the log (when there are any)
// and the list of faults.
//
// The output depends only on its input: the same history and violations
// give the same bytes. Nothing is written if the page cannot be built; an
// error is the writer's.
func WriteTimeline(w io.Writer, h *History, violations []Violation) error {
	if h == nil {
		h = &History{}
	}
	var b bytes.Buffer
	tlNew(h, violations).render(&b)
	_, err := w.Write(b.Bytes())
	return err
}

const (
	tlLabelW   = 250.0 // the label column
	tlAxisH    = 34.0  // the time axis above the rows
	tlTopRowH  = 22.0  // the violations and redis rows
	tlLaneH    = 14.0  // one lane of holds
	tlRowPad   = 8.0   // vertical padding of an owner row
	tlGroupGap = 4.0   // space between clients
	tlPadL     = 12.0
	tlPadR     = 28.0
	tlMinW     = 1200.0
	tlMaxW     = 16000.0
)

// tlLockPalette colours the first locks (no red: red marks trouble); later
// ones take golden-angle hues.
var tlLockPalette = [...]string{
	"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948",
	"#9c755f", "#ff9da7", "#86bcb6", "#a0cbe8", "#d37295", "#bab0ac",
}

type tlLock struct {
	name  string
	kind  messages.Kind
	color string
	holds int
}

type tlRow struct {
	client int
	owner  string // "" for a client without owners
	label  string
	y, h   float64
	holds  []int // indexes into History.Holds, by From
	lane   []int // lane of each of holds
	ops    []int // indexes into History.Ops: the owner's latch operations
	multis []int // indexes into History.Multis: the owner's MultiLocks
	events []int // indexes into History.Events: a user workload's events
	logs   []int // indexes into History.Log: the process's appends (first row)
}

type tlGroup struct {
	client int
	rows   []int
	y0, y1 float64
}

type tlViolation struct {
	Violation
	n int // 1-based number in the table
}

type tlChart struct {
	h          *History
	violations []tlViolation
	locks      []tlLock
	rows       []tlRow
	groups     []tlGroup
	span       time.Duration
	plotW      float64
	height     float64
	violY      float64 // top of the violations row
	redisY     float64 // top of the redis row
	rowsY      float64 // top of the first client group
}

func tlNew(h *History, violations []Violation) *tlChart {
	t := &tlChart{h: h}

	// Violations, numbered by time.
	for _, v := range violations {
		t.violations = append(t.violations, tlViolation{Violation: v})
	}
	slices.SortStableFunc(t.violations, func(a, b tlViolation) int { return cmp.Compare(a.At, b.At) })
	for i := range t.violations {
		t.violations[i].n = i + 1
	}

	// The time span.
	t.span = h.Length
	for _, op := range h.Ops {
		t.span = max(t.span, op.Call, op.Return)
	}
	for _, m := range h.Multis {
		t.span = max(t.span, m.Call, m.Return, m.Until, m.Done)
	}
	for _, hd := range h.Holds {
		t.span = max(t.span, hd.From, hd.To)
	}
	for _, f := range h.Faults {
		t.span = max(t.span, f.From, f.To)
	}
	for _, e := range h.Events {
		t.span = max(t.span, e.At)
	}
	for _, l := range h.Log {
		t.span = max(t.span, l.At)
	}
	for _, v := range violations {
		t.span = max(t.span, v.At)
	}
	if t.span <= 0 {
		t.span = time.Millisecond
	}

	// Locks, by name then kind.
	type lockKey struct {
		name string
		kind messages.Kind
	}
	lockIndex := map[lockKey]int{}
	for _, hd := range h.Holds {
		k := lockKey{hd.Name, hd.Kind}
		if _, ok := lockIndex[k]; !ok {
			lockIndex[k] = len(t.locks)
			t.locks = append(t.locks, tlLock{name: hd.Name, kind: hd.Kind})
		}
		t.locks[lockIndex[k]].holds++
	}
	for _, op := range h.Ops {
		if op.Kind != messages.KindCountDownLatch {
			continue
		}
		k := lockKey{op.Name, op.Kind}
		if _, ok := lockIndex[k]; !ok {
			lockIndex[k] = len(t.locks)
			t.locks = append(t.locks, tlLock{name: op.Name, kind: op.Kind})
		}
		t.locks[lockIndex[k]].holds++ // a latch's operations: nobody holds it
	}
	slices.SortFunc(t.locks, func(a, b tlLock) int {
		return cmp.Or(strings.Compare(a.name, b.name), cmp.Compare(a.kind, b.kind))
	})
	for i := range t.locks {
		t.locks[i].color = tlLockColor(i)
		lockIndex[lockKey{t.locks[i].name, t.locks[i].kind}] = i
	}

	// Clients and their owners.
	type ownerKey struct {
		client int
		owner  string
	}
	seenClient := map[int]bool{}
	var clients []int
	addClient := func(c int) {
		if c >= 0 && !seenClient[c] {
			seenClient[c] = true
			clients = append(clients, c)
		}
	}
	for c := 0; c < h.Clients; c++ {
		addClient(c)
	}
	seenOwner := map[ownerKey]bool{}
	var owners []ownerKey
	addOwner := func(c int, o string) {
		addClient(c)
		k := ownerKey{c, o}
		if o != "" && !seenOwner[k] {
			seenOwner[k] = true
			owners = append(owners, k)
		}
	}
	for _, op := range h.Ops {
		addOwner(op.Client, op.Owner)
	}
	for _, hd := range h.Holds {
		addOwner(hd.Client, hd.Owner)
	}
	for _, m := range h.Multis {
		addOwner(m.Client, m.Owner)
	}
	for _, e := range h.Events {
		addOwner(e.Process, e.Owner)
	}
	for _, l := range h.Log {
		addClient(l.Process)
	}
	for _, f := range h.Faults {
		addClient(f.Client)
	}
	slices.Sort(clients)
	slices.SortFunc(owners, func(a, b ownerKey) int {
		return cmp.Or(cmp.Compare(a.client, b.client), strings.Compare(a.owner, b.owner))
	})

	rowOf := map[ownerKey]int{}
	oi := 0
	for _, c := range clients {
		g := tlGroup{client: c}
		for ; oi < len(owners) && owners[oi].client == c; oi++ {
			rowOf[owners[oi]] = len(t.rows)
			g.rows = append(g.rows, len(t.rows))
			t.rows = append(t.rows, tlRow{client: c, owner: owners[oi].owner,
				label: fmt.Sprintf("client %d / %s", c, owners[oi].owner)})
		}
		if len(g.rows) == 0 {
			g.rows = append(g.rows, len(t.rows))
			t.rows = append(t.rows, tlRow{client: c, label: fmt.Sprintf("client %d", c)})
		}
		t.groups = append(t.groups, g)
	}

	// Holds into rows and lanes.
	busiest := 0
	firstRow := map[int]int{}
	for _, g := range t.groups {
		firstRow[g.client] = g.rows[0]
	}
	for i, hd := range h.Holds {
		r, ok := rowOf[ownerKey{hd.Client, hd.Owner}]
		if !ok { // no owner, or no client: the client's first row
			r, ok = firstRow[hd.Client]
		}
		if ok {
			t.rows[r].holds = append(t.rows[r].holds, i)
		}
	}
	for i, op := range h.Ops {
		if r, ok := rowOf[ownerKey{op.Client, op.Owner}]; ok && op.Kind == messages.KindCountDownLatch {
			t.rows[r].ops = append(t.rows[r].ops, i)
		}
	}
	for i, m := range h.Multis {
		if r, ok := rowOf[ownerKey{m.Client, m.Owner}]; ok {
			t.rows[r].multis = append(t.rows[r].multis, i)
		}
	}
	for i, e := range h.Events {
		r, ok := rowOf[ownerKey{e.Process, e.Owner}]
		if !ok {
			r, ok = firstRow[e.Process]
		}
		if ok {
			t.rows[r].events = append(t.rows[r].events, i)
		}
	}
	for i, l := range h.Log {
		if r, ok := firstRow[l.Process]; ok {
			t.rows[r].logs = append(t.rows[r].logs, i)
		}
	}
	for r := range t.rows {
		row := &t.rows[r]
		slices.SortStableFunc(row.holds, func(a, b int) int {
			x, y := h.Holds[a], h.Holds[b]
			return cmp.Or(cmp.Compare(x.From, y.From), cmp.Compare(x.To, y.To))
		})
		var laneEnd []time.Duration
		for _, i := range row.holds {
			hd := h.Holds[i]
			to := max(hd.To, hd.From)
			lane := slices.IndexFunc(laneEnd, func(end time.Duration) bool { return end <= hd.From })
			if lane < 0 {
				lane = len(laneEnd)
				laneEnd = append(laneEnd, to)
			}
			laneEnd[lane] = to
			row.lane = append(row.lane, lane)
		}
		row.h = float64(max(len(laneEnd), 1))*tlLaneH + tlRowPad
		busiest = max(busiest, len(row.holds))
	}

	// Geometry.
	t.plotW = min(max(tlMinW, float64(busiest)*8), tlMaxW)
	t.violY = tlAxisH
	t.redisY = t.violY + tlTopRowH
	t.rowsY = t.redisY + tlTopRowH + tlGroupGap
	y := t.rowsY
	for gi := range t.groups {
		g := &t.groups[gi]
		g.y0 = y
		for _, r := range g.rows {
			t.rows[r].y = y
			y += t.rows[r].h
		}
		g.y1 = y
		y += tlGroupGap
	}
	t.height = y + 8
	return t
}

// tlLockColor is the i-th lock's colour.
func tlLockColor(i int) string {
	if i < len(tlLockPalette) {
		return tlLockPalette[i]
	}
	hue := float64(i) * 137.508
	hue -= 360 * float64(int(hue/360))
	return "hsl(" + tlNum(hue) + ",55%,52%)"
}

// tlFaultColor colours a fault kind.
func tlFaultColor(k FaultKind) string {
	switch k {
	case FaultLatency:
		return "#7f7f7f"
	case FaultLostReply:
		return "#e07000"
	case FaultLostRequest:
		return "#c09000"
	case FaultLostMessage:
		return "#a0a000"
	case FaultPartition:
		return "#f0a000"
	case FaultCrash:
		return "#000000"
	case FaultPause:
		return "#8050c0"
	case FaultRestart:
		return "#c00070"
	case FaultClockJump:
		return "#0080c0"
	}
	return "#555555"
}

// tlInstant reports whether a fault is drawn as a marker at its From (as
// well as a band when it lasts).
func tlInstant(f Fault) bool {
	switch f.Kind {
	case FaultLostReply, FaultLostRequest, FaultLostMessage, FaultCrash, FaultRestart, FaultClockJump:
		return true
	}
	return f.To <= f.From
}

// tlEndClass is the CSS class of a hold's end.
func tlEndClass(e HoldEnd) string {
	switch e {
	case EndReleased:
		return "end-released"
	case EndLost:
		return "end-lost"
	case EndCrashed:
		return "end-crashed"
	case EndRunEnd:
		return "end-run-end"
	case EndExpired:
		return "end-expired"
	}
	return "end-other"
}

// tlClass makes s usable in a class name.
func tlClass(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	return string(b)
}

// tlNum formats a coordinate.
func tlNum(f float64) string {
	s := strconv.FormatFloat(f, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	if s == "-0" {
		s = "0"
	}
	return s
}

// tlDur formats simulation time: µs, ms or s with at most three decimals.
func tlDur(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	neg := ""
	if d < 0 {
		neg, d = "-", -d
	}
	trim := func(v float64) string {
		s := strconv.FormatFloat(v, 'f', 3, 64)
		s = strings.TrimRight(s, "0")
		return strings.TrimSuffix(s, ".")
	}
	switch {
	case d < time.Millisecond:
		return neg + trim(float64(d)/1e3) + "µs"
	case d < time.Second:
		return neg + trim(float64(d)/1e6) + "ms"
	default:
		return neg + trim(d.Seconds()) + "s"
	}
}

var tlEsc = html.EscapeString

// tlTable writes a section titled title with its n rows (row(i) writes
// row i), or "none".
func tlTable(b *bytes.Buffer, title string, n int, header []string, row func(i int)) {
	fmt.Fprintf(b, "<h2>%s (%d)</h2>\n", title, n)
	if n == 0 {
		b.WriteString("<p>none</p>\n")
		return
	}
	b.WriteString("<table>\n<tr>")
	for _, h := range header {
		fmt.Fprintf(b, "<th>%s</th>", h)
	}
	b.WriteString("</tr>\n")
	for i := range n {
		row(i)
	}
	b.WriteString("</table>\n")
}

func (t *tlChart) x(d time.Duration) float64 {
	return tlPadL + float64(d)/float64(t.span)*t.plotW
}

// tickStep is a 1-2-5 step giving about one tick per 100 pixels.
func (t *tlChart) tickStep() time.Duration {
	want := float64(t.span) / (t.plotW / 100)
	for step := time.Duration(1); ; step *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if float64(step*m) >= want {
				return step * m
			}
		}
	}
}

const tlCSS = `
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:18px;margin:0 0 8px}
h2{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse}
td,th{padding:2px 8px;border-bottom:1px solid #e4e4e4;text-align:left;vertical-align:top}
th{background:#f4f4f4}
table.summary td:first-child{color:#666}
.num{text-align:right;font-variant-numeric:tabular-nums}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin:4px 0}
.legend span{white-space:nowrap}
.sw{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:middle;border:1px solid rgba(0,0,0,.3)}
.chart{display:flex;border:1px solid #ddd;margin-top:8px}
.labels{flex:none;border-right:1px solid #ddd;background:#fff}
.plot{overflow-x:auto;flex:auto}
svg text{font:11px system-ui,sans-serif;fill:#333}
.axis line{stroke:#bbb}
.grid{stroke:#eee}
.group{fill:#f7f8fa}
.group.odd{fill:#ffffff}
.sep{stroke:#e4e4e4}
.hold rect{stroke:rgba(0,0,0,.35);stroke-width:.5}
.end-lost rect{stroke:#d00000;stroke-width:1.5;stroke-dasharray:4 2}
.end-crashed rect{stroke:#000;stroke-width:1.5}
.end-run-end rect{stroke:#555;stroke-width:1;stroke-dasharray:1 2}
.mark-lost{stroke:#d00000;stroke-width:2;fill:none}
.mark-crashed{fill:#000}
.mark-run-end{stroke:#555;stroke-width:1.5;fill:none}
.end-expired rect{stroke:#555;stroke-width:1;stroke-dasharray:6 2}
.mark-expired{stroke:#555;stroke-width:2}
.latch{stroke:rgba(0,0,0,.35);stroke-width:.5}
.multi-wait{fill:#444}
.multi-held{fill:none;stroke:#222;stroke-width:1;stroke-dasharray:3 2}
.fault-band{opacity:.18}
.fault-wide.fault-band{opacity:.08}
.fault-line{stroke-width:1.5}
.fault-wide .fault-line{stroke-dasharray:3 3}
.violation line{stroke:#e00000;stroke-width:1.5;stroke-dasharray:5 3}
.violation path{fill:#e00000}
.violation.excused line{stroke:#f08000}
.violation.excused path{fill:#f08000}
.violation text{fill:#fff;font-size:9px;font-weight:bold}
tr.excused td{color:#888}
`

func (t *tlChart) render(b *bytes.Buffer) {
	h := t.h
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }

	p("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n")
	p("<title>warden simulation, seed %d</title>\n<style>%s</style>\n</head>\n<body>\n", h.Seed, tlCSS)
	p("<h1>warden simulation, seed %d</h1>\n", h.Seed)

	// Summary.
	unanswered, granted := 0, 0
	for _, op := range h.Ops {
		if op.Return < 0 {
			unanswered++
		} else if op.OK {
			granted++
		}
	}
	excused := 0
	for _, v := range t.violations {
		if v.Excused != "" {
			excused++
		}
	}
	owners := 0
	for _, r := range t.rows {
		if r.owner != "" {
			owners++
		}
	}
	p("<table class=\"summary\">\n")
	p("<tr><td>seed</td><td>%d</td></tr>\n", h.Seed)
	p("<tr><td>clients</td><td>%d (%d owners)</td></tr>\n", h.Clients, owners)
	p("<tr><td>run length</td><td>%s</td></tr>\n", tlEsc(tlDur(h.Length)))
	p("<tr><td>operations</td><td>%d (%d succeeded, %d never answered)</td></tr>\n", len(h.Ops), granted, unanswered)
	p("<tr><td>holds</td><td>%d on %d locks</td></tr>\n", len(h.Holds), len(t.locks))
	held := 0
	for _, m := range h.Multis {
		if m.OK {
			held++
		}
	}
	p("<tr><td>MultiLocks</td><td>%d acquires (%d held the set)</td></tr>\n", len(h.Multis), held)
	p("<tr><td>faults</td><td>%d</td></tr>\n", len(h.Faults))
	p("<tr><td>violations</td><td>%d (%d excused)</td></tr>\n", len(t.violations), excused)
	p("</table>\n")

	// Legends.
	p("<h2>Locks</h2>\n<div class=\"legend\">")
	if len(t.locks) == 0 {
		p("<span>no holds</span>")
	}
	for _, l := range t.locks {
		p("<span><i class=\"sw\" style=\"background:%s\"></i>%s (%s) &#183; %d</span>",
			l.color, tlEsc(l.name), tlEsc(l.kind.String()), l.holds)
	}
	p("</div>\n<div class=\"legend\">")
	for _, e := range []HoldEnd{EndReleased, EndLost, EndCrashed, EndRunEnd, EndExpired} {
		p("<span><svg width=\"46\" height=\"14\"><g class=\"hold %s\"><rect x=\"1\" y=\"2\" width=\"36\" height=\"10\" fill=\"#ccc\"/>", tlEndClass(e))
		t.endMark(b, e, 37, 2, 10)
		p("</g></svg>%s</span>", tlEsc(string(e)))
	}
	p("</div>\n<div class=\"legend\">")
	for _, k := range allFaults {
		p("<span><i class=\"sw\" style=\"background:%s\"></i>%s</span>", tlFaultColor(k), tlEsc(string(k)))
	}
	p("<span><svg width=\"40\" height=\"14\"><rect class=\"multi-wait\" x=\"1\" y=\"10\" width=\"36\" height=\"3\"/></svg>MultiLock acquire</span>")
	p("<span><svg width=\"40\" height=\"14\"><rect class=\"multi-held\" x=\"1\" y=\"1\" width=\"36\" height=\"12\"/></svg>MultiLock held</span>")
	p("<span><i class=\"sw\" style=\"background:#e00000\"></i>violation</span>")
	p("<span><i class=\"sw\" style=\"background:#f08000\"></i>excused violation</span>")
	p("</div>\n")

	// Chart.
	p("<div class=\"chart\">\n<div class=\"labels\">\n")
	t.renderLabels(b)
	p("</div>\n<div class=\"plot\">\n")
	t.renderPlot(b)
	p("</div>\n</div>\n")

	// Violations.
	tlTable(b, "Violations", len(t.violations), []string{"#", "time", "check", "lock", "what", "excused by"}, func(i int) {
		v := t.violations[i]
		class := ""
		if v.Excused != "" {
			class = " class=\"excused\""
		}
		p("<tr%s><td class=\"num\">%d</td><td class=\"num\">%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			class, v.n, tlEsc(tlDur(v.At)), tlEsc(v.Check), tlEsc(v.Name), tlEsc(v.What), tlEsc(string(v.Excused)))
	})

	// A user workload's events and log.
	if len(h.Events) > 0 || len(h.Log) > 0 {
		tlTable(b, "Events", len(h.Events), []string{"time", "process", "owner", "what", "key", "value", "token"}, func(i int) {
			e := h.Events[i]
			p("<tr><td class=\"num\">%s</td><td class=\"num\">%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"num\">%d</td></tr>\n",
				tlEsc(tlDur(e.At)), e.Process, tlEsc(e.Owner), tlEsc(e.What), tlEsc(e.Key), tlEsc(e.Value), e.Token)
		})
		tlTable(b, "Log", len(h.Log), []string{"time", "process", "entry"}, func(i int) {
			l := h.Log[i]
			p("<tr><td class=\"num\">%s</td><td class=\"num\">%d</td><td>%s</td></tr>\n",
				tlEsc(tlDur(l.At)), l.Process, tlEsc(l.Entry))
		})
	}

	// Faults.
	tlTable(b, "Faults", len(h.Faults), []string{"from", "to", "kind", "client", "detail"}, func(i int) {
		f := h.Faults[i]
		p("<tr><td class=\"num\">%s</td><td class=\"num\">%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			tlEsc(tlDur(f.From)), tlEsc(tlDur(f.To)), tlEsc(string(f.Kind)), tlEsc(tlFaultTarget(f)), tlEsc(f.Detail))
	})
	p("</body>\n</html>\n")
}

func tlFaultTarget(f Fault) string {
	if f.Client < 0 {
		return "redis"
	}
	return "client " + strconv.Itoa(f.Client)
}

// endMark draws the marker of a hold's end at x, for a bar from y of
// height hh.
func (t *tlChart) endMark(b *bytes.Buffer, e HoldEnd, x, y, hh float64) {
	mid := y + hh/2
	switch e {
	case EndLost:
		fmt.Fprintf(b, "<path class=\"mark-lost\" d=\"M%s %sL%s %sM%s %sL%s %s\"/>",
			tlNum(x-3), tlNum(mid-4), tlNum(x+4), tlNum(mid+4), tlNum(x-3), tlNum(mid+4), tlNum(x+4), tlNum(mid-4))
	case EndCrashed:
		fmt.Fprintf(b, "<rect class=\"mark-crashed\" x=\"%s\" y=\"%s\" width=\"6\" height=\"6\"/>", tlNum(x), tlNum(mid-3))
	case EndRunEnd:
		fmt.Fprintf(b, "<path class=\"mark-run-end\" d=\"M%s %sL%s %sL%s %s\"/>",
			tlNum(x+1), tlNum(mid-4), tlNum(x+5), tlNum(mid), tlNum(x+1), tlNum(mid+4))
	case EndExpired:
		fmt.Fprintf(b, "<path class=\"mark-expired\" d=\"M%s %sL%s %s\"/>", tlNum(x+2), tlNum(y-1), tlNum(x+2), tlNum(y+hh+1))
	}
}

func (t *tlChart) renderLabels(b *bytes.Buffer) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%s\" height=\"%s\">\n", tlNum(tlLabelW), tlNum(t.height))
	p("<text x=\"8\" y=\"%s\">time &#8594;</text>\n", tlNum(tlAxisH-12))
	p("<text x=\"8\" y=\"%s\">violations</text>\n", tlNum(t.violY+tlTopRowH/2+4))
	p("<text x=\"8\" y=\"%s\">redis (all clients)</text>\n", tlNum(t.redisY+tlTopRowH/2+4))
	for gi, g := range t.groups {
		t.groupBand(b, gi, g, 0, tlLabelW)
		for _, r := range g.rows {
			row := t.rows[r]
			label := row.label
			if runes := []rune(label); len(runes) > 38 {
				label = string(runes[:37]) + "…"
			}
			p("<text x=\"8\" y=\"%s\"><title>%s</title>%s</text>\n",
				tlNum(row.y+row.h/2+4), tlEsc(row.label), tlEsc(label))
		}
	}
	p("</svg>\n")
}

func (t *tlChart) groupBand(b *bytes.Buffer, gi int, g tlGroup, x, w float64) {
	odd := ""
	if gi%2 == 1 {
		odd = " odd"
	}
	fmt.Fprintf(b, "<rect class=\"group%s\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\"/>\n",
		odd, tlNum(x), tlNum(g.y0), tlNum(w), tlNum(g.y1-g.y0))
	for _, r := range g.rows[1:] {
		fmt.Fprintf(b, "<line class=\"sep\" x1=\"%s\" x2=\"%s\" y1=\"%s\" y2=\"%s\"/>\n",
			tlNum(x), tlNum(x+w), tlNum(t.rows[r].y), tlNum(t.rows[r].y))
	}
}

func (t *tlChart) renderPlot(b *bytes.Buffer) {
	h := t.h
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	width := tlPadL + t.plotW + tlPadR
	p("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%s\" height=\"%s\">\n", tlNum(width), tlNum(t.height))

	// Client bands, then the axis and its grid over them.
	for gi, g := range t.groups {
		t.groupBand(b, gi, g, 0, width)
	}
	p("<g class=\"axis\">\n<line x1=\"%s\" x2=\"%s\" y1=\"%s\" y2=\"%s\"/>\n",
		tlNum(tlPadL), tlNum(tlPadL+t.plotW), tlNum(tlAxisH-4), tlNum(tlAxisH-4))
	step := t.tickStep()
	for d := time.Duration(0); d <= t.span; d += step {
		x := tlNum(t.x(d))
		p("<line x1=\"%s\" x2=\"%s\" y1=\"%s\" y2=\"%s\"/><line class=\"grid\" x1=\"%s\" x2=\"%s\" y1=\"%s\" y2=\"%s\"/><text x=\"%s\" y=\"%s\" text-anchor=\"middle\">%s</text>\n",
			x, x, tlNum(tlAxisH-8), tlNum(tlAxisH-4), x, x, tlNum(tlAxisH), tlNum(t.height),
			x, tlNum(tlAxisH-12), tlEsc(tlDur(d)))
	}
	if h.Length > 0 {
		x := tlNum(t.x(h.Length))
		p("<line x1=\"%s\" x2=\"%s\" y1=\"%s\" y2=\"%s\" stroke=\"#888\"><title>end of the run: %s</title></line>\n",
			x, x, tlNum(tlAxisH-4), tlNum(t.height), tlEsc(tlDur(h.Length)))
	}
	p("</g>\n")

	// Faults, under the holds.
	groupOf := map[int]tlGroup{}
	for _, g := range t.groups {
		groupOf[g.client] = g
	}
	for _, f := range h.Faults {
		title := fmt.Sprintf("%s on %s at %s", f.Kind, tlFaultTarget(f), tlDur(f.From))
		if f.To > f.From {
			title += fmt.Sprintf(" until %s (%s)", tlDur(f.To), tlDur(f.To-f.From))
		}
		if f.Detail != "" {
			title += ": " + f.Detail
		}
		color := tlFaultColor(f.Kind)
		class := "fault fault-" + tlClass(string(f.Kind))
		if f.Client < 0 {
			// Its own row, and lightly across every client (but for
			// latency, which usually lasts the whole run).
			p("<g class=\"%s\"><title>%s</title>", class, tlEsc(title))
			t.faultShape(b, f, color, t.redisY+2, t.redisY+tlTopRowH-2, true)
			p("</g>\n")
			if f.Kind != FaultLatency {
				p("<g class=\"%s fault-wide\"><title>%s</title>", class, tlEsc(title))
				t.faultShape(b, f, color, t.rowsY, t.height-8, false)
				p("</g>\n")
			}
			continue
		}
		g, ok := groupOf[f.Client]
		if !ok {
			continue
		}
		p("<g class=\"%s\"><title>%s</title>", class, tlEsc(title))
		t.faultShape(b, f, color, g.y0, g.y1, true)
		p("</g>\n")
	}

	// Holds.
	lockColor := map[string]string{}
	for _, l := range t.locks {
		lockColor[l.name+"\x00"+l.kind.String()] = l.color
	}
	for _, row := range t.rows {
		for j, i := range row.holds {
			hd := h.Holds[i]
			to := max(hd.To, hd.From)
			x0, x1 := t.x(hd.From), t.x(to)
			y := row.y + tlRowPad/2 + float64(row.lane[j])*tlLaneH
			title := fmt.Sprintf("%s (%s) held by %s, client %d: %s to %s (%s), %s",
				hd.Name, hd.Kind, hd.Owner, hd.Client, tlDur(hd.From), tlDur(hd.To), tlDur(to-hd.From), hd.End)
			if hd.Kind == messages.KindFencedLock || hd.Token != 0 {
				title += fmt.Sprintf(", token %d", hd.Token)
			}
			if hd.Permits > 1 || (hd.Permits > 0 && !hd.Kind.Held()) {
				title += fmt.Sprintf(", %d permits", hd.Permits)
			}
			if hd.Kind == messages.KindPermitSemaphore {
				lease := "a lease that never ends"
				if hd.Lease > 0 {
					lease = "lease " + tlDur(hd.Lease)
				}
				title += fmt.Sprintf(", asked at %s, %s", tlDur(hd.Asked), lease)
			}
			p("<g class=\"hold %s\"><title>%s</title><rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"/>",
				tlEndClass(hd.End), tlEsc(title), tlNum(x0), tlNum(y), tlNum(max(x1-x0, 1)), tlNum(tlLaneH-3),
				lockColor[hd.Name+"\x00"+hd.Kind.String()])
			t.endMark(b, hd.End, max(x1, x0+1), y, tlLaneH-3)
			p("</g>\n")
		}
	}

	// Latches: their owners' awaits and count-downs, and their sets.
	for _, row := range t.rows {
		for _, i := range row.ops {
			t.latchOp(b, &h.Ops[i], row.y+tlRowPad/2, lockColor)
		}
	}
	for i := range h.Ops {
		if op := &h.Ops[i]; op.Action == ActSetCount {
			t.latchOp(b, op, t.redisY+2, lockColor)
		}
	}

	// MultiLocks: their acquires and the sets they held.
	for _, row := range t.rows {
		for _, i := range row.multis {
			t.multiLock(b, &h.Multis[i], row)
		}
	}

	// A user workload's events (diamonds) and log appends (small squares)
	// at the foot of their rows.
	for _, row := range t.rows {
		y := row.y + row.h - 6
		for _, i := range row.events {
			e := h.Events[i]
			x := t.x(e.At)
			p("<g class=\"event\"><title>%s</title><path d=\"M%s %sL%s %sL%s %sL%s %sZ\" fill=\"#222\" stroke=\"#fff\" stroke-width=\".5\"/></g>\n",
				tlEsc(tlEvent(e)), tlNum(x), tlNum(y-5), tlNum(x+5), tlNum(y), tlNum(x), tlNum(y+5), tlNum(x-5), tlNum(y))
		}
		for _, i := range row.logs {
			l := h.Log[i]
			x := t.x(l.At)
			p("<g class=\"log\"><title>%s</title><rect x=\"%s\" y=\"%s\" width=\"5\" height=\"5\" fill=\"#777\"/></g>\n",
				tlEsc(fmt.Sprintf("log, process %d, %s: %s", l.Process, tlDur(l.At), l.Entry)), tlNum(x-2.5), tlNum(y-2.5))
		}
	}

	// Violations, on top.
	for _, v := range t.violations {
		x := t.x(v.At)
		class := "violation"
		title := fmt.Sprintf("#%d %s at %s", v.n, v.Check, tlDur(v.At))
		if v.Name != "" {
			title += " on " + v.Name
		}
		title += ": " + v.What
		if v.Excused != "" {
			class += " excused"
			title += " (excused by " + string(v.Excused) + ")"
		}
		cy := t.violY + tlTopRowH/2
		p("<g class=\"%s\"><title>%s</title><line x1=\"%s\" x2=\"%s\" y1=\"%s\" y2=\"%s\"/>"+
			"<path d=\"M%s %sL%s %sL%s %sL%s %sZ\"/><text x=\"%s\" y=\"%s\" text-anchor=\"middle\">%d</text></g>\n",
			class, tlEsc(title), tlNum(x), tlNum(x), tlNum(cy), tlNum(t.height-8),
			tlNum(x), tlNum(cy-9), tlNum(x+9), tlNum(cy), tlNum(x), tlNum(cy+9), tlNum(x-9), tlNum(cy),
			tlNum(x), tlNum(cy+3), v.n)
	}
	p("</svg>\n")
}

// tlAnswer says how an operation answered at ret (-1: never): with an
// error, yes (ok) or no, each with its time.
func tlAnswer(ret time.Duration, failed, ok bool, yes, no string) string {
	switch {
	case ret < 0:
		return "never answered"
	case failed:
		return "answered with an error at " + tlDur(ret)
	case ok:
		return yes + tlDur(ret)
	default:
		return no + tlDur(ret)
	}
}

// answered is where something that ended at ret ends on the chart: ret,
// or the chart's end when it never ended (-1).
func (t *tlChart) answered(ret time.Duration) time.Duration {
	if ret < 0 {
		return t.span
	}
	return ret
}

// latchOp draws a latch's operation on a row whose first lane begins at
// y: an await as a thin bar from its call to its answer (to the end of the
// chart when it never came), a count-down as a triangle pointing down, a
// set as a triangle pointing up, in the latch's colour.
func (t *tlChart) latchOp(b *bytes.Buffer, op *Op, y float64, lockColor map[string]string) {
	color := lockColor[op.Name+"\x00"+op.Kind.String()]
	answer := tlAnswer(op.Return, op.Err, op.OK, "answered at ", "answered no at ")
	x, mid := t.x(op.Call), y+(tlLaneH-3)/2
	switch op.Action {
	case ActCountDown:
		title := fmt.Sprintf("%s counted %s down at %s, %s", op.Owner, op.Name, tlDur(op.Call), answer)
		if op.Return >= 0 && !op.Err {
			title += fmt.Sprintf(": count %d", op.Token)
		}
		fmt.Fprintf(b, "<g class=\"latch\"><title>%s</title><path d=\"M%s %sL%s %sL%s %sZ\" fill=\"%s\"/></g>\n",
			tlEsc(title), tlNum(x-4), tlNum(mid-4), tlNum(x+4), tlNum(mid-4), tlNum(x), tlNum(mid+4), color)
	case ActSetCount:
		title := fmt.Sprintf("%s's count set to %d at %s", op.Name, op.Permits, tlDur(op.Call))
		fmt.Fprintf(b, "<g class=\"latch\"><title>%s</title><path d=\"M%s %sL%s %sL%s %sZ\" fill=\"%s\"/></g>\n",
			tlEsc(title), tlNum(x-4), tlNum(mid+4), tlNum(x+4), tlNum(mid+4), tlNum(x), tlNum(mid-4), color)
	default:
		title := fmt.Sprintf("%s awaited %s (%s) from %s, %s", op.Owner, op.Name, op.Action, tlDur(op.Call), answer)
		fmt.Fprintf(b, "<g class=\"latch\"><title>%s</title><rect x=\"%s\" y=\"%s\" width=\"%s\" height=\"4\" fill=\"%s\"/></g>\n",
			tlEsc(title), tlNum(x), tlNum(mid-2), tlNum(max(t.x(t.answered(op.Return))-x, 1)), color)
	}
}

// multiLock draws a MultiLock's acquire on its owner's row: a thin bar
// under the row's holds from its call to its answer (to the end of the
// chart when it never came) and, when it took the set, a dashed frame
// around the row from its answer until its owner began releasing the set.
func (t *tlChart) multiLock(b *bytes.Buffer, m *MultiOp, row tlRow) {
	names := make([]string, len(m.Members))
	for i, mm := range m.Members {
		names[i] = mm.Name
	}
	how := "blocking"
	if !m.Blocking {
		how = "wait " + tlDur(m.Wait)
	}
	lease := "watchdog"
	if m.Lease > 0 {
		lease = "lease " + tlDur(m.Lease)
	}
	answer := tlAnswer(m.Return, m.Err, m.OK, "held from ", "answered not held at ")
	title := fmt.Sprintf("MultiLock of %s over %s (%s, %s) from %s, %d attempts, %s", m.Owner,
		strings.Join(names, ", "), how, lease, tlDur(m.Call), m.Attempts, answer)
	end := t.answered(m.Return)
	x := t.x(m.Call)
	fmt.Fprintf(b, "<g class=\"multi\"><title>%s</title><rect class=\"multi-wait\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"3\"/>",
		tlEsc(title), tlNum(x), tlNum(row.y+row.h-3.5), tlNum(max(t.x(end)-x, 1)))
	if m.OK && m.Return >= 0 {
		x0 := t.x(m.Return)
		fmt.Fprintf(b, "<rect class=\"multi-held\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\"/>",
			tlNum(x0), tlNum(row.y+1), tlNum(max(t.x(t.answered(m.Until))-x0, 1)), tlNum(row.h-5))
	}
	b.WriteString("</g>\n")
}

// faultShape draws f between y0 and y1: a band while it lasts and, for an
// instant kind, a line at its start with a small triangle on top when
// mark is set.
func (t *tlChart) faultShape(b *bytes.Buffer, f Fault, color string, y0, y1 float64, mark bool) {
	x0 := t.x(f.From)
	if f.To > f.From {
		fmt.Fprintf(b, "<rect class=\"fault-band\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"/>",
			tlNum(x0), tlNum(y0), tlNum(max(t.x(f.To)-x0, 2)), tlNum(y1-y0), color)
	}
	if !tlInstant(f) {
		return
	}
	fmt.Fprintf(b, "<line class=\"fault-line\" x1=\"%s\" x2=\"%s\" y1=\"%s\" y2=\"%s\" stroke=\"%s\"/>",
		tlNum(x0), tlNum(x0), tlNum(y0), tlNum(y1), color)
	if mark {
		fmt.Fprintf(b, "<path class=\"fault-mark\" d=\"M%s %sL%s %sL%s %sZ\" fill=\"%s\"/>",
			tlNum(x0-4), tlNum(y0), tlNum(x0+4), tlNum(y0), tlNum(x0), tlNum(y0+6), color)
	}
}

// WriteTimelineFile writes r's timeline (WriteTimeline, with its
// violations) to the file at path, created or truncated.
func (r *Result) WriteTimelineFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = WriteTimeline(f, &r.History, r.Violations)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// tlEvent describes a user workload's event for its tooltip.
func tlEvent(e Event) string {
	s := fmt.Sprintf("%s by %s, process %d, at %s", e.What, e.Owner, e.Process, tlDur(e.At))
	if e.Key != "" {
		s += ": " + e.Key
	}
	if e.Value != "" {
		s += " = " + e.Value
	}
	if e.Token != 0 {
		s += fmt.Sprintf(", token %d", e.Token)
	}
	return s
}

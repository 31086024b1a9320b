package sim

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/warden-go/warden/messages"
)

func tlTestHistory() (*History, []Violation) {
	h := &History{
		Seed:    42,
		Clients: 3,
		Length:  ms(2500),
		Ops: []Op{
			{Client: 0, Owner: "w0", Name: "orders", Kind: messages.KindLock, Action: ActAcquire, Permits: 1, Call: ms(0), Return: ms(5), OK: true},
			{Client: 0, Owner: "w0", Name: "orders", Kind: messages.KindLock, Action: ActRelease, Permits: 1, Call: ms(300), Return: ms(302), OK: true},
			{Client: 1, Owner: "w1", Name: "orders", Kind: messages.KindLock, Action: ActAcquire, Permits: 1, Call: ms(10), Return: ms(310), OK: true},
			{Client: 1, Owner: "w2", Name: "fence", Kind: messages.KindFencedLock, Action: ActAcquire, Permits: 1, Call: ms(100), Return: ms(120), OK: true, Token: 7},
			{Client: 2, Owner: "w3", Name: "fence", Kind: messages.KindFencedLock, Action: ActTry, Permits: 1, Call: ms(2000), Return: -1},
			{Client: -1, Name: "gate-p0", Kind: messages.KindCountDownLatch, Action: ActSetCount, Permits: 2, OK: true},
			{Client: 0, Owner: "w0", Name: "gate-p0", Kind: messages.KindCountDownLatch, Action: ActCountDown, Permits: 1, Call: ms(400), Return: ms(402), OK: true, Token: 1},
			{Client: 1, Owner: "w1", Name: "gate-p0", Kind: messages.KindCountDownLatch, Action: ActAcquire, Call: ms(1000), Return: ms(1400), OK: true},
		},
		Holds: []Hold{
			{Client: 0, Owner: "w0", Name: "orders", Kind: messages.KindLock, Permits: 1, From: ms(5), To: ms(300), End: EndReleased},
			{Client: 1, Owner: "w1", Name: "orders", Kind: messages.KindLock, Permits: 1, From: ms(310), To: ms(900), End: EndLost},
			{Client: 1, Owner: "w2", Name: "fence", Kind: messages.KindFencedLock, Permits: 1, From: ms(120), To: ms(1500), End: EndCrashed, Token: 7},
			{Client: 1, Owner: "w2", Name: "orders", Kind: messages.KindLock, Permits: 1, From: ms(200), To: ms(400), End: EndReleased},
			{Client: 2, Owner: "w3", Name: "sem", Kind: messages.KindSemaphore, Permits: 3, From: ms(50), To: ms(2500), End: EndRunEnd},
			{Client: 0, Owner: "w0", Name: "permits", Kind: messages.KindPermitSemaphore, Permits: 1, Asked: ms(600), From: ms(610), To: ms(1099), End: EndExpired, Lease: ms(500)},
		},
		Faults: []Fault{
			{Kind: FaultPartition, Client: 1, From: ms(600), To: ms(1200)},
			{Kind: FaultCrash, Client: 1, From: ms(1500), To: ms(1500)},
			{Kind: FaultRestart, Client: -1, From: ms(1800), To: ms(1800), Detail: "data <lost>"},
			{Kind: FaultLatency, Client: -1, From: 0, To: ms(2500), Detail: "0-3ms"},
		},
	}
	v := []Violation{
		{Check: "mutual exclusion", At: ms(310), Name: "orders", What: "w1 & w2 <both> hold orders"},
		{Check: "fencing", At: ms(200), Name: "fence", What: "token went backwards", Excused: FaultPause},
	}
	return h, v
}

func tlRender(t *testing.T, h *History, v []Violation) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteTimeline(&b, h, v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestTimelineRenders(t *testing.T) {
	h, v := tlTestHistory()
	out := tlRender(t, h, v)
	for _, want := range []string{
		"<!DOCTYPE html>", "<svg", "</html>",
		"client 0 / w0", "client 1 / w1", "client 1 / w2", "client 2 / w3",
		"seed 42", "orders (lock)", "fence (fenced lock)", "sem (semaphore)",
		"token 7", "3 permits",
		`class="hold end-released"`, `class="hold end-lost"`, `class="hold end-crashed"`, `class="hold end-run-end"`,
		`class="fault fault-partition"`, `class="fault fault-crash"`, `class="fault fault-restart"`, "fault-wide",
		"fault-band", "fault-line",
		`class="violation"`, `class="violation excused"`,
		"w1 &amp; w2 &lt;both&gt; hold orders", "token went backwards", "excused by pause",
		"data &lt;lost&gt;",
		">2.5s<", // run length
		"permits (permit-expirable semaphore)", `class="hold end-expired"`, "mark-expired", "lease 500ms",
		"gate-p0 (count-down latch)", "w0 counted gate-p0 down at 400ms, answered at 402ms: count 1",
		"w1 awaited gate-p0 (acquire) from 1s, answered at 1.4s", "gate-p0&#39;s count set to 2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, bad := range []string{"<both>", "<lost>", "<script", "http://", "https://"} {
		if bad == "http://" {
			// only the SVG namespace may mention a URL
			out := strings.ReplaceAll(out, `xmlns="http://www.w3.org/2000/svg"`, "")
			if strings.Contains(out, bad) {
				t.Errorf("output refers to %q", bad)
			}
			continue
		}
		if strings.Contains(out, bad) {
			t.Errorf("output contains %q", bad)
		}
	}
	// Every owner gets one row label, in client then owner order.
	last := -1
	for _, l := range []string{"client 0 / w0", "client 1 / w1", "client 1 / w2", "client 2 / w3"} {
		i := strings.Index(out, ">"+l+"</text>")
		if i < 0 || i < last {
			t.Errorf("label %q missing or out of order", l)
		}
		last = i
	}
	tlWellFormed(t, out)

	if again := tlRender(t, h, v); again != out {
		t.Fatal("two renders of the same history differ")
	}
}

func TestTimelineEscapes(t *testing.T) {
	h := &History{Clients: 1, Length: time.Second, Holds: []Hold{
		{Owner: `<script>alert("o")</script>`, Name: `"><img src=x>`, Kind: messages.KindLock, From: 0, To: time.Second, End: EndRunEnd},
	}}
	out := tlRender(t, h, []Violation{{Check: "<b>", Name: "&", What: `</title><script>`}})
	for _, bad := range []string{"<script", "<img", "<b>", "</title><script>"} {
		if strings.Contains(out, bad) {
			t.Errorf("output contains unescaped %q", bad)
		}
	}
	tlWellFormed(t, out)
}

func TestTimelineEmpty(t *testing.T) {
	out := tlRender(t, &History{Seed: 1, Clients: 2}, nil)
	for _, want := range []string{"<svg", "client 0", "client 1", "no holds", "Violations (0)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	tlWellFormed(t, out)
	if out := tlRender(t, nil, nil); !strings.Contains(out, "<svg") {
		t.Error("nil history does not render")
	}
}

func TestTimelineLarge(t *testing.T) {
	h := &History{Seed: 7, Clients: 5, Length: 60 * time.Second}
	for i := 0; i < 3000; i++ {
		c := i % 5
		from := time.Duration(i) * 20 * time.Millisecond
		h.Holds = append(h.Holds, Hold{Client: c, Owner: fmt.Sprintf("o%d", i%20), Name: fmt.Sprintf("k%d", i%15),
			Kind: messages.KindLock, From: from, To: from + 150*time.Millisecond, End: EndReleased})
	}
	out := tlRender(t, h, nil)
	if again := tlRender(t, h, nil); again != out {
		t.Fatal("two renders differ")
	}
	if n := strings.Count(out, `class="hold `); n != 3000+5 { // and the legend's five
		t.Fatalf("%d hold bars", n)
	}
	if len(out) > 3<<20 {
		t.Errorf("page of %d bytes", len(out))
	}
	tlWellFormed(t, out)
}

type tlFailWriter struct{}

func (tlFailWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestTimelineWriteError(t *testing.T) {
	h, v := tlTestHistory()
	if err := WriteTimeline(tlFailWriter{}, h, v); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("err %v", err)
	}
}

// tlWellFormed checks that the page parses as XML (past its doctype): every
// element closed, every text escaped.
func tlWellFormed(t *testing.T, page string) {
	t.Helper()
	page = strings.TrimPrefix(page, "<!DOCTYPE html>\n")
	d := xml.NewDecoder(strings.NewReader(page))
	d.Strict = true
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("page is not well-formed: %v", err)
		}
	}
}

func TestTimelineDrawsMultiLocks(t *testing.T) {
	h := &History{Seed: 3, Clients: 1, Length: ms(2000),
		Holds: []Hold{
			{Client: 0, Owner: "m", Name: "a", Kind: messages.KindLock, Permits: 1, From: ms(100), To: ms(900), End: EndReleased},
			{Client: 0, Owner: "m", Name: "b", Kind: messages.KindFairLock, Permits: 1, From: ms(300), To: ms(900), End: EndReleased},
		},
		Multis: []MultiOp{
			{Client: 0, Owner: "m", Members: []MultiMember{{"b", messages.KindFairLock}, {"a", messages.KindLock}},
				Wait: ms(1000), Call: ms(90), Return: ms(310), OK: true, Attempts: 2, Until: ms(900), Done: ms(905)},
			{Client: 0, Owner: "m", Members: []MultiMember{{"a", messages.KindLock}, {"b", messages.KindFairLock}},
				Blocking: true, Lease: ms(2000), Call: ms(1200), Return: -1, Attempts: 1, Until: -1, Done: -1},
		},
	}
	out := tlRender(t, h, nil)
	for _, want := range []string{
		"2 acquires (1 held the set)",
		"MultiLock of m over b, a (wait 1s, watchdog) from 90ms, 2 attempts, held from 310ms",
		"MultiLock of m over a, b (blocking, lease 2s) from 1.2s, 1 attempts, never answered",
		`class="multi-held"`, `class="multi-wait"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if n := strings.Count(out, `<rect class="multi-held" x=`); n != 2 { // one set held, and the legend's
		t.Errorf("%d held frames", n)
	}
	tlWellFormed(t, out)
}

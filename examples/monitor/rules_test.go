package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/warden-go/warden/internal/redistest"
)

// promtool is the path of promtool (Debian package prometheus), or the
// test fails saying how to install it.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool is missing: install it with: sudo apt-get install -y prometheus (make deps does): %v", err)
	}
	return p
}

// sample is one line of a scrape: a metric name, its labels, its value.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseScrape reads the Prometheus text format: every sample line.
func parseScrape(t *testing.T, body string) []sample {
	t.Helper()
	var out []sample
	for line := range strings.Lines(body) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := sample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
			s.name = line[:i]
			rest = line[i+1:]
			for !strings.HasPrefix(rest, "}") {
				k, v, ok := strings.Cut(rest, "=\"")
				if !ok {
					t.Fatalf("bad labels in %q", line)
				}
				var val strings.Builder
				j := 0
				for ; j < len(v) && v[j] != '"'; j++ {
					if v[j] == '\\' && j+1 < len(v) {
						j++
						switch v[j] {
						case 'n':
							val.WriteByte('\n')
							continue
						}
					}
					val.WriteByte(v[j])
				}
				s.labels[strings.TrimPrefix(k, ",")] = val.String()
				rest = strings.TrimPrefix(v[j+1:], ",")
			}
			rest = strings.TrimSpace(rest[1:])
		} else {
			s.name, rest, _ = strings.Cut(line, " ")
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			t.Fatalf("no value in %q", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			t.Fatalf("bad value in %q: %v", line, err)
		}
		s.value = v
		out = append(out, s)
	}
	return out
}

// find is the first sample of name whose labels include want.
func find(samples []sample, name string, want map[string]string) (sample, bool) {
	for _, s := range samples {
		if s.name != name {
			continue
		}
		ok := true
		for k, v := range want {
			ok = ok && s.labels[k] == v
		}
		if ok {
			return s, true
		}
	}
	return sample{}, false
}

// seriesText is s as promtool's input_series writes it, with extra
// labels.
func seriesText(name string, labels map[string]string) string {
	keys := slices.Sorted(maps.Keys(labels))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Quote(labels[k])
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// scrapes runs the monitor on a real redis-server and returns its first
// scrape that has every name of first, and a later one taken once check
// (given the server's client) returns true.
func scrapes(t *testing.T, first []string, between func(rdb *redis.Client), later func(body string) bool) (string, string) {
	t.Helper()
	srv := redistest.Start(t)
	t.Setenv("REDIS_ADDR", srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, "127.0.0.1:0", func(addr string) { addrs <- addr }) }()
	var url string
	select {
	case a := <-addrs:
		url = "http://" + a + "/metrics"
	case err := <-done:
		t.Fatalf("the monitor ended before serving: %v", err)
	}
	poll := func(what string, ok func(string) bool) string {
		last := ""
		for ctx.Err() == nil {
			if body, err := get(ctx, url); err == nil {
				last = body
				if ok(body) {
					return body
				}
			}
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
			}
		}
		t.Fatalf("no scrape with %s in time; the last:\n%s", what, last)
		return ""
	}
	a := poll(strings.Join(first, ", "), func(body string) bool {
		for _, n := range first {
			if !strings.Contains(body, "\n"+n+"{") {
				return false
			}
		}
		return true
	})
	between(srv.Client(t))
	b := poll("the change", later)
	cancel()
	if err := <-done; err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	return a, b
}

// wardenNames are the warden_ names an expression holds: metric names,
// and the label names of wardenLabels.
var wardenNames = regexp.MustCompile(`\bwarden_[a-z0-9_]+\b`)

// wardenLabels are the attributes warden's metrics carry, as labels.
var wardenLabels = []string{"warden_kind", "warden_outcome", "warden_end", "warden_name"}

// metricNames are the metric names expression e names (wardenNames that
// are not labels).
func metricNames(e string) []string {
	var out []string
	for _, m := range wardenNames.FindAllString(e, -1) {
		if !slices.Contains(wardenLabels, m) {
			out = append(out, m)
		}
	}
	return out
}

// The alert rules of alerts.yml, run by promtool test rules on series
// with the names and labels a real scrape of the monitor shows: the lost
// and renewal-failure counters are there at 0 before anything failed, a
// lock lost behind the monitor's back takes warden_lock_lost_total from 0
// to 1, and each alert fires on its series (the lost one on the values the
// scrapes saw) and not before.
func TestAlertRules(t *testing.T) {
	tool := promtool(t)
	lockKind := map[string]string{"warden_kind": "lock"}
	lost := "warden_lock_lost_total"
	needed := []string{lost, "warden_renewal_failures_total", "warden_lock_held_age_max_seconds", "warden_lock_waiting"}
	before, after := scrapes(t, needed, func(rdb *redis.Client) {
		// The report lock, held all run: gone behind its holder's back.
		if err := rdb.Del(context.Background(), "monitor:report").Err(); err != nil {
			t.Fatal(err)
		}
	}, func(body string) bool {
		s, ok := find(parseScrape(t, body), lost, lockKind)
		return ok && s.value == 1
	})
	first, second := parseScrape(t, before), parseScrape(t, after)
	names := map[string]bool{}
	for _, s := range first {
		names[s.name] = true
	}
	l0, ok := find(first, lost, lockKind)
	if !ok || l0.value != 0 {
		t.Fatalf("%s{warden_kind=lock} is not at 0 before any loss: %v %v\n%s", lost, ok, l0, before)
	}
	if f, ok := find(first, "warden_renewal_failures_total", lockKind); !ok || f.value != 0 {
		t.Fatalf("warden_renewal_failures_total{warden_kind=lock} is not at 0 before any failure: %v %v", ok, f)
	}
	l1, _ := find(second, lost, lockKind)

	rules, err := filepath.Abs("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range metricNames(string(text)) {
		if !names[m] {
			t.Errorf("alerts.yml names %s, which the exporter does not emit", m)
		}
	}
	job := map[string]string{"job": "monitor", "instance": "127.0.0.1:9464"}
	// with is s's labels as Prometheus stores them (an empty label is no
	// label) and the scrape's job and instance.
	with := func(s sample) map[string]string {
		out := maps.Clone(s.labels)
		maps.DeleteFunc(out, func(_, v string) bool { return v == "" })
		maps.Copy(out, job)
		return out
	}
	summary := func(l map[string]string, what string) string {
		return fmt.Sprintf("%s %s %s", l["job"], l["instance"], what)
	}
	type alert struct {
		Labels      map[string]string `json:"exp_labels"`
		Annotations map[string]string `json:"exp_annotations"`
	}
	type alertTest struct {
		EvalTime  string  `json:"eval_time"`
		AlertName string  `json:"alertname"`
		Alerts    []alert `json:"exp_alerts"`
	}
	type series struct {
		Series string `json:"series"`
		Values string `json:"values"`
	}
	var input []series
	var tests []alertTest
	// fires adds a series and the expectations: no alert at quiet, the
	// alert with labels at loud.
	fires := func(name string, labels map[string]string, values, alertName, quiet, loud string, want map[string]string, sum, desc string) {
		input = append(input, series{seriesText(name, labels), values})
		tests = append(tests,
			alertTest{EvalTime: quiet, AlertName: alertName, Alerts: []alert{}},
			alertTest{EvalTime: loud, AlertName: alertName, Alerts: []alert{{Labels: want,
				Annotations: map[string]string{"summary": sum, "description": desc}}}})
	}
	// warden_lock_lost_total as the two scrapes saw it, a minute apart.
	ll := with(l1)
	fires(lost, ll, fmt.Sprintf("%g %g %g %g %g", l0.value, l0.value, l1.value, l1.value, l1.value), "WardenLockLost", "1m", "3m",
		merge(ll, "severity", "critical"), summary(ll, "lost a lock holding in the last 5 minutes"),
		"Expired, force-unlocked or gone with Redis; `warden doctor` checks the server (eviction, persistence, replication).")
	rf, _ := find(first, "warden_renewal_failures_total", lockKind)
	rl := with(rf)
	fires(rf.name, rl, "0 0 1 1 1", "WardenRenewalFailures", "1m", "3m",
		merge(rl, "severity", "warning"), summary(rl, "sees watchdog renewals of lock failing"),
		"Its locks are lost unless a renewal gets through within the watchdog timeout; check the path to Redis.")
	age, ok := find(first, "warden_lock_held_age_max_seconds", lockKind)
	if !ok {
		t.Fatalf("no warden_lock_held_age_max_seconds{warden_kind=lock}:\n%s", before)
	}
	agg := func(s sample) map[string]string {
		l := with(s)
		return map[string]string{"job": l["job"], "instance": l["instance"], "warden_kind": l["warden_kind"]}
	}
	al := agg(age)
	fires(age.name, with(age), "0+30x10", "WardenLockHeldTooLong", "3m", "5m", merge(al, "severity", "warning"),
		summary(al, "has held a lock for over a minute"),
		"Find the holder with `warden ls` and `warden inspect NAME` (service@host:pid); `warden clients` says whether it is alive.")
	wait, ok := find(first, "warden_lock_waiting", map[string]string{"warden_kind": "lock"})
	if !ok {
		t.Fatalf("no warden_lock_waiting{warden_kind=lock}:\n%s", before)
	}
	wl := agg(wait)
	fires(wait.name, with(wait), "0 20 20 20 20 20", "WardenWaitsPilingUp", "2m", "4m", merge(wl, "severity", "warning"),
		summary(wl, "has over 10 calls waiting for a lock"), "`warden watch` shows holders and waiters as they change.")

	spec := map[string]any{
		"rule_files":          []string{rules},
		"evaluation_interval": "1m",
		"tests":               []any{map[string]any{"interval": "1m", "input_series": input, "alert_rule_test": tests}},
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "alerts_test.yml") // JSON is YAML
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "test", "rules", file).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s\n%s", err, out, b)
	}
	t.Logf("promtool test rules: %s", strings.TrimSpace(string(out)))
}

// merge is l with the pair k, v.
func merge(l map[string]string, k, v string) map[string]string {
	out := maps.Clone(l)
	out[k] = v
	return out
}

// The Grafana dashboard: every query is valid PromQL (promtool check rules
// on them as recording rules, Grafana's variables given values), names
// only metrics a real scrape of the monitor shows, and the panels cover
// what an operator looks at.
func TestDashboard(t *testing.T) {
	tool := promtool(t)
	b, err := os.ReadFile("dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	var used []string
	for _, e := range exprs {
		ms := metricNames(e)
		if len(ms) == 0 {
			t.Errorf("%q names no warden metric", e)
		}
		used = append(used, ms...)
	}
	slices.Sort(used)
	used = slices.Compact(used)
	// The histograms' series come with their buckets once observed: wait
	// for every name the dashboard uses.
	before, _ := scrapes(t, used, func(*redis.Client) {}, func(string) bool { return true })
	names, labels := map[string]bool{}, map[string]bool{}
	for _, s := range parseScrape(t, before) {
		names[s.name] = true
		for k := range s.labels {
			labels[k] = true
		}
	}
	for _, l := range wardenNames.FindAllString(string(b), -1) {
		if slices.Contains(wardenLabels, l) && l != "warden_name" && !labels[l] {
			t.Errorf("the dashboard groups by %s, a label the exporter does not emit", l)
		}
	}
	for _, m := range used {
		if !names[m] {
			t.Errorf("the dashboard names %s, which the exporter does not emit", m)
		}
	}
	for _, want := range []string{"warden_lock_acquire_duration_seconds_bucket", "warden_lock_hold_duration_seconds_bucket",
		"warden_lock_held", "warden_lock_waiting", "warden_lock_held_age_max_seconds", "warden_lock_lost_total",
		"warden_renewal_duration_seconds_bucket", "warden_renewal_failures_total"} {
		if !slices.Contains(used, want) {
			t.Errorf("no panel shows %s", want)
		}
	}
	if !strings.Contains(string(b), "warden_outcome") {
		t.Error("no panel splits acquire latency by outcome")
	}

	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	vars := strings.NewReplacer("$__rate_interval", "5m", "$job", ".*")
	for i, e := range exprs {
		q, err := json.Marshal(vars.Replace(e))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&rules, "      - record: dashboard:query_%d\n        expr: %s\n", i, q)
	}
	file := filepath.Join(t.TempDir(), "dashboard_rules.yml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "check", "rules", file).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules on the dashboard's queries: %v\n%s\n%s", err, out, rules.String())
	}
}

// Command warden-sim runs warden's deterministic simulation: K seeds from
// -seed on, each with -clients engines against one simulated Redis and the
// faults -faults allows. It prints a line per run, the failing seeds, and
// writes a timeline (HTML) of one seed on request. It exits 1 when a run
// broke a guarantee no injected fault excuses.
//
// It runs warden's built-in workload. To simulate your own actors, set
// sim.Options.Workload and sweep seeds with sim.RunSeeds in a go test
// (see sim.Workload, sim's ExampleWorkload and examples/simulate).
//
//	go run ./sim/cmd/warden-sim -seed 1 -runs 1000 -faults all
//	go run ./sim/cmd/warden-sim -seed 42 -faults partition,lost-reply -timeline seed42.html
//	go run ./sim/cmd/warden-sim -redlock -masters 3 -seed 1 -runs 300 -faults all -q
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/warden-go/warden/messages"
	"github.com/warden-go/warden/sim"
)

func main() {
	seed := flag.Int64("seed", 1, "first seed")
	runs := flag.Int("runs", 1, "how many seeds to run, from -seed on")
	clients := flag.Int("clients", 3, "simulated engines per run")
	owners := flag.Int("owners", 2, "workers per engine")
	faults := flag.String("faults", "all", `faults to inject: "all", "none" or a comma-separated list of `+fmt.Sprint(sim.AllFaults()))
	length := flag.Duration("length", 10*time.Second, "simulated length of each run")
	timeline := flag.String("timeline", "", "write the timeline of the first seed to this HTML file")
	trace := flag.Bool("trace", false, "print the trace of every run")
	quiet := flag.Bool("q", false, "print only failing runs and the summary")
	redlock := flag.Bool("redlock", false, "run RedLock mode: -clients processes, each with one engine per master")
	masters := flag.Int("masters", 3, "independent simulated Redis masters in RedLock mode")
	multiLocks := flag.Bool("multilocks", true, "let some owners take MultiLocks (false: the workload before MultiLocks joined)")
	kindsFlag := flag.String("kinds", "", `the primitives the workload uses, a comma-separated list such as "lock,group-lock" (default: every kind but `+kindNames(sim.FamilyKinds)+")")
	flag.Parse()
	kinds, err := parseKinds(*kindsFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fs, err := sim.ParseFaults(*faults)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *runs < 1 {
		fmt.Fprintln(os.Stderr, "-runs must be at least 1")
		os.Exit(2)
	}
	if *redlock {
		os.Exit(runRedLock(sim.RedLockOptions{Masters: *masters, Processes: *clients, Owners: *owners, Faults: fs,
			Length: *length, KeepTrace: *trace}, *seed, *runs, *faults, *quiet))
	}
	base := sim.Options{Clients: *clients, Owners: *owners, Faults: fs, Length: *length, KeepTrace: *trace,
		NoMultiLocks: !*multiLocks, Kinds: kinds}
	start := time.Now()
	results, errs := sim.RunSeeds(base, *seed, *runs)

	var failing []int64
	ops, excused, undecided, multis, held := 0, 0, 0, 0, 0
	for i, res := range results {
		s := *seed + int64(i)
		if errs[i] != nil {
			fmt.Printf("seed %d: error: %v\n", s, errs[i])
			failing = append(failing, s)
			continue
		}
		failed := res.Failed()
		ops += len(res.Ops)
		multis += len(res.Multis)
		for _, m := range res.Multis {
			if m.OK {
				held++
			}
		}
		excused += len(res.Violations) - len(failed)
		undecided += len(res.Unknown)
		if len(failed) > 0 {
			failing = append(failing, s)
		}
		if !*quiet || len(failed) > 0 {
			fmt.Printf("seed %d: %d ops, %d holds, %d MultiLock acquires, %d faults, %d violations (%d excused), trace %s\n",
				s, len(res.Ops), len(res.Holds), len(res.Multis), len(res.Faults), len(res.Violations),
				len(res.Violations)-len(failed), res.Trace[:16])
			for _, v := range res.Violations {
				fmt.Printf("  %v\n", v)
			}
		}
		for _, u := range res.Unknown {
			fmt.Printf("seed %d: undecided: %s\n", s, u)
		}
		if *trace {
			for _, l := range res.Lines {
				fmt.Print("  ", l)
			}
		}
	}
	if *timeline != "" && errs[0] == nil {
		f, err := os.Create(*timeline)
		if err == nil {
			err = sim.WriteTimeline(f, &results[0].History, results[0].Violations)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "timeline:", err)
			os.Exit(2)
		}
		fmt.Printf("timeline of seed %d written to %s\n", *seed, *timeline)
	}
	fmt.Printf("%d runs (seeds %d..%d, faults %s) in %v: %d ops (%d MultiLock acquires, %d held the set), %d excused violations, %d undecided checks, %d failing seeds %v\n",
		*runs, *seed, *seed+int64(*runs)-1, *faults, time.Since(start).Round(time.Millisecond), ops, multis, held,
		excused, undecided, len(failing), failing)
	if len(failing) > 0 {
		os.Exit(1)
	}
}

// runRedLock runs RedLock mode's seeds and prints them as main does the
// single-master runs; it returns the exit code.
func runRedLock(o sim.RedLockOptions, seed int64, runs int, faults string, quiet bool) int {
	start := time.Now()
	results, errs := sim.RunRedLockSeeds(o, seed, runs)
	var failing []int64
	ops, holds, excused := 0, 0, 0
	for i, res := range results {
		s := seed + int64(i)
		if errs[i] != nil {
			fmt.Printf("seed %d: error: %v\n", s, errs[i])
			failing = append(failing, s)
			continue
		}
		failed := res.Failed()
		ops += res.Ops
		holds += len(res.Holds)
		excused += len(res.Violations) - len(failed)
		if len(failed) > 0 {
			failing = append(failing, s)
		}
		if !quiet || len(failed) > 0 {
			fmt.Printf("seed %d: %d ops, %d attempts, %d holds, %d faults, %d violations (%d excused), trace %s\n", s,
				res.Ops, res.Attempts, len(res.Holds), len(res.Faults), len(res.Violations),
				len(res.Violations)-len(failed), res.Trace[:16])
			for _, v := range res.Violations {
				fmt.Printf("  %v\n", v)
			}
		}
		for _, l := range res.Lines {
			fmt.Print("  ", l)
		}
	}
	fmt.Printf("%d redlock runs (%d masters, seeds %d..%d, faults %s) in %v: %d ops, %d holds, %d excused violations, %d failing seeds %v\n",
		runs, o.Masters, seed, seed+int64(runs)-1, faults, time.Since(start).Round(time.Millisecond), ops, holds, excused,
		len(failing), failing)
	if len(failing) > 0 {
		return 1
	}
	return 0
}

// kindName is a kind's name on the command line: its String, dashed.
func kindName(k messages.Kind) string { return strings.ReplaceAll(k.String(), " ", "-") }

func kindNames(ks []messages.Kind) string {
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = kindName(k)
	}
	return strings.Join(names, ", ")
}

// parseKinds reads -kinds: nil (the default workload) when empty.
func parseKinds(list string) ([]messages.Kind, error) {
	if list == "" {
		return nil, nil
	}
	var kinds []messages.Kind
	for f := range strings.SplitSeq(list, ",") {
		f = strings.TrimSpace(f)
		found := false
		for k := messages.Kind(0); k.String() != "unknown"; k++ {
			if kindName(k) == f {
				kinds, found = append(kinds, k), true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("-kinds: %q is not a kind", f)
		}
	}
	return kinds, nil
}

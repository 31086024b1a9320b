package sim

import (
	"cmp"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/warden-go/warden/messages"
)

// CheckLinearizable checks with porcupine that the lock operations of h are
// linearizable: that every acquire, try and release took effect at one
// instant between its call and its return, in an order a sequential lock
// would have produced the same answers in.
//
// The sequential models, one object per lock name:
//
//   - An exclusive lock (KindLock, KindFairLock, KindFencedLock,
//     KindSpinLock: they share the name's object, as they share its Redis
//     key) is a holder and a hold
//     count. An acquire is granted when it is free or held by the same owner
//     (a reentry, count+1), refused otherwise; a release succeeds only for
//     the holder (count-1, free at 0) and fails for anyone else. The
//     non-reentrant locks (KindNonReentrantLock, KindNonReentrantFairLock)
//     refuse the holder's acquire too, the count left at 1.
//   - A read/write lock (KindReadLock and KindWriteLock on the same name) is
//     a writer with its count and the readers with theirs, with Redisson's
//     rules: a write acquire is granted when nobody holds either side or the
//     owner is already the writer (reentry), and refused while anyone else
//     writes or anyone, the owner too, reads (no read to write upgrade); a
//     read acquire is granted when there is no writer or the writer is the
//     owner (a downgrade). A release succeeds when the owner holds that side.
//   - A group lock (KindGroupLock) is, for each of its values, a holder and
//     a hold count. An acquire of some values is granted when each of them
//     is free or held by the owner (every value's count+1), refused when
//     another owner holds any of them: all or none, at one instant; a
//     release succeeds when the owner holds every value it names (each
//     count-1). Its holds are on GroupValueName(group, value): one ended
//     without a release drops the owner's hold of that value.
//
// A granted acquire or successful release must be allowed by the model at
// its linearization point, a refused one (OK false) must be refused there.
//
// Holds the engine ended without a release make the lock free at some moment
// nobody saw: a synthetic drop of all the owner's holds on that lock (on
// its side of a read/write lock: an owner that downgrades holds both, and
// each side's lease runs out, and is told, on its own) is linearized
// somewhere in [Hold.From, Hold.To + History.Trip + 1 ms] for EndLost (an
// owner is told its lease ended no later than Redis lets the lock go, up
// to a trip and Redis's clock grain before) and in [Hold.From, end of the
// run] for EndCrashed (the lease runs out after the crash). An operation that never returned (Return < 0) may or may not have
// taken effect: it is given the end of the run as its return and accepts
// either answer; if its client crashed after the call, its effect may also
// have expired (a drop between its call and the end of the run), and what
// an unanswered acquire with an explicit lease took may have run out (a
// drop from its call plus its lease on). Since such
// an operation is concurrent with everything after its call, "not applied"
// is the same as linearizing it last.
//
// Semaphores, permit-expirable semaphores and count-down latches are not
// modelled: their operations are skipped.
//
// Each lock name (and kind family) is checked on its own, with timeout
// bounding each one (0: no limit). A name whose history cannot be linearized
// gives one Violation (Check "linearizability"; At is the call of the
// operation porcupine could not place in its longest partial linearization);
// a name whose check timed out is listed in unknown instead. Both are sorted
// by name. A group lock's Violation is Check "group all-or-none".
func CheckLinearizable(h *History, timeout time.Duration) (violations []Violation, unknown []string) {
	if h == nil {
		return nil, nil
	}
	model := linModel()
	parts := model.Partition(linOperations(h))

	type result struct {
		violation *Violation
		unknown   string
	}
	results := make([]result, len(parts))
	var wg sync.WaitGroup
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, part := range parts {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			results[i].violation, results[i].unknown = linCheckPartition(model, part, timeout)
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r.violation != nil {
			violations = append(violations, *r.violation)
		}
		if r.unknown != "" {
			unknown = append(unknown, r.unknown)
		}
	}
	return violations, unknown
}

// linKey identifies one modelled lock object: a name and whether it is a
// read/write lock (rw) or an exclusive one.
type linKey struct {
	name  string
	rw    bool
	group bool // a group lock (rw is false)
}

func (k linKey) String() string {
	if k.group {
		return fmt.Sprintf("group lock %q", k.name)
	}
	if k.rw {
		return fmt.Sprintf("read/write lock %q", k.name)
	}
	return fmt.Sprintf("lock %q", k.name)
}

func linCompareKeys(a, b linKey) int {
	if c := strings.Compare(a.name, b.name); c != 0 {
		return c
	}
	if a.group != b.group {
		if a.group {
			return 1
		}
		return -1
	}
	switch {
	case a.rw == b.rw:
		return 0
	case !a.rw:
		return -1
	default:
		return 1
	}
}

// linAct is what a modelled operation does.
type linAct uint8

const (
	linAcquire linAct = iota // acquire or try
	linRelease
	linDrop // synthetic: the owner's holds (on its side) vanish (lost, or the lease ran out)
)

// linInput is a porcupine operation's input.
type linInput struct {
	key   linKey
	act   linAct
	owner string
	read  bool // the read side of a read/write lock (of a drop too)
	// values are a group lock operation's values, joined by ",".
	values string
	// nonReentrant: the holder's acquire is refused (ErrAlreadyHeld) and
	// changes nothing.
	nonReentrant bool
}

// linOutput is a porcupine operation's output.
type linOutput uint8

const (
	linOK      linOutput = iota // granted, or released
	linRefused                  // refused, or the release failed
	linUnknown                  // never answered: either
)

// linMeta is a porcupine operation's metadata: where it came from, for the
// report.
type linMeta struct {
	op     int // index in History.Ops; -1 for a synthetic drop
	client int
	call   time.Duration
	ret    time.Duration // -1: never returned
	kind   messages.Kind
	action Action
	ok     bool
}

// linOwnerCount is one reader's hold count.
type linOwnerCount struct {
	owner string
	count int
}

// linState is the model's state of one lock object. It is immutable: the
// step functions return a new value and never change readers in place.
type linState struct {
	holder  string // the exclusive holder, or the writer
	count   int    // holder's hold count
	readers []linOwnerCount
	// values are a group lock's held values, sorted by value: owner is
	// "<value>\x00<holder>".
	values []linOwnerCount
}

// valueIndex finds value v among a group lock's held values: its index
// (where it would go when absent), its holder and whether it is held.
func (s linState) valueIndex(v string) (int, string, bool) {
	i, ok := slices.BinarySearchFunc(s.values, v, func(e linOwnerCount, v string) int {
		value, _, _ := strings.Cut(e.owner, "\x00")
		return strings.Compare(value, v)
	})
	if !ok {
		return i, "", false
	}
	_, holder, _ := strings.Cut(s.values[i].owner, "\x00")
	return i, holder, true
}

// groupGrants reports whether every value of in is free or in's owner's.
func (s linState) groupGrants(in linInput) bool {
	for v := range strings.SplitSeq(in.values, ",") {
		if _, holder, ok := s.valueIndex(v); ok && holder != in.owner {
			return false
		}
	}
	return true
}

// groupHolds reports whether in's owner holds every value of in.
func (s linState) groupHolds(in linInput) bool {
	for v := range strings.SplitSeq(in.values, ",") {
		if _, holder, ok := s.valueIndex(v); !ok || holder != in.owner {
			return false
		}
	}
	return true
}

// groupAdd adds d to in's owner's count of every value of in (d = -1 at
// 1 frees the value); with drop, it frees them.
func (s linState) groupAdd(in linInput, d int, drop bool) linState {
	values := slices.Clone(s.values)
	for v := range strings.SplitSeq(in.values, ",") {
		i, holder, ok := linState{values: values}.valueIndex(v)
		switch {
		case !ok && d > 0:
			values = slices.Insert(values, i, linOwnerCount{owner: v + "\x00" + in.owner, count: d})
		case !ok || holder != in.owner:
		case drop || values[i].count+d <= 0:
			values = slices.Delete(values, i, i+1)
		default:
			values[i].count += d
		}
	}
	if len(values) == 0 {
		values = nil
	}
	return linState{values: values}
}

func (s linState) readerIndex(owner string) (int, bool) {
	return slices.BinarySearchFunc(s.readers, owner, func(e linOwnerCount, o string) int {
		return strings.Compare(e.owner, o)
	})
}

// grants reports whether the model would grant in's acquire now.
func (s linState) grants(in linInput) bool {
	if in.read {
		return s.holder == "" || s.holder == in.owner
	}
	return (s.holder == in.owner && !in.nonReentrant) || (s.holder == "" && len(s.readers) == 0)
}

// holds reports whether in's owner holds the side in's release is for.
func (s linState) holds(in linInput) bool {
	if in.read {
		_, ok := s.readerIndex(in.owner)
		return ok
	}
	return s.holder == in.owner
}

func (s linState) acquire(in linInput) linState {
	if !in.read {
		return linState{holder: in.owner, count: s.count + 1, readers: s.readers}
	}
	i, ok := s.readerIndex(in.owner)
	readers := slices.Clone(s.readers)
	if ok {
		readers[i].count++
	} else {
		readers = slices.Insert(readers, i, linOwnerCount{owner: in.owner, count: 1})
	}
	return linState{holder: s.holder, count: s.count, readers: readers}
}

func (s linState) release(in linInput) linState {
	if !in.read {
		if s.count <= 1 {
			return linState{readers: s.readers}
		}
		return linState{holder: s.holder, count: s.count - 1, readers: s.readers}
	}
	i, _ := s.readerIndex(in.owner)
	readers := slices.Clone(s.readers)
	if readers[i].count <= 1 {
		readers = slices.Delete(readers, i, i+1)
	} else {
		readers[i].count--
	}
	if len(readers) == 0 {
		readers = nil
	}
	return linState{holder: s.holder, count: s.count, readers: readers}
}

// drop ends the holds of in's owner on in's side.
func (s linState) drop(in linInput) linState {
	next := s
	if !in.read && s.holder == in.owner {
		next.holder, next.count = "", 0
	}
	if i, ok := s.readerIndex(in.owner); ok && in.read {
		next.readers = slices.Delete(slices.Clone(s.readers), i, i+1)
		if len(next.readers) == 0 {
			next.readers = nil
		}
	}
	return next
}

// step is the model's Step.
func (s linState) step(in linInput, out linOutput) (bool, linState) {
	if in.key.group {
		return s.groupStep(in, out)
	}
	switch in.act {
	case linDrop:
		return true, s.drop(in)
	case linAcquire:
		granted := s.grants(in)
		switch {
		case out == linRefused:
			return !granted, s
		case granted:
			return true, s.acquire(in)
		default:
			return out == linUnknown, s
		}
	case linRelease:
		held := s.holds(in)
		switch {
		case out == linRefused:
			return !held, s
		case held:
			return true, s.release(in)
		default:
			return out == linUnknown, s
		}
	}
	return false, s
}

// groupStep is step for a group lock.
func (s linState) groupStep(in linInput, out linOutput) (bool, linState) {
	switch in.act {
	case linDrop:
		return true, s.groupAdd(in, 0, true)
	case linAcquire:
		granted := s.groupGrants(in)
		switch {
		case out == linRefused:
			return !granted, s
		case granted:
			return true, s.groupAdd(in, 1, false)
		default:
			return out == linUnknown, s
		}
	case linRelease:
		held := s.groupHolds(in)
		switch {
		case out == linRefused:
			return !held, s
		case held:
			return true, s.groupAdd(in, -1, false)
		default:
			return out == linUnknown, s
		}
	}
	return false, s
}

func (s linState) equal(o linState) bool {
	return s.holder == o.holder && s.count == o.count &&
		slices.Equal(s.readers, o.readers) && slices.Equal(s.values, o.values)
}

func (s linState) hash() uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	str := func(v string) {
		for i := 0; i < len(v); i++ {
			h = (h ^ uint64(v[i])) * prime
		}
		h = (h ^ 0xff) * prime
	}
	num := func(v int) { h = (h ^ uint64(v)) * prime }
	str(s.holder)
	num(s.count)
	for _, r := range s.readers {
		str(r.owner)
		num(r.count)
	}
	for _, v := range s.values {
		str(v.owner)
		num(v.count)
	}
	return h
}

func (s linState) String() string {
	var b strings.Builder
	if s.holder == "" {
		b.WriteString("free")
	} else {
		fmt.Fprintf(&b, "held by %q ×%d", s.holder, s.count)
	}
	for _, r := range s.readers {
		fmt.Fprintf(&b, ", read by %q ×%d", r.owner, r.count)
	}
	for _, v := range s.values {
		value, holder, _ := strings.Cut(v.owner, "\x00")
		fmt.Fprintf(&b, ", %s held by %q ×%d", value, holder, v.count)
	}
	return b.String()
}

func linDescribeOp(in linInput, out linOutput) string {
	side := ""
	if in.key.rw {
		side = "write "
		if in.read {
			side = "read "
		}
	}
	if in.key.group {
		side = "[" + in.values + "] "
	}
	var what string
	switch in.act {
	case linAcquire:
		what = side + "acquire"
	case linRelease:
		what = side + "release"
	default:
		return fmt.Sprintf("%sdrop(%q)", side, in.owner)
	}
	res := map[linOutput]string{linOK: "ok", linRefused: "refused", linUnknown: "?"}[out]
	return fmt.Sprintf("%s(%q) -> %s", what, in.owner, res)
}

// linModel is the porcupine model of the lock objects, partitioned by
// linKey (in key order; each partition keeps the history's order).
func linModel() porcupine.Model {
	return porcupine.Model{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byKey := map[linKey][]porcupine.Operation{}
			for _, op := range history {
				k := op.Input.(linInput).key
				byKey[k] = append(byKey[k], op)
			}
			keys := slices.SortedFunc(maps.Keys(byKey), linCompareKeys)
			parts := make([][]porcupine.Operation, len(keys))
			for i, k := range keys {
				parts[i] = byKey[k]
			}
			return parts
		},
		Init: func() any { return linState{} },
		Step: func(state, input, output any) (bool, any) {
			return state.(linState).step(input.(linInput), output.(linOutput))
		},
		Equal: func(a, b any) bool { return a.(linState).equal(b.(linState)) },
		Hash:  func(state any) uint64 { return state.(linState).hash() },
		DescribeOperation: func(input, output any) string {
			return linDescribeOp(input.(linInput), output.(linOutput))
		},
		DescribeState: func(state any) string { return state.(linState).String() },
	}
}

func linKeyOf(name string, kind messages.Kind) linKey {
	return linKey{name: name, rw: kind == messages.KindReadLock || kind == messages.KindWriteLock,
		group: kind == messages.KindGroupLock}
}

// linTarget is the modelled object and values of an operation or hold on
// name of kind: a group lock's hold is on one value (GroupValueName).
func linTarget(name string, kind messages.Kind, values []string) (linKey, string) {
	if kind != messages.KindGroupLock {
		return linKeyOf(name, kind), ""
	}
	if len(values) == 0 {
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name, values = name[:i], []string{name[i+1:]}
		}
	}
	return linKeyOf(name, kind), strings.Join(values, ",")
}

// linOperations turns h's lock operations and ended holds into porcupine
// operations (timestamps in nanoseconds of simulation time).
func linOperations(h *History) []porcupine.Operation {
	end := h.Length
	for _, op := range h.Ops {
		end = max(end, op.Call, op.Return)
	}
	for _, hd := range h.Holds {
		end = max(end, hd.To)
	}
	crashed := map[int]time.Duration{} // client -> its first crash
	for _, f := range h.Faults {
		if f.Kind != FaultCrash || f.Client < 0 {
			continue
		}
		if at, ok := crashed[f.Client]; !ok || f.From < at {
			crashed[f.Client] = f.From
		}
	}

	var ops, drops []porcupine.Operation
	drop := func(owner string, kind messages.Kind, name string, client int, from, to time.Duration, values ...string) {
		meta := linMeta{op: -1, client: client, call: from, ret: to}
		key, vals := linTarget(name, kind, values)
		drops = append(drops, porcupine.Operation{
			ClientId: max(client, 0),
			Input:    linInput{key: key, act: linDrop, owner: owner, read: kind == messages.KindReadLock, values: vals},
			Output:   linOK,
			Call:     int64(from),
			Return:   int64(max(to, from)),
			Metadata: meta,
		})
	}
	for i, op := range h.Ops {
		if !op.Kind.Held() {
			continue
		}
		key, vals := linTarget(op.Name, op.Kind, op.Values)
		in := linInput{key: key, owner: op.Owner, read: op.Kind == messages.KindReadLock,
			nonReentrant: op.Kind.NonReentrant(),
			values:       vals}
		switch op.Action {
		case ActAcquire, ActTry:
			in.act = linAcquire
		case ActRelease:
			in.act = linRelease
		default:
			continue
		}
		out, ret := linRefused, op.Return
		switch {
		case op.Err:
			out = linUnknown // answered with an error: applied or not
		case op.OK:
			out = linOK
		}
		if ret < 0 {
			out, ret = linUnknown, end
			// A crashed client's holds expire; what an unanswered acquire
			// with an explicit lease took ends with the lease (in watchdog
			// mode the engine renews it until the call times out, after
			// the run).
			if at, ok := crashed[op.Client]; ok && at >= op.Call {
				drop(op.Owner, op.Kind, op.Name, op.Client, op.Call, end, op.Values...)
			} else if from := op.Call + op.Lease - redisGrain; in.act == linAcquire && op.Lease > 0 && from < end {
				drop(op.Owner, op.Kind, op.Name, op.Client, from, end, op.Values...)
			}
		}
		ops = append(ops, porcupine.Operation{
			ClientId: max(op.Client, 0),
			Input:    in,
			Output:   out,
			Call:     int64(op.Call),
			Return:   int64(max(ret, op.Call)),
			Metadata: linMeta{op: i, client: op.Client, call: op.Call, ret: op.Return,
				kind: op.Kind, action: op.Action, ok: op.OK},
		})
	}
	for _, hd := range h.Holds {
		if !hd.Kind.Held() {
			continue
		}
		switch hd.End {
		case EndLost:
			drop(hd.Owner, hd.Kind, hd.Name, hd.Client, hd.From, hd.To+h.Trip+redisGrain)
		case EndUnknown:
			// An operation answered with an error may have left the lock
			// held until its lease ran out (To).
			drop(hd.Owner, hd.Kind, hd.Name, hd.Client, hd.From, hd.To)
		case EndCrashed:
			drop(hd.Owner, hd.Kind, hd.Name, hd.Client, hd.From, end)
		}
	}
	return append(ops, drops...)
}

// linCheckPartition checks one lock object's operations.
func linCheckPartition(model porcupine.Model, part []porcupine.Operation, timeout time.Duration) (*Violation, string) {
	key := part[0].Input.(linInput).key
	res, info := porcupine.CheckOperationsVerbose(model, part, timeout)
	switch res {
	case porcupine.Ok:
		return nil, ""
	case porcupine.Unknown:
		return nil, fmt.Sprintf("%s: linearizability check of %d operations timed out after %v", key, len(part), timeout)
	}
	v := &Violation{Check: "linearizability", Name: key.name}
	if key.group {
		v.Check = checkGroupAllOrNone
	}
	culprit := linCulprit(part, info)
	if culprit < 0 {
		v.What = fmt.Sprintf("the %d operations on %s have no linearization", len(part), key)
		return v, ""
	}
	m := part[culprit].Metadata.(linMeta)
	v.At = m.call
	ret := "never answered"
	if m.ret >= 0 {
		ret = "answered " + m.ret.String()
	}
	v.What = fmt.Sprintf("no linearization of %s: %s %s by %q (client %d, %s, called %v, %s) cannot be placed",
		key, m.kind, m.action, part[culprit].Input.(linInput).owner, m.client, linOutcome(m), m.call, ret)
	return v, ""
}

func linOutcome(m linMeta) string {
	switch {
	case m.ret < 0:
		return "no answer"
	case m.action == ActRelease && m.ok:
		return "released"
	case m.action == ActRelease:
		return "release failed"
	case m.ok:
		return "granted"
	default:
		return "refused"
	}
}

// linCulprit picks the operation porcupine could not place: over its
// longest partial linearizations, the unplaced real (not synthetic)
// operation returning first, taking the partial that got furthest. -1 if
// there is none.
func linCulprit(part []porcupine.Operation, info porcupine.LinearizationInfo) int {
	var partials [][]int
	if all := info.PartialLinearizations(); len(all) > 0 {
		partials = all[0]
	}
	if len(partials) == 0 {
		partials = [][]int{nil}
	}
	// less orders operations by return, then call, then index.
	less := func(a, b int) bool {
		x, y := part[a], part[b]
		return cmp.Or(cmp.Compare(x.Return, y.Return), cmp.Compare(x.Call, y.Call), cmp.Compare(a, b)) < 0
	}
	best := -1
	placed := make([]bool, len(part))
	for _, lin := range partials {
		clear(placed)
		for _, id := range lin {
			if id >= 0 && id < len(placed) {
				placed[id] = true
			}
		}
		first := -1
		for i := range part {
			if placed[i] || part[i].Metadata.(linMeta).op < 0 {
				continue
			}
			if first < 0 || less(i, first) {
				first = i
			}
		}
		if first >= 0 && (best < 0 || less(best, first)) {
			best = first
		}
	}
	return best
}

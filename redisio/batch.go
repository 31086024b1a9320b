package redisio

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A batch script runs several calls of one hot script (acquire.lua or
// unlock.lua), each with its own keys and arguments, in one EVALSHA: the
// AutoPipeline sends calls of the same script that are queued together
// that way instead of as one EVALSHA each. What a call does and answers
// is what its own script does and answers: the batch runs the script's
// very text, made a function of the offsets of its call's keys and
// arguments, once per call in the order queued, each under pcall, so a
// call that fails (a Lua error on a key of another type) fails alone,
// with the writes it made before the error kept, as its own EVALSHA would
// (its error's text then lacks the "script: <sha>, on @user_script:<n>."
// that Redis appends to a script's own error). Measured on 2 cores against
// a local Redis, 8 acquires then 8 unlocks of 8 names a round: the batches
// took 15.2-17.7 µs of Redis CPU a pair, the same calls pipelined one
// EVALSHA each 22.4-24.8 µs (BENCHMARKS.md). Each EVALSHA pays for
// its command, its script lookup and the KEYS and ARGV tables Redis
// builds for it; a batch pays for them once.
type batchScript struct {
	script   *redis.Script
	of       string // the SHA1 of the script whose calls it runs
	nk, na   int    // the keys and arguments of each call
	sha, src any    // the batch's own SHA1 and source, as command arguments
}

// batchScripts are the hot scripts' batches, in the plain lock's arities:
// an acquire of a reentrant lock (one key, four arguments: not the fenced
// or non-reentrant forms) and an unlock.
var batchScripts = []*batchScript{
	newBatchScript(acquireScript, "acquire", 1, 4),
	newBatchScript(unlockScript, "unlock", 3, 7),
}

// scriptIndex matches KEYS[n] and ARGV[n]; any other use of KEYS or ARGV
// in a batched script is a mistake of its author's (batchBody panics).
var scriptIndex = regexp.MustCompile(`\b(KEYS|ARGV)\[(\d+)\]`)

// newBatchScript makes the batch of calls of hot script name, each with
// nk keys and na arguments, and registers it for Load.
func newBatchScript(of hotScript, name string, nk, na int) *batchScript {
	src := "local function call(k, a)\n" + batchBody(luaFile(name), nk, na) + "\nend\n" + luaFile("batch")
	src = strings.NewReplacer("@NK@", strconv.Itoa(nk), "@NA@", strconv.Itoa(na)).Replace(src)
	sc := redis.NewScript(src)
	scripts = append(scripts, sc)
	return &batchScript{script: sc, of: of.Hash(), nk: nk, na: na, sha: sc.Hash(), src: src}
}

// batchBody rewrites a script's KEYS[n] and ARGV[n] to its call's, at
// offsets k and a of the batch's KEYS and ARGV; an index past nk or na
// (an optional argument this arity has not) reads nil, as it does in the
// script's own call.
func batchBody(src string, nk, na int) string {
	out := scriptIndex.ReplaceAllStringFunc(src, func(m string) string {
		sm := scriptIndex.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sm[2])
		switch {
		case sm[1] == "KEYS" && n <= nk:
			return "KEYS[k+" + sm[2] + "]"
		case sm[1] == "ARGV" && n <= na:
			return "ARGV[a+" + sm[2] + "]"
		}
		return "nil"
	})
	// Comments may name KEYS and ARGV; code may not, but through the
	// indexes just rewritten.
	for line := range strings.SplitSeq(out, "\n") {
		code, _, _ := strings.Cut(line, "--")
		code = strings.NewReplacer("KEYS[k+", "", "ARGV[a+", "").Replace(code)
		if strings.Contains(code, "KEYS") || strings.Contains(code, "ARGV") {
			panic(fmt.Sprintf("redisio: a batched script uses KEYS or ARGV other than by a constant index: %q", line))
		}
	}
	return out
}

// batchFor returns the index in batchScripts of the batch that runs cmd's
// calls, if cmd is a call of a batched script in its arity; else -1.
func batchFor(cmd *redis.Cmd) int {
	args := cmd.Args()
	if len(args) < 3 || args[0] != "evalsha" {
		return -1
	}
	for i, b := range batchScripts {
		if args[1] == b.of && args[2] == b.nk && len(args) == 3+b.nk+b.na {
			return i
		}
	}
	return -1
}

// cmd is the batch command of calls, which are calls of b: their
// keys in order, the count, their arguments in order.
func (b *batchScript) cmd(ctx context.Context, calls []*pipedCall, eval bool) *redis.Cmd {
	n := len(calls)
	args := make([]any, 0, 4+n*(b.nk+b.na))
	if eval {
		args = append(args, "eval", b.src)
	} else {
		args = append(args, "evalsha", b.sha)
	}
	args = append(args, n*b.nk)
	for _, c := range calls {
		args = append(args, c.cmd.Args()[3:3+b.nk]...)
	}
	args = append(args, n)
	for _, c := range calls {
		args = append(args, c.cmd.Args()[3+b.nk:]...)
	}
	cmd := redis.NewCmd(ctx, args...)
	cmd.SetFirstKeyPos(3) // a Cluster pipeline routes it by its first key (every key is in one slot)
	return cmd
}

// answer gives each of calls its reply from the batch's: its element, an
// error element as its error; the batch's own error (Redis unreachable)
// to every one.
func (b *batchScript) answer(calls []*pipedCall, batch *redis.Cmd) {
	replies, err := batch.Slice()
	if err == nil && len(replies) != len(calls) {
		err = fmt.Errorf("warden: a batch of %d calls answered %d replies", len(calls), len(replies))
	}
	for i, c := range calls {
		switch {
		case err != nil:
			c.cmd.SetErr(err)
		case replies[i] == nil:
			c.cmd.SetErr(redis.Nil)
		default:
			if e, ok := replies[i].(error); ok {
				c.cmd.SetErr(e)
			} else {
				c.cmd.SetVal(replies[i])
			}
		}
	}
}

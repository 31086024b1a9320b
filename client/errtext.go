package client

import (
	"strings"
)

// bare returns err, matched as err (errors.Is, errors.As), with the text
// of a part of a message that has its "warden: " prefix already: err's
// own, in one line, without its leading "warden: ". So a composite error
// ("warden: redlock job: released on 0 of 3 masters: lock not held: master
// 0: ...") has one prefix however many warden errors it holds.
func bare(err error) error {
	if err == nil {
		return nil
	}
	return unprefixed{err}
}

type unprefixed struct{ err error }

func (u unprefixed) Error() string {
	return strings.TrimPrefix(strings.ReplaceAll(u.err.Error(), "\n", "; "), "warden: ")
}

func (u unprefixed) Unwrap() error { return u.err }

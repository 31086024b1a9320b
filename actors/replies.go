package actors

import "github.com/warden-go/warden/messages"

// The failure replies, one builder per request type: every actor that
// refuses or fails a request answers it through these, so a reply names
// the request it answers the same way wherever it is made.

// acquireFailed answers m with err.
func acquireFailed(m *messages.Acquire, err error) *messages.AcquireFailed {
	return &messages.AcquireFailed{Name: m.Name, Kind: m.Kind, Owner: m.Owner, RequestID: m.RequestID, Err: err}
}

// releaseFailed answers m with err, for the holding the release was for
// (0: none known).
func releaseFailed(m *messages.Release, err error, holding uint64) *messages.ReleaseFailed {
	return &messages.ReleaseFailed{Name: m.Name, Kind: m.Kind, Owner: m.Owner, RequestID: m.RequestID, Err: err,
		Holding: holding}
}

// extendFailed answers m with err, for the holding the extend was for (0:
// none known).
func extendFailed(m *messages.Extend, err error, holding uint64) *messages.ExtendFailed {
	return &messages.ExtendFailed{Name: m.Name, Kind: m.Kind, Owner: m.Owner, RequestID: m.RequestID, Err: err,
		Holding: holding}
}

// watchFailed answers m with err.
func watchFailed(m *messages.Watch, err error) *messages.Watched {
	return &messages.Watched{Name: m.Name, Kind: m.Kind, Owner: m.Owner, Err: err}
}

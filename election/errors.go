package election

import (
	"errors"

	"github.com/warden-go/warden/client"
)

var (
	// ErrNoLeader: Leader found nobody leading the election.
	ErrNoLeader = errors.New("warden: election: no leader")
	// ErrAlreadyLeader: Campaign by a candidate that already leads.
	ErrAlreadyLeader = errors.New("warden: election: already the leader")
	// ErrNotLeader: the candidate does not lead (what an adapter whose
	// IsLeader returns an error, such as gocron's Elector, answers).
	ErrNotLeader = errors.New("warden: election: not the leader")
	// ErrInvalidArgument is client.ErrInvalidArgument: a bad name, value,
	// context or option; the message names the field.
	ErrInvalidArgument = client.ErrInvalidArgument
)

package messages

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBackOffValidation(t *testing.T) {
	ms := time.Millisecond
	spin := func(b BackOff) error {
		return (&Acquire{Name: "n", Owner: "o", RequestID: "r", Kind: KindSpinLock, BackOff: b}).Validate()
	}
	tests := []struct {
		what  string
		err   error
		field string // "" when valid
	}{
		{"zero value (the default)", BackOff{}.Validate(), ""},
		{"default", DefaultBackOff().Validate(), ""},
		{"constant", ConstantBackOff(64 * ms).Validate(), ""},
		{"initial equal to max", BackOff{Initial: 5 * ms, Max: 5 * ms, Multiplier: 3}.Validate(), ""},
		{"initial zero", BackOff{Max: ms, Multiplier: 2}.Validate(), "back-off initial"},
		{"initial negative", BackOff{Initial: -ms, Max: ms, Multiplier: 2}.Validate(), "back-off initial"},
		{"max zero", BackOff{Initial: ms, Multiplier: 2}.Validate(), "back-off max"},
		{"max negative", BackOff{Initial: ms, Max: -ms, Multiplier: 2}.Validate(), "back-off max"},
		{"max below initial", BackOff{Initial: 10 * ms, Max: 9 * ms, Multiplier: 2}.Validate(), "back-off max"},
		{"multiplier zero", BackOff{Initial: ms, Max: 2 * ms}.Validate(), "back-off multiplier"},
		{"multiplier negative", BackOff{Initial: ms, Max: 2 * ms, Multiplier: -2}.Validate(), "back-off multiplier"},
		{"constant zero", ConstantBackOff(0).Validate(), "back-off initial"},
		{"constant under 1ms", ConstantBackOff(50).Validate(), "back-off initial"},
		{"initial under 1ms", BackOff{Initial: ms - 1, Max: ms, Multiplier: 2}.Validate(), "back-off initial"},
		{"spin acquire, default", spin(BackOff{}), ""},
		{"spin acquire, bad max", spin(BackOff{Initial: 2 * ms, Max: ms, Multiplier: 2}), "back-off max"},
		{"lock acquire with a back-off", (&Acquire{Name: "n", Owner: "o", RequestID: "r",
			BackOff: DefaultBackOff()}).Validate(), "back-off"},
	}
	for _, tt := range tests {
		t.Run(tt.what, func(t *testing.T) {
			if tt.field == "" {
				assert.NoError(t, tt.err)
				return
			}
			require.ErrorIs(t, tt.err, ErrInvalidArgument)
			assert.Contains(t, tt.err.Error(), tt.field+":", "the message names the field")
		})
	}
}

func TestBackOffOrDefault(t *testing.T) {
	assert.Equal(t, DefaultBackOff(), BackOff{}.OrDefault())
	c := ConstantBackOff(time.Second)
	assert.Equal(t, c, c.OrDefault())
	assert.Equal(t, BackOff{Initial: time.Millisecond, Max: 128 * time.Millisecond, Multiplier: 2}, DefaultBackOff(),
		"Redisson's ExponentialBackOff defaults")
}

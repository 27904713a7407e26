// Package lamport implements the Lamport logical clock that orders every
// recorded event: it ticks on every event, and a receive moves it past the
// clock the message was sent with.
package lamport

// Clock is one node's Lamport clock. The zero value is a clock that has not
// yet ticked; the first event it stamps gets 1.
type Clock struct {
	t uint64
}

// Now is the clock of the last event stamped (0 before the first).
func (c *Clock) Now() uint64 { return c.t }

// Tick stamps a local event (init, timer, input, restart, crash).
func (c *Clock) Tick() uint64 {
	c.t++
	return c.t
}

// Receive stamps the receipt of a message sent at clock sent:
// max(local, sent) + 1, so the receipt is ordered after its send.
func (c *Clock) Receive(sent uint64) uint64 {
	c.t = max(c.t, sent) + 1
	return c.t
}

// Set restores a clock, for drivers that rebuild a node from a checkpoint or
// resume it after a restart with a reserved clock value.
func (c *Clock) Set(t uint64) { c.t = t }

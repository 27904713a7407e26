package replay

// For the external tests: whether a trace was spilled, and the size
// below which files are not spilled from their first event.
func Spilled(t *Trace) bool { _, ok := t.events.(*spillStore); return ok }

const SpillFromTheStartBytes = DefaultInMemory * minEventBytes

package node

import "fmt"

// Synchronisation for tasks. These live in the handler's state (their
// fields are plain IDs and counts, so they are observed, hashed and shown
// like any other state) and hand ownership over in FIFO order, so which
// waiter goes next never depends on timing. Blocking operations take the
// calling *Task; operations that only wake others (Signal, Broadcast,
// Release) take an Env, so a handler may call them too.

// Mutex is a task mutex. The zero value is unlocked; Name is what a
// blocked task is shown waiting for.
type Mutex struct {
	Name    string
	holder  TaskID
	waiters []TaskID
}

func (m *Mutex) label() string {
	if m.Name == "" {
		return "mutex"
	}
	return m.Name
}

// Holder is the task holding the mutex (0: unlocked).
func (m *Mutex) Holder() TaskID { return m.holder }

// Waiting is the number of tasks blocked in Lock.
func (m *Mutex) Waiting() int { return len(m.waiters) }

// Lock blocks t until it holds the mutex. A mutex is not reentrant:
// locking one t holds panics.
func (m *Mutex) Lock(t *Task) {
	t.mustRun("Mutex.Lock")
	switch m.holder {
	case 0:
		m.holder = t.id
		return
	case t.id:
		panic(fmt.Sprintf("Lock of %s, which it already holds", m.label()))
	}
	m.waiters = append(m.waiters, t.id)
	t.block("lock " + m.label())
}

// TryLock takes the mutex if it is free.
func (m *Mutex) TryLock(t *Task) bool {
	t.mustRun("Mutex.TryLock")
	if m.holder != 0 {
		return false
	}
	m.holder = t.id
	return true
}

// Unlock releases the mutex t holds; the first waiter gets it.
func (m *Mutex) Unlock(t *Task) {
	t.mustRun("Mutex.Unlock")
	if m.holder != t.id {
		panic(fmt.Sprintf("Unlock of %s, which it does not hold (%s)", m.label(), holderText(m.holder)))
	}
	m.holder = 0
	m.handOff(t.ts)
}

// holderText says who holds a mutex, for a misuse's message.
func holderText(id TaskID) string {
	if id == 0 {
		return "nobody holds it"
	}
	return fmt.Sprintf("task %d holds it", id)
}

func (m *Mutex) handOff(ts *tasks) {
	for len(m.waiters) > 0 {
		next := ts.find(m.waiters[0])
		m.waiters = m.waiters[1:]
		if next == nil {
			continue
		}
		m.holder = next.id
		ts.wake(next, "unlock "+m.label())
		return
	}
}

// RWMutex is a task reader/writer mutex: any number of readers or one
// writer. Requests are served in arrival order, so a waiting writer holds
// back readers that come after it.
type RWMutex struct {
	Name    string
	writer  TaskID
	readers []TaskID
	waiters []rwWaiter
}

type rwWaiter struct {
	ID    TaskID
	Write bool
}

func (m *RWMutex) label() string {
	if m.Name == "" {
		return "rwmutex"
	}
	return m.Name
}

// Writer is the task holding the mutex for writing (0: none).
func (m *RWMutex) Writer() TaskID { return m.writer }

// Readers is the number of tasks holding it for reading.
func (m *RWMutex) Readers() int { return len(m.readers) }

// RLock blocks t until it holds the mutex for reading.
func (m *RWMutex) RLock(t *Task) {
	t.mustRun("RWMutex.RLock")
	if m.writer == 0 && len(m.waiters) == 0 {
		m.readers = append(m.readers, t.id)
		return
	}
	m.waiters = append(m.waiters, rwWaiter{ID: t.id})
	t.block("rlock " + m.label())
}

// Lock blocks t until it holds the mutex for writing.
func (m *RWMutex) Lock(t *Task) {
	t.mustRun("RWMutex.Lock")
	if m.writer == 0 && len(m.readers) == 0 && len(m.waiters) == 0 {
		m.writer = t.id
		return
	}
	m.waiters = append(m.waiters, rwWaiter{ID: t.id, Write: true})
	t.block("lock " + m.label())
}

// RUnlock releases t's read hold.
func (m *RWMutex) RUnlock(t *Task) {
	t.mustRun("RWMutex.RUnlock")
	i := -1
	for j, r := range m.readers {
		if r == t.id {
			i = j
			break
		}
	}
	if i < 0 {
		panic(fmt.Sprintf("RUnlock of %s, which it does not hold for reading", m.label()))
	}
	m.readers = append(m.readers[:i:i], m.readers[i+1:]...)
	m.grant(t.ts)
}

// Unlock releases t's write hold.
func (m *RWMutex) Unlock(t *Task) {
	t.mustRun("RWMutex.Unlock")
	if m.writer != t.id {
		panic(fmt.Sprintf("Unlock of %s, which it does not hold for writing (writer: task %d)", m.label(), m.writer))
	}
	m.writer = 0
	m.grant(t.ts)
}

// grant hands the mutex to the waiters at the head of the queue: one
// writer, or every reader up to the next writer.
func (m *RWMutex) grant(ts *tasks) {
	for len(m.waiters) > 0 && m.writer == 0 {
		w := m.waiters[0]
		next := ts.find(w.ID)
		if next == nil {
			m.waiters = m.waiters[1:]
			continue
		}
		if w.Write {
			if len(m.readers) > 0 {
				return
			}
			m.waiters = m.waiters[1:]
			m.writer = w.ID
			ts.wake(next, "unlock "+m.label())
			return
		}
		m.waiters = m.waiters[1:]
		m.readers = append(m.readers, w.ID)
		ts.wake(next, "runlock "+m.label())
	}
}

// Cond is a condition variable for tasks. Wait releases a Mutex while it
// waits and takes it back before it returns.
type Cond struct {
	Name    string
	waiters []TaskID
}

func (c *Cond) label() string {
	if c.Name == "" {
		return "cond"
	}
	return c.Name
}

// Waiting is the number of tasks blocked in Wait.
func (c *Cond) Waiting() int { return len(c.waiters) }

// Wait unlocks mu (which t holds), blocks until Signal or Broadcast wakes
// t, and locks mu again. As with sync.Cond, check the condition in a loop.
func (c *Cond) Wait(t *Task, mu *Mutex) {
	t.mustRun("Cond.Wait")
	if mu.holder != t.id {
		panic(fmt.Sprintf("Wait on %s with %s, which the task must hold (%s)", c.label(), mu.label(), holderText(mu.holder)))
	}
	mu.Unlock(t)
	c.waiters = append(c.waiters, t.id)
	t.block("cond " + c.label())
	mu.Lock(t)
}

// Signal wakes the longest-waiting task, if any.
func (c *Cond) Signal(env Env) {
	ts := instanceOf(env, "Cond.Signal").tasks
	for len(c.waiters) > 0 && ts != nil {
		next := ts.find(c.waiters[0])
		c.waiters = c.waiters[1:]
		if next != nil {
			ts.wake(next, "signal "+c.label())
			return
		}
	}
}

// Broadcast wakes every waiting task.
func (c *Cond) Broadcast(env Env) {
	ts := instanceOf(env, "Cond.Broadcast").tasks
	ws := c.waiters
	c.waiters = nil
	if ts == nil {
		return
	}
	for _, id := range ws {
		if next := ts.find(id); next != nil {
			ts.wake(next, "broadcast "+c.label())
		}
	}
}

// Semaphore is a bounded pool of Size identical resources (sockets,
// buffers): Acquire takes one, blocking while none is free; Release gives
// one back and hands it to the longest waiter.
type Semaphore struct {
	Name    string
	Size    int
	used    int
	waiters []TaskID
}

func (s *Semaphore) label() string {
	if s.Name == "" {
		return "semaphore"
	}
	return s.Name
}

// Used is the number of resources taken.
func (s *Semaphore) Used() int { return s.used }

// Waiting is the number of tasks blocked in Acquire.
func (s *Semaphore) Waiting() int { return len(s.waiters) }

// Acquire blocks t until it holds one resource.
func (s *Semaphore) Acquire(t *Task) {
	t.mustRun("Semaphore.Acquire")
	if s.Size <= 0 {
		panic(fmt.Sprintf("Acquire of %s, whose Size is %d", s.label(), s.Size))
	}
	if s.used < s.Size && len(s.waiters) == 0 {
		s.used++
		return
	}
	s.waiters = append(s.waiters, t.id)
	t.block("acquire " + s.label())
}

// Release gives one resource back, from a task or a handler.
func (s *Semaphore) Release(env Env) {
	in := instanceOf(env, "Semaphore.Release")
	if s.used <= 0 {
		panic(fmt.Sprintf("Release of %s, none of which is taken", s.label()))
	}
	s.used--
	ts := in.tasks
	for len(s.waiters) > 0 && ts != nil {
		next := ts.find(s.waiters[0])
		s.waiters = s.waiters[1:]
		if next != nil {
			s.used++
			ts.wake(next, "release "+s.label())
			return
		}
	}
}

package state

import (
	"strings"
	"sync/atomic"
	"testing"
)

type atomicConfig struct {
	Epoch   int
	members []string
}

type atomicHolder struct {
	config  atomic.Pointer[atomicConfig]
	pending atomic.Pointer[atomicConfig]
	last    *atomicConfig
}

// TestAtomicPointersShowWhatTheyHold: an atomic.Pointer keeps its
// pointer in an unsafe.Pointer field, which the flattening showed as
// "unsafe.Pointer": what the handler kept behind it was invisible, and
// two states that differ there flattened alike.
func TestAtomicPointersShowWhatTheyHold(t *testing.T) {
	build := func(epoch int) *atomicHolder {
		h := &atomicHolder{}
		c := &atomicConfig{Epoch: epoch, members: []string{"n1", "n2"}}
		h.config.Store(c)
		h.last = c
		return h
	}
	a, b := flatText(build(1)), flatText(build(2))
	if a == b {
		t.Fatalf("two states that differ behind an atomic.Pointer flatten alike:\n%s", a)
	}
	for _, want := range []string{"config.Epoch=1\n", `config.members[1]="n2"`, "pending=nil\n", "last=(same as config)\n"} {
		if !strings.Contains(a, want) {
			t.Errorf("no %q in\n%s", want, a)
		}
	}
}

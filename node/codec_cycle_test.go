package node

import (
	"reflect"
	"strings"
	"testing"
)

type cyc struct {
	N    int
	Next *cyc
}

type flat struct {
	A int
	B []string
}

// A message that refers to itself is refused with an error: the encoder
// recursed until Go's stack limit killed the process (a gigabyte of
// stack, no trace). A finite chain still encodes, and types that
// cannot loop are not walked at all.
func TestAMessageThatRefersToItselfIsRefused(t *testing.T) {
	c := NewCodec().MustRegister(cyc{}, flat{})
	self := &cyc{N: 1}
	self.Next = self
	if _, _, err := c.Encode(cyc{N: 0, Next: self}); err == nil || !strings.Contains(err.Error(), "does it refer to itself") {
		t.Fatalf("a message that refers to itself: %v", err)
	}
	var chain *cyc
	for i := range 20 {
		chain = &cyc{N: i, Next: chain}
	}
	if _, _, err := c.Encode(*chain); err != nil {
		t.Fatalf("a chain of 20: %v", err)
	}
	if mayLoop(reflect.TypeOf(flat{})) {
		t.Fatal("a struct of an int and strings is taken for one that may loop")
	}
}

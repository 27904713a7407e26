package node

import (
	"testing"
)

// The cost of a task switch at the dispatch core, without a driver: one
// resume event of a task that yields straight back, against one recv
// event whose handler does the same nothing.
//
//	go test ./node -run=^$ -bench='Dispatch(Resume|Recv)' -benchtime=200000x

type idle struct{}

func (idle) Init(Env)                 {}
func (idle) Receive(Env, ID, Message) {}
func (idle) Timer(Env, Timer)         {}

func BenchmarkDispatchResume(b *testing.B) {
	in := NewInstance(Config{ID: "a", Nodes: []ID{"a"}, Codec: NewCodec(), Store: NewMemStore(),
		New: func() Handler { return idle{} }})
	src := &fixedSource{store: NewMemStore()}
	ev := &Event{Kind: KindInit}
	if err := in.Dispatch(ev, src); err != nil {
		b.Fatal(err)
	}
	var id TaskID
	in.cur = ev
	id = Go(in, "spinner", func(t *Task) {
		for {
			t.Yield()
		}
	})
	in.cur = nil
	for b.Loop() {
		r, ok := in.TaskResume(id)
		if !ok {
			b.Fatal("not runnable")
		}
		if err := in.Dispatch(&r, src); err != nil {
			b.Fatal(err)
		}
	}
	in.Close()
}

func BenchmarkDispatchRecv(b *testing.B) {
	codec := NewCodec().MustRegister(ptrMsg2{})
	in := NewInstance(Config{ID: "a", Nodes: []ID{"a"}, Codec: codec, Store: NewMemStore(),
		New: func() Handler { return idle{} }})
	src := &fixedSource{store: NewMemStore()}
	if err := in.Dispatch(&Event{Kind: KindInit}, src); err != nil {
		b.Fatal(err)
	}
	name, payload, _ := codec.Encode(ptrMsg2{S: "x"})
	for b.Loop() {
		ev := Event{Kind: KindRecv, From: "a", MsgType: name, Payload: payload}
		if err := in.Dispatch(&ev, src); err != nil {
			b.Fatal(err)
		}
	}
}

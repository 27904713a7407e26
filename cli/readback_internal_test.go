package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/replay"
)

// A spilled trace that cannot be read back (Trace.Event panics with a
// replay.ReadBackError) ends the command with its error, not a panic and
// a goroutine dump; any other panic is still one.
func TestExecuteTurnsAReadBackFailureIntoAnError(t *testing.T) {
	rb := &replay.ReadBackError{Step: 25344, Err: os.ErrClosed}
	root := &cobra.Command{Use: "replay", RunE: func(*cobra.Command, []string) error { panic(rb) }}
	root.SetArgs(nil)
	_, err := execute(root)
	if !errors.Is(err, os.ErrClosed) || !strings.Contains(err.Error(), "step 25344") {
		t.Fatalf("execute: %v", err)
	}
	other := &cobra.Command{Use: "replay", RunE: func(*cobra.Command, []string) error { panic("a bug") }}
	other.SetArgs(nil)
	defer func() {
		if r := recover(); r != "a bug" {
			t.Fatalf("another panic came out as %v", r)
		}
	}()
	execute(other)
	t.Fatal("another panic was swallowed")
}

// An export or a report whose trace cannot be read back fails with that
// error and leaves no partial file: it wrote on a goroutine of its own,
// where the panic took the process down.
func TestAnOutputThatCannotReadTheTraceFails(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/out.jsonl"
	a := &App{Stdout: io.Discard, Stderr: io.Discard}
	rb := &replay.ReadBackError{Step: 3, Err: os.ErrClosed}
	err := writeOutput(a, path, nil, func(w io.Writer) error {
		fmt.Fprintln(w, "a first line")
		panic(rb)
	})
	if !errors.Is(err, os.ErrClosed) {
		t.Fatalf("writeOutput: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

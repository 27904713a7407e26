// Package cli implements every `replay` verb. It is importable so that a
// team can build a `replay` binary that knows its own systems:
//
//	func main() { os.Exit(cli.Main(system.NewRegistry(mysys.System))) }
package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/gdamore/tcell/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/replaycheck/replaycheck/internal/nearest"
	printableText "github.com/replaycheck/replaycheck/internal/printable"
	"github.com/replaycheck/replaycheck/internal/shellword"
	// Before go.starlark.net initialises: see the package.
	_ "github.com/replaycheck/replaycheck/internal/startupnoise"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/stall"
	"github.com/replaycheck/replaycheck/system"
)

// Exit codes shared by every verb.
const (
	ExitOK         = 0
	ExitViolations = 1 // the checker found violations; sim: the run failed
	ExitBadInput   = 2 // unreadable trace, unknown system, bad flags, broken script
	ExitDivergence = 3 // replay diverged from the recording
	// ExitPredicateError: a predicate raised, returned a non-bool or ran
	// out of its budget, so the run was not fully checked. It outranks
	// ExitViolations: a run with both exits 4.
	ExitPredicateError = 4
	// ExitInterrupted: Ctrl-C (or SIGTERM) stopped a verb before it wrote
	// its output, which it removed; 128 + SIGINT, as a shell reports it.
	ExitInterrupted = 130
)

// exitError carries the exit code a failure maps to.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func badInput(format string, args ...any) error {
	return &exitError{ExitBadInput, fmt.Errorf(format, args...)}
}

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code, err}
}

// App is one invocation's environment.
type App struct {
	Registry *system.Registry
	Stdout   io.Writer
	Stderr   io.Writer
	// Terminal reports whether progress may be drawn on Stderr.
	Terminal bool
	// Screen, if set, is where replay debug draws instead of the terminal
	// (a tcell.SimulationScreen in tests).
	Screen tcell.Screen
	// Program is how the commands this program prints (reproductions,
	// next steps, the debugger at a violation) invoke it: "replay" when
	// empty. Main sets it to the name the program was started by, so a
	// team's own binary (cli.Main with its systems) prints commands that
	// run its systems.
	Program string

	// builtins is where the embedded scripts are copied for loading,
	// shared by copies of the App (the debugger's quiet one); Run removes
	// it when it is a temporary folder of this command's own.
	builtins *builtinDir
	// watch watches the command's replays' handler calls (nil: none are,
	// as in the debugger, whose screen must be ended by the debugger).
	watch *stall.Watch
	// handlerBound is --handler-bound: how long one handler call may run
	// (0: no bound).
	handlerBound time.Duration
	// cmdline is the command line Run was given, for hints that read the
	// word after a flag.
	cmdline []string
}

// Main runs the command line in os.Args with the given systems and returns
// the exit code.
func Main(reg *system.Registry) int {
	app := &App{Registry: reg, Stdout: os.Stdout, Stderr: os.Stderr, Terminal: term.IsTerminal(int(os.Stderr.Fd())),
		Program: programCommand(os.Args[0])}
	defer interruptFallback(app.Stderr, app.name(), verbOf(app.root(), os.Args[1:]))()
	return app.Run(os.Args[1:])
}

// execute runs the command line, turning a spilled trace that could not
// be read back (replay.ReadBackError, a panic: Trace.Event returns no
// error) into the command's error.
func execute(root *cobra.Command) (cmd *cobra.Command, err error) {
	err = replay.CatchReadBack(func() error {
		cmd, err = root.ExecuteC()
		return err
	})
	return cmd, err // cmd is nil after a panic
}

// Run executes one command line and returns its exit code.
func (a *App) Run(args []string) int {
	if a.builtins == nil {
		a.builtins = &builtinDir{}
	}
	defer a.builtins.remove()
	// The command runs on a copy of the App whose writers go through a
	// gate: a command given up on as stuck (executeWatched) is left
	// running, and keeps writing through the copy's closed gate, never
	// to a's writers (which a later Run may be using).
	c := *a
	return c.run(args)
}

// run is Run on the command's own copy of the App.
func (a *App) run(args []string) int {
	// Output that could not be written is lost output: the command fails
	// (replay events > /dev/full exited 0).
	stderr := a.Stderr
	out := &gate{}
	stdout := &stickyWriter{w: out.wrap(a.Stdout)}
	a.Stdout, a.Stderr = stdout, out.wrap(stderr)
	a.cmdline = args
	root := a.root()
	root.SetArgs(args)
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	var prof profile
	var bound atomic.Int64 // --handler-bound once parsed, for the watch
	bound.Store(int64(stall.DefaultBound))
	root.PersistentFlags().StringVar(&prof.path, "cpuprofile", "", "write a Go CPU profile of this command to `FILE` (read it with go tool pprof)")
	root.PersistentFlags().StringVar(&prof.starlarkPath, "starlark-profile", "", "write a profile of the time spent in each Starlark function of the predicate script to `FILE` (go tool pprof -top FILE)")
	root.PersistentFlags().DurationVar(&a.handlerBound, "handler-bound", stall.DefaultBound, "how long one handler call may run, in wall-clock time, before the run (simulated or replayed) is given up as stuck: an endless loop, or a call that blocks outside the runtime (0: no bound)")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if err := noEmptyValues(cmd); err != nil {
			return err
		}
		if err := longFlagOneDash(cmd); err != nil {
			return err
		}
		if err := outputsAreNotInputs(cmd, args); err != nil {
			return err
		}
		if a.handlerBound < 0 {
			return badInput("--handler-bound %v: want 0 (no bound) or more", a.handlerBound)
		}
		bound.Store(int64(a.handlerBound))
		return prof.start(commandArgs(cmd, args))
	}
	a.watch = stall.NewWatch()
	verbName := a.name()
	if verb := verbOf(root, args); verb != "" {
		verbName += " " + verb
	}
	cmd, err, stuck := a.executeWatched(root, verbName, &bound)
	if stuck != nil {
		// The command's goroutine is stuck in a handler and cannot be
		// ended: it is left behind, and nothing it writes from now on
		// gets out. The profile says where it was.
		out.close()
		_ = prof.stop()
		if a.Terminal {
			fmt.Fprint(stderr, "\r\033[K") // a progress line drawn
		}
		fmt.Fprintf(stderr, "%s: %s\n", verbName, printable(oneLine(stuck.message())))
		return stuck.code
	}
	// A profile that was lost is said beside the command's own error,
	// which keeps its exit code.
	perr := prof.stop()
	if err == nil && perr != nil {
		err, perr = perr, nil
	}
	lost := stdout.err // reported beside err, which may say nothing
	switch {
	case err == nil && lost != nil:
		err, lost = fmt.Errorf("write standard output: %w", lost), nil
	case lost != nil && errors.Is(err, lost):
		lost = nil // the command's own error says it already
	}
	if err == nil {
		return ExitOK
	}
	code := ExitBadInput
	var ee *exitError
	var div *replay.Divergence
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case errors.As(err, &div):
		// Whichever verb met it, a trace that does not replay exits 3.
		code = ExitDivergence
	}
	name := a.name()
	if cmd != nil && cmd != root {
		// The whole path: "replay results merge" is not "replay merge".
		name += " " + strings.TrimPrefix(cmd.CommandPath(), root.Name()+" ")
	}
	msg := strings.TrimSpace(err.Error())
	if dir := a.builtins.current(); dir != "" {
		// A bundled script is named as the user named it, not by the
		// cache folder it was copied to.
		msg = strings.ReplaceAll(msg, dir+string(os.PathSeparator), "builtin:")
	}
	if msg != "" {
		fmt.Fprintf(a.Stderr, "%s: %s\n", name, printable(oneLine(unknownCommand(msg, a.name()))))
	}
	if lost != nil {
		fmt.Fprintf(a.Stderr, "%s: write standard output: %s\n", name, printable(oneLine(lost.Error())))
	}
	if perr != nil {
		fmt.Fprintf(a.Stderr, "%s: %s\n", name, printable(oneLine(perr.Error())))
	}
	return code
}

// stickyWriter remembers the first write error, for Run to report.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}

// noEmptyValues refuses a flag given with an empty value: an empty
// --results or --db fell back to the default silently, a file the user
// did not name (a shell variable that was not set).
func noEmptyValues(cmd *cobra.Command) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if err != nil {
			return
		}
		switch f.Value.Type() {
		case "string", "stringSlice", "stringArray":
			if v := f.Value.String(); v == "" || v == "[]" {
				name := "--" + f.Name
				if f.Shorthand != "" {
					name += " (-" + f.Shorthand + ")"
				}
				err = badInput("%s '': give it a value, or leave the flag out", name)
			}
		}
	})
	return err
}

// longFlagOneDash refuses a long flag written with one dash whose first
// letter is its own shorthand: -output=x.lz4 parses as -o utput=x.lz4,
// which wrote a file of that name. The word read as the flag's value is
// taken for its long name when it starts with the whole name, or its part
// before any "=" is the name cut short (-out) or misspelt (-outptu=).
func longFlagOneDash(cmd *cobra.Command) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if err != nil || f.Shorthand == "" || f.Value.Type() != "string" || !strings.HasPrefix(f.Name, f.Shorthand) || len(f.Name) == 1 {
			return
		}
		v := f.Value.String()
		word := f.Shorthand + v // what followed the dash
		name, value, hasValue := strings.Cut(word, "=")
		switch {
		case strings.HasPrefix(word, f.Name):
		case len(name) >= 3 && strings.HasPrefix(f.Name, name):
		case hasValue && len(name) >= 4 && nearest.Distance(name, f.Name) <= 2:
		default:
			return
		}
		want := "--" + f.Name + " VALUE"
		if hasValue {
			want = shellword.Quote("--" + f.Name + "=" + value)
		}
		err = badInput("-%s reads as -%s %s: write %s (a long flag takes two dashes)", word, f.Shorthand, shellword.Quote(v), want)
	})
	return err
}

// atLeast is a flag's value and the least it may be, for checkAtLeast.
type atLeast struct {
	flag  string
	value int
	least int
}

// checkAtLeast names the first flag below its least value, and only it:
// an error that listed every such flag named ones the user never gave.
func checkAtLeast(flags ...atLeast) error {
	for _, f := range flags {
		if f.value < f.least {
			want := "a positive number"
			if f.least == 0 {
				want = "0 or more"
			}
			return badInput("--%s %d: want %s", f.flag, f.value, want)
		}
	}
	return nil
}

// maxMessage bounds an error line: inputs echoed in it (a field path, an
// expression) may be arbitrarily long.
const maxMessage = 2000

// printable makes an error line safe for a terminal: control characters
// from the input are shown escaped, not interpreted, and the line is cut
// at maxMessage bytes.
func printable(s string) string {
	out := printableText.Escape(s)
	if len(out) > maxMessage {
		head := printableText.Cut(out, maxMessage)
		out = fmt.Sprintf("%s… (%d more bytes)", head, len(out)-len(head))
	}
	return out
}

// unknownCommand rewrites cobra's error for a mistyped command, whose
// suggestions are laid out on lines of their own ("... for \"replay\"\n\n
// Did you mean this?\n\tcheck"), which ran together on one line.
func unknownCommand(msg, prog string) string {
	head, suggestions, ok := strings.Cut(msg, "Did you mean this?")
	if !ok || !strings.HasPrefix(head, "unknown command ") {
		return msg
	}
	quoted, _, _ := strings.Cut(strings.TrimPrefix(head, "unknown command "), " for ")
	typed, err := strconv.Unquote(quoted)
	if err != nil {
		return msg
	}
	return didYouMean(typed, strings.Fields(suggestions), prog)
}

// didYouMean is the one line for a command typed under prog that is not
// one of its commands, naming the nearest (cobra's suggestions).
func didYouMean(typed string, suggestions []string, prog string) string {
	if len(suggestions) == 0 {
		return fmt.Sprintf("unknown command %q for %q", typed, prog)
	}
	var quoted []string
	for _, s := range suggestions {
		quoted = append(quoted, strconv.Quote(s))
	}
	return fmt.Sprintf("unknown command %q: did you mean %s? (%s --help lists the commands)", typed, strings.Join(quoted, " or "), prog)
}

// unknownSubcommand is badInput for typed, not a subcommand of cmd
// (called prog in messages).
func unknownSubcommand(cmd *cobra.Command, typed, prog string) error {
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // as cobra's own lookup sets it
	}
	return badInput("%s", didYouMean(typed, cmd.SuggestionsFor(typed), prog))
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

func (a *App) root() *cobra.Command {
	root := &cobra.Command{
		Use:   a.name(),
		Short: "Record-and-replay predicate debugger for distributed systems",
		Long: a.name() + ` re-executes recorded runs of distributed systems in causal (Lamport)
order, checks Starlark predicates over the states of all nodes after every
event, and lets you step forward and back through the run.

Traces come from the simulator (` + a.name() + ` sim) or from live binaries built with
-tags record. Every event is numbered by its step in the causal order and
printed as #STEP; the same number works in every verb.

A trace over ` + strconv.Itoa(replay.DefaultInMemory) + ` events (or whose events take over
` + humanize.IBytes(replay.DefaultInMemoryBytes) + ` decoded) is spilled to unnamed temporary files in
$TMPDIR while a verb runs, so memory grows only by its indexes (about
25 bytes per event);
REPLAY_IN_MEMORY=N keeps up to N events in memory instead (-1 spills every
trace).

` + a.scriptHelp() + `

Exit codes: 0 ok, 1 violations found (sim: the run failed; critical: the
search was stopped before it finished), 2 bad input, 3 replay diverged from
the recording, 4 a predicate could not be evaluated (the run was not fully
checked), 130 interrupted before the verb finished (docs/user-guide.md,
"Exit codes", says what each verb keeps; sim and fork end the run early
and keep its complete trace, exit 0).`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return badInput("%v (%ssee %s --help)", err, flagTypo(c, err, a.cmdline), c.CommandPath())
	})
	// cobra's own help command answers a topic it does not know with
	// "Unknown help topic" and exit 0.
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := root.Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				typed := strings.Join(args, " ")
				if len(args) > 0 {
					typed = args[len(args)-1]
				}
				return unknownSubcommand(root, typed, a.name())
			}
			return cmd.Help()
		},
	})
	root.AddCommand(a.simCmd(), a.infoCmd(), a.eventsCmd(), a.verifyCmd(), a.mergeCmd(), a.checkCmd(), a.demoCmd(), a.indexCmd(), a.debugCmd(), a.benchCmd(), a.scheduleCmd(), a.forkCmd(), a.exploreCmd(), a.criticalCmd(), a.predictCmd(), a.shrinkCmd(), a.exportCmd(), a.reportCmd(), a.vetCmd(), a.whyCmd(), a.stateCmd(), a.historyCmd(), a.resultsCmd())
	for _, c := range root.Commands() {
		c.SilenceErrors, c.SilenceUsage = true, true
		// One description of how a script argument resolves, in every
		// verb that takes one, so that it cannot drift between them.
		if strings.Contains(c.Use, ".star") || c.Flags().Lookup("preds") != nil || c.Flags().Lookup("check") != nil {
			c.Long = a.withScriptHelp(c.Long)
		}
		c.Example = a.examplesNote(examplesOf(a.prog(), c.Example))
		for _, sub := range c.Commands() {
			sub.Example = examplesOf(a.prog(), sub.Example)
		}
	}
	return root
}

// exampleLine is a line of a verb's examples that runs replay (after its
// indentation, or after "then:" and the like, a # comment left alone).
var exampleLine = regexp.MustCompile(`(?m)(^\s*|[;&|] |: |\()replay `)

// examplesOf is a verb's examples as a program started as prog runs
// them: a team's own binary's help showed "replay sim ...", which is not
// how its users run it.
func examplesOf(prog, example string) string {
	if prog == "replay" {
		return example
	}
	return exampleLine.ReplaceAllString(example, "${1}"+strings.ReplaceAll(prog, "$", "$$")+" ")
}

// namedInExample matches an example naming a bundled script or its
// system (paxos.lz4, scripts/raft.star, builtin:chord, sim raftkv),
// compiled once rather than at every command line.
var namedInExample = func() map[string]*regexp.Regexp {
	out := map[string]*regexp.Regexp{}
	for script, system := range scriptSystem {
		out[script] = regexp.MustCompile(`(^|[ :/])(` + regexp.QuoteMeta(script) + `|` + regexp.QuoteMeta(system) + `)([ .]|$)`)
	}
	return out
}()

// examplesNote says, in a binary of one's own (cli.Main with another
// registry), that examples naming a bundled system or script it lacks
// are examples, and which systems this binary knows instead.
func (a *App) examplesNote(example string) string {
	if a.Registry == nil {
		return example
	}
	for script, system := range scriptSystem {
		if a.knows(system) || !namedInExample[script].MatchString(example) {
			continue
		}
		known := strings.Join(a.Registry.Names(), ", ")
		if known == "" {
			known = "none"
		}
		// First, so that it is read before an example is pasted (a new
		// user ran the paxos ones in a binary of a 2PC system).
		return "  # The examples name systems bundled with replaycheck; this binary knows: " + known + ".\n" + example
	}
	return example
}

// exactlyOne takes exactly one WHAT: a second word is a mistake (a
// misspelt flag, say), not something to ignore.
func exactlyOne(what, hint string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := longFlagOneDash(cmd); err != nil {
			return err // its value's word left another as an argument
		}
		switch {
		case len(args) == 0:
			return badInput("missing %s (%ssee %s --help)", what, hint, cmd.CommandPath())
		case len(args) > 1:
			if err := scriptMisplaced(cmd, args[1:]); err != nil {
				return err
			}
			return badInput("want one %s, got %d: %s", what, len(args), strings.Join(args, " "))
		}
		return nil
	}
}

// requireArgs is cobra.MinimumNArgs with an error that says what is
// missing: it wants at least n arguments; what names them, and a
// command whose what names no PREDS takes no script among them.
func requireArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := longFlagOneDash(cmd); err != nil {
			return err
		}
		if len(args) < n {
			return badInput("missing %s (see %s --help)", what, cmd.CommandPath())
		}
		if !strings.Contains(what, "PREDS") {
			return scriptMisplaced(cmd, args)
		}
		// The script is the last argument: one before it too is a second
		// script (splitScript says it of a script given before a trace).
		last := len(args) - 1
		if i := slices.IndexFunc(args[:last], looksLikeScript); i >= 0 && looksLikeScript(args[last]) {
			return badInput("%s is a predicates script: %s takes one, as the last argument, after the traces", args[i], cmd.CommandPath())
		}
		return nil
	}
}

// scriptMisplaced refuses a predicates script given as an argument of a
// command that takes it with a flag (debug --preds, sim --check), or
// none: the verbs differ, and reading the script as a trace or a system
// said only that it was not one.
func scriptMisplaced(cmd *cobra.Command, args []string) error {
	i := slices.IndexFunc(args, looksLikeScript)
	if i < 0 {
		return nil
	}
	for _, flag := range []string{"preds", "check"} {
		if cmd.Flags().Lookup(flag) != nil {
			return badInput("%s is a predicates script: %s takes it with --%s %s", args[i], cmd.CommandPath(), flag, shellword.Path(args[i]))
		}
	}
	return badInput("%s is a predicates script, which %s does not take (see %s --help)", args[i], cmd.CommandPath(), cmd.CommandPath())
}

// looksLikeScript tells whether an argument is a predicates script: a
// bundled one, or a file named *.star holding text. A file that is a
// trace is one whatever its name says, and what is missing, empty, a
// directory or bytes is left for the verb to say as it is.
func looksLikeScript(a string) bool {
	if strings.HasPrefix(a, builtinPrefix) {
		_, trace := existing(a)
		return !trace
	}
	if !isScriptArg(a) {
		return false
	}
	head, present := headOf(a, 512)
	return present && !record.HasTraceMagic(head) && !bytes.ContainsRune(head, 0)
}

// flagTypo is "did you mean --x? " when err names a flag c does not have
// and one of its flags is a likely misspelling of it. A word after one
// dash that is not a cluster of c's letters is a file whose name starts
// with "-" (said how to name it), a letter and a number (-j2, or -j 2 in
// args, the command line: the one numeric flag of that letter), or a
// long flag given one dash; a single unknown letter is not matched
// against long names by spelling.
func flagTypo(c *cobra.Command, err error, args []string) string {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) || ne.GetSpecifiedName() == "" {
		return ""
	}
	typed, oneDash := ne.GetSpecifiedName(), false
	if short := ne.GetSpecifiedShortnames(); short != "" {
		if word := "-" + short; exists(word) {
			return fmt.Sprintf("%s is a file: write %s (or put -- before it); ", word, shellword.Path(word))
		}
		if len(short) == 1 {
			// -j 2: the letter alone, its value the next word.
			if i := slices.Index(args, "-"+short); i >= 0 && i+1 < len(args) {
				if n, err := strconv.ParseUint(args[i+1], 10, 64); err == nil {
					return longOfLetter(c, short, n)
				}
			}
			return ""
		}
		if n, err := strconv.ParseUint(short[1:], 10, 64); err == nil {
			// -j2: a letter and its value, as other tools take them;
			// the one long flag the letter starts is what was meant.
			return longOfLetter(c, short[:1], n)
		}
		typed, oneDash = short, true
	}
	if typed == "preds" || typed == "check" {
		// The verbs take the script three ways; say this one's.
		for _, flag := range []string{"preds", "check"} {
			if flag != typed && c.Flags().Lookup(flag) != nil {
				return "did you mean --" + flag + "? "
			}
		}
		if c.Flags().Lookup(typed) == nil && strings.Contains(c.Use, "PREDS") {
			return "the predicates script is the last argument, after the traces; "
		}
	}
	names := visibleFlags(c)
	if slices.Contains(names, typed) {
		return "did you mean --" + typed + "? "
	}
	n := nearest.Typo(names, typed)
	if oneDash && len(typed) < 5 && nearest.Distance(n, typed) > 1 {
		// A short word after one dash is as likely a letter and its
		// value run together (-fdot: -f dot) as a misspelt long flag.
		return ""
	}
	if n != "" {
		return "did you mean --" + n + "? "
	}
	return ""
}

// longOfLetter is "did you mean --jobs 2? " for -j2 when jobs is the one
// visible one-word flag of c that starts with letter and takes a number,
// or "".
func longOfLetter(c *cobra.Command, letter string, value uint64) string {
	var match []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		// A one-word flag: --jobs-events is no job count.
		if !f.Hidden && strings.HasPrefix(f.Name, letter) && !strings.Contains(f.Name, "-") && strings.Contains(f.Value.Type(), "int") {
			match = append(match, f.Name)
		}
	})
	if len(match) != 1 {
		return ""
	}
	return fmt.Sprintf("did you mean --%s %d? ", match[0], value)
}

// visibleFlags names c's flags that --help shows.
func visibleFlags(c *cobra.Command) []string {
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	return names
}

// maxJobs bounds --jobs: each job holds a replay of the world (and for
// check a segment's checker), so a count from a typo must not exhaust
// memory; far more than any machine's cores.
const maxJobs = 256

// jobsBound refuses a --jobs above maxJobs.
func jobsBound(n int) error {
	if n > maxJobs {
		return badInput("--jobs %d: at most %d (each job holds its own replay; the result does not depend on it)", n, maxJobs)
	}
	return nil
}

// verbOf names the command args run ("results merge"), for a line said
// before the command has started; "" when none is found.
func verbOf(root *cobra.Command, args []string) string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == root {
		return ""
	}
	return strings.TrimPrefix(cmd.CommandPath(), root.Name()+" ")
}

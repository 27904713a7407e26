package tui

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
	"github.com/rivo/uniseg"

	"github.com/replaycheck/replaycheck/replay"
)

// View draws a Model with tview and feeds it keys. It holds no state of
// its own beyond the widgets and which model it shows: a branch trace
// opened from the debugger (p, c) is a model of its own, and b goes back
// to its parent's.
type View struct {
	app *tview.Application
	m   *Model // the model shown; read and replaced on the UI goroutine only
	// progressMu serializes a background task's progress callbacks, which
	// a search may call from more than one goroutine.
	progressMu sync.Mutex

	// handled counts keys handled; drawn is handled as of the last draw
	// (tests wait on them).
	handled atomic.Int64
	drawn   atomic.Int64

	// rev counts what may have changed what the panels show: every key
	// but one that only edits a prompt's text, and every task's update.
	// A panel keeps its lines while rev and its size stay (UI goroutine
	// only): a paste into a prompt redrew every panel per character.
	rev uint64
	// renders counts panel renders that were not served from the cache
	// (tests).
	renders int

	// stopped is closed once the event loop ends: a task's report after
	// that is dropped, since tview's QueueUpdate would wait for it forever
	// (and a build that waits for its report never stops).
	stopped  chan struct{}
	stopOnce sync.Once

	// failed is what ended the session from a task's goroutine: a spilled
	// trace that could not be read back there.
	failMu sync.Mutex
	failed error
}

// NewView builds the widgets for a model. screen nil means the terminal.
func NewView(m *Model, screen tcell.Screen) *View {
	v := &View{app: tview.NewApplication(), m: m, stopped: make(chan struct{})}
	if screen != nil {
		v.app.SetScreen(screen)
	}
	timeline := v.panel(PanelTimeline, func(w, h int) []Line { return v.m.Timeline(h) })
	event := v.panel(-1, func(w, h int) []Line { return v.m.EventLines(w, h) })
	event.title = func() string { return "Event" }
	flow := v.panel(-1, func(w, h int) []Line {
		if v.m.grid {
			return v.m.Grid(w, h)
		}
		return v.m.Flow(w, h)
	})
	flow.title = func() string { return v.m.flowTitle() }
	st := v.panel(PanelState, func(w, h int) []Line { return v.m.State(w, h) })
	viol := v.panel(PanelViolations, func(w, h int) []Line { return v.m.Violations(w, h) })
	watches := v.panel(PanelWatches, func(w, h int) []Line { return v.m.Watches(w, h) })
	// The status line shows the prompt as it is typed: never cached.
	status := &panel{Box: tview.NewBox(), v: v, live: true, render: func(w, h int) []Line { return v.m.StatusLines(w) }}

	left := tview.NewFlex().SetDirection(tview.FlexRow).
		AddItem(timeline, 0, 5, false).
		AddItem(event, 7, 0, false).
		AddItem(flow, 0, 5, false)
	right := tview.NewFlex().SetDirection(tview.FlexRow).
		AddItem(st, 0, 5, false).
		AddItem(viol, 0, 2, false).
		AddItem(watches, 0, 2, false)
	body := tview.NewFlex().AddItem(left, 0, 3, false).AddItem(right, 0, 2, false)
	main := tview.NewFlex().SetDirection(tview.FlexRow).AddItem(body, 0, 1, false).AddItem(status, 2, 0, false)
	v.app.SetRoot(&overlay{Flex: main, v: v}, true)
	v.app.SetInputCapture(func(ev *tcell.EventKey) *tcell.EventKey {
		m := v.m
		m.HandleKey(ev)
		if !m.PromptEdited() {
			v.rev++
		}
		v.handled.Add(1)
		if m.Quit() {
			v.app.Stop()
			v.stop()
			return nil
		}
		v.startTasks()
		v.switchModel(m)
		return nil
	})
	v.app.SetAfterDrawFunc(func(tcell.Screen) { v.drawn.Store(v.handled.Load()) })
	return v
}

// Run shows the debugger until the user quits, or a task fails to read
// the trace.
func (v *View) Run() error {
	v.startTasks()
	defer v.stop()
	err := v.app.Run()
	v.failMu.Lock()
	defer v.failMu.Unlock()
	if v.failed != nil {
		return v.failed
	}
	return err
}

// End ends the session from outside the event loop (a signal), with
// err as what Run returns unless a failure came first. The screen is
// restored as at q.
func (v *View) End(err error) { v.fail(err) }

// fail ends the session with err (the first one counts).
func (v *View) fail(err error) {
	v.failMu.Lock()
	if v.failed == nil {
		v.failed = err
	}
	v.failMu.Unlock()
	v.app.Stop()
	// Before the event loop has made its screen Stop does nothing; the
	// loop then stops as soon as it runs (a goroutine left waiting if it
	// had stopped already, as queue's).
	go v.app.QueueUpdate(v.app.Stop)
	v.stop()
}

func (v *View) stop() { v.stopOnce.Do(func() { close(v.stopped) }) }

// queue runs f on the event loop (and draws, if draw) and waits for it; it
// reports false, without waiting, once the event loop has ended.
func (v *View) queue(f func(), draw bool) bool {
	select {
	case <-v.stopped:
		return false
	default:
	}
	ran := make(chan struct{})
	update := func() { f(); v.rev++ }
	go func() {
		// Blocks for good if the loop ends first: only this goroutine
		// is left behind.
		if draw {
			v.app.QueueUpdateDraw(update)
		} else {
			v.app.QueueUpdate(update)
		}
		close(ran)
	}()
	select {
	case <-ran:
		return true
	case <-v.stopped:
		return false
	}
}

// Model is the model shown (a branch's when one is open). UI goroutine
// only.
func (v *View) Model() *Model { return v.m }

// startTasks runs the tasks the shown model started: each task belongs
// to the model that started it, shown or not by the time it reports.
func (v *View) startTasks() {
	m := v.m
	for _, t := range m.TakeTasks() {
		go v.run(m, t)
	}
}

// switchModel shows the model m asked for (a branch it opened, or its
// parent), if m is still the one shown, and starts what the new one
// queued when it opened.
func (v *View) switchModel(m *Model) {
	n := m.TakeSwitch()
	if n == nil || m != v.m {
		return
	}
	v.m = n
	v.startTasks()
}

func (v *View) run(m *Model, t *Task) {
	// A trace the task cannot read back ends the session as one the UI
	// cannot read does (with the terminal restored, and one line).
	if err := replay.CatchReadBack(func() error { v.runTask(m, t); return nil }); err != nil {
		v.fail(err)
	}
}

func (v *View) runTask(m *Model, t *Task) {
	if t.Chunk != nil {
		for {
			done := make(chan bool, 1)
			// A quiet chunk has nothing to redraw.
			if !v.queue(func() { done <- t.Chunk() }, !t.Quiet) {
				return
			}
			if <-done {
				break
			}
			if t.Quiet {
				time.Sleep(2 * time.Millisecond) // keys come first
			}
		}
	}
	if t.Background != nil {
		if t.Stuck != nil {
			ran := make(chan struct{})
			defer close(ran)
			go v.watchStuck(m, t, ran)
		}
		var last time.Time
		t.Background(func(done, total int) {
			// The last report is never dropped: a phase may follow that
			// reports nothing more (indexing's compaction).
			if time.Since(last) > 100*time.Millisecond || done == total {
				last = time.Now()
				v.queue(func() { m.Progress(t.Name, done, total) }, true)
			}
		})
	}
	if t.Text != nil {
		var last time.Time
		t.Text(func(s string) {
			v.progressMu.Lock()
			defer v.progressMu.Unlock()
			if time.Since(last) > 100*time.Millisecond {
				last = time.Now()
				v.queue(func() { m.ProgressText(t, s) }, true)
			}
		})
	}
	v.queue(func() {
		if t.Done != nil {
			t.Done()
		}
		m.Finished(t)
		// A model not shown keeps the tasks it queues until it is again.
		if m == v.m {
			v.startTasks()
		}
		v.switchModel(m)
	}, true)
}

// watchStuck asks t every second what keeps it from going on, and shows
// it, until ran is closed.
func (v *View) watchStuck(m *Model, t *Task, ran <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ran:
			return
		case <-v.stopped:
			return
		case <-tick.C:
			if s := t.Stuck(); s != "" {
				v.queue(func() { m.TaskStuck(t, s) }, true)
			}
		}
	}
}

// panel is a bordered box whose lines come from the model at draw time.
type panel struct {
	*tview.Box
	v      *View
	which  Panel
	title  func() string
	render func(w, h int) []Line
	live   bool // rendered at every draw

	// The lines last rendered, for the size and View.rev they were for.
	lines      []Line
	w, h       int
	rev        uint64
	haveCached bool
}

// content is the panel's lines for its inner size: rendered again only
// when the view's rev or the size moved since the last render.
func (p *panel) content(w, h int) []Line {
	if !p.live && p.haveCached && p.rev == p.v.rev && p.w == w && p.h == h {
		return p.lines
	}
	p.lines, p.w, p.h, p.rev, p.haveCached = p.render(w, h), w, h, p.v.rev, true
	if !p.live {
		p.v.renders++
	}
	return p.lines
}

func (v *View) panel(which Panel, render func(w, h int) []Line) *panel {
	p := &panel{Box: tview.NewBox().SetBorder(true), v: v, which: which, render: render}
	p.title = func() string { return v.m.Title(which) }
	return p
}

func (p *panel) Draw(screen tcell.Screen) {
	if p.title != nil {
		// Escaped: a title holds user text (a map key ["x"] reads as a
		// tview region tag and vanished).
		// The focused panel is marked in its title as well as by its
		// colour: a colour alone is lost on a monochrome terminal and in
		// a pasted screen.
		title, color := " "+tview.Escape(p.title())+" ", tcell.ColorGray
		if p.which >= 0 && p.v.m.Focus() == p.which {
			title, color = " ● "+tview.Escape(p.title())+" ", tcell.ColorYellow
		}
		p.SetTitle(title).SetTitleAlign(tview.AlignLeft)
		p.SetBorderColor(color).SetTitleColor(color)
	}
	p.DrawForSubclass(screen, p)
	x, y, w, h := p.GetInnerRect()
	for i, l := range p.content(w, h) {
		if i >= h {
			break
		}
		drawLine(screen, x, y+i, w, l)
	}
}

// overlay draws the layout, then the open popup over it.
type overlay struct {
	*tview.Flex
	v *View
}

func (o *overlay) Draw(screen tcell.Screen) {
	o.Flex.Draw(screen)
	sw, sh := screen.Size()
	w := sw * 4 / 5
	pv, ok := o.v.m.PopupWindow(w-2, max(3, sh*3/4-2))
	if !ok {
		return
	}
	h := max(5, len(pv.Lines)+2)
	x, y := (sw-w)/2, (sh-h)/2
	box := tview.NewBox().SetBorder(true).SetTitle(" " + tview.Escape(pv.Title) + " ").SetTitleAlign(tview.AlignLeft).
		SetBorderColor(tcell.ColorAqua).SetTitleColor(tcell.ColorAqua)
	box.SetRect(x, y, w, h)
	box.Draw(screen)
	ix, iy, iw, _ := box.GetInnerRect()
	for i, l := range pv.Lines {
		if pv.Selectable && i == pv.Sel {
			l = Line{{l.String(), StyleSelected}}
		}
		drawLine(screen, ix, iy+i, iw, l)
	}
}

var styles = map[Style]tcell.Style{
	StyleNormal:    tcell.StyleDefault,
	StyleDim:       tcell.StyleDefault.Foreground(tcell.ColorGray),
	StyleCursor:    tcell.StyleDefault.Background(tcell.ColorTeal).Foreground(tcell.ColorWhite).Bold(true),
	StyleSelected:  tcell.StyleDefault.Reverse(true),
	StyleChanged:   tcell.StyleDefault.Foreground(tcell.ColorYellow).Bold(true),
	StyleViolation: tcell.StyleDefault.Foreground(tcell.ColorRed),
	StyleLost:      tcell.StyleDefault.Foreground(tcell.ColorRed).Bold(true),
	StyleLink:      tcell.StyleDefault.Foreground(tcell.ColorAqua),
	StyleHeader:    tcell.StyleDefault.Bold(true),
	StyleUnknown:   tcell.StyleDefault.Foreground(tcell.ColorFuchsia),
	StyleError:     tcell.StyleDefault.Foreground(tcell.ColorRed).Bold(true),
}

// drawLine writes a line's spans from x, clipped to w cells; a cursor or
// selected line fills the whole width.
func drawLine(screen tcell.Screen, x, y, w int, l Line) {
	end := x + w
	for _, s := range l {
		st := styles[s.Style]
		g := uniseg.NewGraphemes(s.Text)
		for g.Next() && x < end {
			rs := g.Runes()
			cw := max(1, g.Width())
			if x+cw > end {
				return
			}
			screen.SetContent(x, y, rs[0], rs[1:], st)
			x += cw
		}
	}
	if len(l) > 0 && (l[len(l)-1].Style == StyleCursor || l[len(l)-1].Style == StyleSelected) {
		for ; x < end; x++ {
			screen.SetContent(x, y, ' ', nil, styles[l[len(l)-1].Style])
		}
	}
}

package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/replaycheck/replaycheck/examples"
)

// chromium finds Debian's headless browser. CI installs it and sets
// CI=1: there a missing browser fails the test instead of skipping it.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI=%s but chromium is not installed (apt-get install chromium)", os.Getenv("CI"))
	}
	t.Skip("chromium is not installed; CI installs it")
	return ""
}

// TestReportInChromium writes the report of the demo's violation, opens it
// in a real headless Chromium and checks what the page drew: one arrow per
// message sent and received inside the window (counted from the trace, not
// from the page's data), the violation's text, the state diff, and that
// clicking a message highlights exactly its send and its receipt. Hiding
// a node removes its lane. The screenshot goes to REPORT_SCREENSHOT when
// set (docs/img/report.png is made that way).
func TestReportInChromium(t *testing.T) {
	browser := chromium(t)
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	trace := filepath.Join(dir, "demo.lz4")
	if code := app.Run([]string{"demo", "-o", trace}); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, errb.String())
	}
	page := filepath.Join(dir, "report.html")
	if code := app.Run([]string{"report", trace, filepath.Join(dir, "demo.star"), "-o", page}); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errb.String())
	}
	html, _ := os.ReadFile(page)
	for _, banned := range []string{"http://", "https://", "<link", "src="} {
		// The SVG namespace is an identifier, not a URL the page loads.
		if strings.Count(string(html), banned) != strings.Count(string(html), banned+"www.w3.org/2000/svg") {
			t.Errorf("the page refers to %q: it must work offline", banned)
		}
	}

	// Arrows the window (#239..#279) must show: messages sent and received in it.
	tr, err := app.loadTrace([]string{trace})
	if err != nil {
		t.Fatal(err)
	}
	wantArrows := 0
	for s := 239; s <= 279; s++ {
		ev := tr.Event(s)
		for i := range ev.Sends {
			for _, r := range tr.Receipts(ev.SentMsg(i)) {
				if r <= 279 {
					wantArrows++
				}
			}
		}
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.WindowSize(1200, 1600))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	var arrows, lanes, lanesAfter, endpoints int
	var title, diff, info string
	var shot []byte
	err = chromedp.Run(ctx,
		chromedp.Navigate("file://"+page),
		chromedp.WaitVisible(`.diagram svg`),
		chromedp.Evaluate(`document.querySelectorAll('.diagram line.msg:not(.stub):not(.lost)').length`, &arrows),
		chromedp.Evaluate(`document.querySelectorAll('.diagram line.lane').length`, &lanes),
		chromedp.Text(`section.violation h2`, &title),
		chromedp.Text(`table.diff`, &diff),
		chromedp.FullScreenshot(&shot, 100), // 100: PNG (lower is JPEG)
		// Click the first complete arrow (through its wider hit line).
		chromedp.Evaluate(`(() => {
			const l = document.querySelector('.diagram line.msg:not(.stub):not(.lost)');
			l.parentNode.dispatchEvent(new MouseEvent('click', {bubbles: true}));
			return 0;
		})()`, nil),
		chromedp.Evaluate(`document.querySelectorAll('.diagram circle.ev.hl').length`, &endpoints),
		chromedp.Text(`section.violation .info`, &info),
		chromedp.Click(`input[data-node="0"]`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('.diagram line.lane').length`, &lanesAfter),
	)
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if arrows != wantArrows || arrows == 0 {
		t.Errorf("%d message arrows drawn, want %d (messages sent and received in #239..#279)", arrows, wantArrows)
	}
	if !strings.Contains(title, "GlobalConsistency violated at step #269") {
		t.Errorf("violation heading %q", title)
	}
	if !strings.Contains(diff, "Agent.AcceptedValue") || !strings.Contains(diff, `"x7"`) {
		t.Errorf("state diff %q lacks the accepted value x7", diff)
	}
	if endpoints != 2 || !strings.Contains(info, "→") {
		t.Errorf("clicking a message highlighted %d events (want its send and receipt), info %q", endpoints, info)
	}
	if lanes != 7 || lanesAfter != 6 {
		t.Errorf("lanes %d, after hiding n1 %d; want 7 and 6", lanes, lanesAfter)
	}
	if len(shot) < 1000 || !bytes.HasPrefix(shot, []byte("\x89PNG")) {
		t.Fatalf("screenshot is not a PNG (%d bytes)", len(shot))
	}
	if p := os.Getenv("REPORT_SCREENSHOT"); p != "" {
		if err := os.WriteFile(p, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReportBadInput: exit 2 with one line, no file left.
func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	trace := filepath.Join(dir, "demo.lz4")
	if code := app.Run([]string{"demo", "-o", trace}); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, errb.String())
	}
	o := filepath.Join(dir, "r.html")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{trace, "demo.txt", "-o", o}, "is not a predicates script"},
		{[]string{trace, filepath.Join(dir, "missing.star"), "-o", o}, "missing.star"},
		{[]string{trace, filepath.Join(dir, "demo.star")}, "missing -o"},
		{[]string{trace, filepath.Join(dir, "demo.star"), "--before", "-1", "-o", o}, "want 0 or more"},
	} {
		errb.Reset()
		code := app.Run(append([]string{"report"}, tc.args...))
		msg := errb.String()
		if code != ExitBadInput || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, msg, tc.want)
		}
		if _, err := os.Stat(o); err == nil {
			t.Fatalf("%v left %s", tc.args, o)
		}
	}
}

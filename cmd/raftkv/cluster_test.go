package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// This file runs real raftkv processes on 127.0.0.1 for the end-to-end
// test and the recording overhead benchmark.

// goTool is the go command of the toolchain running the test.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// buildBinary builds a package of this module into dir.
func buildBinary(t testing.TB, dir, name, pkg string, tags ...string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	args := []string{"build", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.Command(goTool(), append(args, pkg)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return out
}

// freeAddrs returns n addresses on 127.0.0.1 that were free a moment ago.
func freeAddrs(t testing.TB, n int) []string {
	t.Helper()
	var lns []net.Listener
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return addrs
}

// procCluster is a raftkv cluster of real processes.
type procCluster struct {
	t        testing.TB
	bin      string
	dir      string
	traceDir string // "" when not recording
	ids      []string
	peers    string
	http     map[string]string
	client   *http.Client

	mu    sync.Mutex
	procs map[string]*exec.Cmd
	exits map[string]chan error
	cpu   time.Duration // user+system CPU of the processes that exited
}

func newProcCluster(t testing.TB, bin, dir string, n int, record bool) *procCluster {
	t.Helper()
	addrs := freeAddrs(t, 2*n)
	c := &procCluster{t: t, bin: bin, dir: dir, http: map[string]string{},
		procs: map[string]*exec.Cmd{}, exits: map[string]chan error{},
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	if record {
		c.traceDir = filepath.Join(dir, "traces")
	}
	var peers []string
	for i := 1; i <= n; i++ {
		id := fmt.Sprint(i)
		c.ids = append(c.ids, id)
		peers = append(peers, id+"="+addrs[2*(i-1)])
		c.http[id] = addrs[2*(i-1)+1]
	}
	c.peers = strings.Join(peers, ",")
	t.Cleanup(c.killAll)
	return c
}

func (c *procCluster) start(id string) {
	c.t.Helper()
	args := []string{"--id", id, "--peers", c.peers, "--http", c.http[id], "--data", filepath.Join(c.dir, "data"+id)}
	if c.traceDir != "" {
		args = append(args, "--trace-dir", c.traceDir)
	}
	logf, err := os.OpenFile(filepath.Join(c.dir, "node"+id+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	exit := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		if ps := cmd.ProcessState; ps != nil {
			c.mu.Lock()
			c.cpu += ps.UserTime() + ps.SystemTime()
			c.mu.Unlock()
		}
		logf.Close()
		exit <- err
	}()
	c.mu.Lock()
	c.procs[id], c.exits[id] = cmd, exit
	c.mu.Unlock()
}

func (c *procCluster) signal(id string, sig os.Signal) (chan error, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cmd, ok := c.procs[id]
	if !ok {
		return nil, false
	}
	cmd.Process.Signal(sig)
	exit := c.exits[id]
	delete(c.procs, id)
	delete(c.exits, id)
	return exit, true
}

// kill9 kills a node's process the way an operator's kill -9 does.
func (c *procCluster) kill9(id string) {
	if exit, ok := c.signal(id, syscall.SIGKILL); ok {
		<-exit
	}
}

// stop shuts a node down gracefully and checks that it exited cleanly.
func (c *procCluster) stop(id string) {
	c.t.Helper()
	exit, ok := c.signal(id, syscall.SIGTERM)
	if !ok {
		return
	}
	select {
	case err := <-exit:
		if err != nil {
			c.t.Errorf("node %s exited with %v after SIGTERM; log:\n%s", id, err, c.logTail(id))
		}
	case <-time.After(15 * time.Second):
		c.kill9(id)
		c.t.Errorf("node %s did not stop within 15 s of SIGTERM", id)
	}
}

func (c *procCluster) killAll() {
	for _, id := range c.ids {
		c.kill9(id)
	}
}

func (c *procCluster) logTail(id string) string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "node"+id+".log"))
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

func (c *procCluster) getJSON(id, path string, v any) error {
	resp, err := c.client.Get("http://" + c.http[id] + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s on node %s: %s", path, id, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func (c *procCluster) status(id string) (status, error) {
	var st status
	err := c.getJSON(id, "/status", &st)
	return st, err
}

// waitLeader waits until the given nodes agree on a leader among them.
func (c *procCluster) waitLeader(ids ...string) string {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		leaders := map[uint64]int{}
		for _, id := range ids {
			if st, err := c.status(id); err == nil && st.Leader != 0 {
				leaders[st.Leader]++
			}
		}
		for l, n := range leaders {
			if n == len(ids) {
				return fmt.Sprint(l)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("no leader agreed on by nodes %v within 20 s", ids)
	return ""
}

// put writes key=value through node id. It returns the HTTP status (0 if
// the node did not answer) and, for anything but 204, an error; retry says
// whether the write was simply not acknowledged (no leader, not committed
// in time, node unreachable) and may be tried again.
func (c *procCluster) put(ctx context.Context, id, key, value string) (status int, retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+c.http[id]+"/kv/"+key, strings.NewReader(value))
	if err != nil {
		return 0, false, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, true, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNoContent:
		return resp.StatusCode, false, nil
	case http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return resp.StatusCode, true, fmt.Errorf("%s: %s", resp.Status, body)
	}
	return resp.StatusCode, false, fmt.Errorf("PUT %s on node %s: %s: %s", key, id, resp.Status, body)
}

func (c *procCluster) get(id, key string) (string, int, error) {
	resp, err := c.client.Get("http://" + c.http[id] + "/kv/" + key)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode, err
}

// waitCaughtUp waits until every node has applied the same index and the
// same number of keys.
func (c *procCluster) waitCaughtUp(ids ...string) status {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last []status
	for time.Now().Before(deadline) {
		last = last[:0]
		ok := true
		for _, id := range ids {
			st, err := c.status(id)
			if err != nil {
				ok = false
				break
			}
			last = append(last, st)
		}
		if ok && len(last) == len(ids) {
			same := true
			for _, st := range last[1:] {
				same = same && st.Applied == last[0].Applied && st.Commit == last[0].Commit && st.Keys == last[0].Keys
			}
			if same && last[0].Applied > 0 {
				return last[0]
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("nodes did not catch up within 30 s: %+v", last)
	return status{}
}

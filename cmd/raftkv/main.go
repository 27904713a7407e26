// Command raftkv runs one node of the raftkv replicated key-value store
// (examples/raftkv, on etcd raft) over TCP, with an HTTP API:
//
//	raftkv --id N --peers 1=HOST:PORT,2=HOST:PORT,3=HOST:PORT --http HOST:PORT --data DIR [--trace-dir DIR]
//
// --peers lists every node's raft address, this one's included (it listens
// there); --data holds the node's store; --trace-dir exists only in a
// binary built with -tags record and records the node's trace to
// DIR/N.lz4. Node IDs in traces are the --id values.
//
// HTTP:
//
//	PUT /kv/{key}   body = value. Answers 204 once the write is committed
//	                and applied on this node; 503 if raft knows no leader
//	                (retry); 504 if it did not commit within 5 s (it may
//	                still commit later).
//	GET /kv/{key}   200 with the value, or 404. Any node answers from its
//	                own applied state, so a follower's answer may be stale;
//	                X-Raft-Role, X-Raft-Leader and X-Raft-Applied say whose
//	                state it is. Read from the leader for the latest value.
//	GET /kv         every pair, as a JSON object.
//	GET /status     id, role, term, leader, commit and applied index, keys.
//
// SIGINT or SIGTERM shuts the node down gracefully: the trace segment is
// ended and flushed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/replaycheck/replaycheck/examples/raftkv"
	"github.com/replaycheck/replaycheck/live"
	"github.com/replaycheck/replaycheck/node"
)

// writeTimeout bounds how long a PUT waits for its commit.
const writeTimeout = 5 * time.Second

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "raftkv:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("raftkv", flag.ContinueOnError)
	id := fs.String("id", "", "this node's ID (a positive integer, one of --peers)")
	peers := fs.String("peers", "", "every node's raft address: 1=HOST:PORT,2=HOST:PORT,...")
	httpAddr := fs.String("http", "", "HTTP API address HOST:PORT")
	data := fs.String("data", "", "data directory (the node's store)")
	var traceDir *string
	if live.Recording {
		traceDir = fs.String("trace-dir", "", "record this node's trace to DIR/ID.lz4")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *id == "":
		return errors.New("--id is required")
	case *peers == "":
		return errors.New("--peers is required")
	case *httpAddr == "":
		return errors.New("--http is required")
	case *data == "":
		return errors.New("--data is required")
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	addrs, err := parsePeers(*peers)
	if err != nil {
		return err
	}
	self := node.ID(*id)
	if _, err := raftkv.RaftID(self); err != nil {
		return fmt.Errorf("--id: %w", err)
	}
	if _, ok := addrs[self]; !ok {
		return fmt.Errorf("--id %s is not in --peers", self)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	opts := live.Options{System: raftkv.System, ID: self, Addrs: addrs, DataDir: *data, Logger: log}
	if traceDir != nil {
		opts.TraceDir = *traceDir
	}
	n, err := live.Start(opts)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: *httpAddr, Handler: api(n), ReadHeaderTimeout: 5 * time.Second}
	httpErr := make(chan error, 1)
	go func() { httpErr <- srv.ListenAndServe() }()
	log.Info("raftkv node started", "id", self, "http", *httpAddr, "restarted", n.Restarted(), "recording", opts.TraceDir != "")

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	var reason string
	var failed error
	select {
	case s := <-sig:
		reason = "signal: " + s.String()
	case err := <-httpErr:
		failed = fmt.Errorf("http: %w", err)
		reason = "error: " + failed.Error()
	case <-n.Done():
		failed = n.Err()
		reason = "node failed"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	if err := n.Close(reason); err != nil && failed == nil {
		failed = err
	}
	log.Info("raftkv node stopped", "reason", reason)
	return failed
}

// parsePeers reads "1=HOST:PORT,2=HOST:PORT".
func parsePeers(s string) (map[node.ID]string, error) {
	addrs := map[node.ID]string{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("--peers: %q is not ID=HOST:PORT", part)
		}
		if _, err := raftkv.RaftID(node.ID(k)); err != nil {
			return nil, fmt.Errorf("--peers: %w", err)
		}
		if _, dup := addrs[node.ID(k)]; dup {
			return nil, fmt.Errorf("--peers: node %s listed twice", k)
		}
		addrs[node.ID(k)] = v
	}
	return addrs, nil
}

// status is what GET /status reports.
type status struct {
	ID      uint64 `json:"id"`
	Role    string `json:"role"`
	Term    uint64 `json:"term"`
	Leader  uint64 `json:"leader"`
	Commit  uint64 `json:"commit"`
	Applied uint64 `json:"applied"`
	Keys    int    `json:"keys"`
}

func api(n *live.Node) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /kv/{key...}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20+1))
		if err != nil {
			http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if len(body) > 1<<20 {
			http.Error(w, "value larger than 1 MiB", http.StatusRequestEntityTooLarge)
			return
		}
		req := rand.Uint64() | 1 // nonzero: 0 marks entries that are no request
		ctx, cancel := context.WithTimeout(r.Context(), writeTimeout)
		defer cancel()
		var result string
		err = n.InputWait(ctx, raftkv.Put{Req: req, Key: r.PathValue("key"), Value: string(body)}, func(h node.Handler) bool {
			for _, c := range h.(*raftkv.Node).Completed() {
				if c.Req == req {
					result = c.Err
					return true
				}
			}
			return false
		})
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			http.Error(w, "not committed within "+writeTimeout.String()+"; it may still commit", http.StatusGatewayTimeout)
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		case result != "":
			http.Error(w, "write not accepted: "+result+"; retry", http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
	mux.HandleFunc("GET /kv/{key...}", func(w http.ResponseWriter, r *http.Request) {
		var value string
		var found bool
		var st status
		err := n.Read(r.Context(), func(h node.Handler) {
			k := h.(*raftkv.Node)
			value, found = k.KV[r.PathValue("key")]
			st = statusOf(k)
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("X-Raft-Role", st.Role)
		w.Header().Set("X-Raft-Leader", strconv.FormatUint(st.Leader, 10))
		w.Header().Set("X-Raft-Applied", strconv.FormatUint(st.Applied, 10))
		if !found {
			http.Error(w, "no such key", http.StatusNotFound)
			return
		}
		io.WriteString(w, value)
	})
	mux.HandleFunc("GET /kv", func(w http.ResponseWriter, r *http.Request) {
		var kv map[string]string
		err := n.Read(r.Context(), func(h node.Handler) {
			kv = make(map[string]string, len(h.(*raftkv.Node).KV))
			for k, v := range h.(*raftkv.Node).KV {
				kv[k] = v
			}
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, kv)
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		var st status
		if err := n.Read(r.Context(), func(h node.Handler) { st = statusOf(h.(*raftkv.Node)) }); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, st)
	})
	return mux
}

func statusOf(k *raftkv.Node) status {
	return status{ID: k.ID, Role: k.Role, Term: k.Term, Leader: k.Lead, Commit: k.Commit, Applied: k.Applied, Keys: len(k.KV)}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

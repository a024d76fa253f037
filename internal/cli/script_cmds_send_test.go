package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/infinite-improbability-drive/spawn/internal/modelserver"
	"github.com/infinite-improbability-drive/spawn/spawn/runs/inbox"
)

// await-request API TURN: waits (up to a minute) until a main request to
// API (anthropic or gemini) for the scripted turn TURN (its index in its
// script, from 0) has reached the model server, answered or still waiting
// for its answer.
func cmdAwaitRequest(ts *testscript.TestScript, neg bool, args []string) {
	srv := ts.Value(serverKey{}).(*serverSlot).srv
	if neg || len(args) != 2 || srv == nil {
		ts.Fatalf("usage: await-request API TURN (after modelserver)")
	}
	turn, err := strconv.Atoi(args[1])
	ts.Check(err)
	awaitRequest(ts, srv, "a "+args[0]+" request for turn "+args[1], func(r modelserver.Request) bool {
		return r.Main && r.API == args[0] && r.Turn == turn
	})
}

// await-request-contains TEXT [REPO]: waits (up to a minute) until a main
// request reaching the model server holds TEXT (in its JSON body), and
// logs how long after the message was sent: the delay from `spawn send`
// posting a message holding TEXT to the model reading it. With REPO, the
// message's sent_at and delivered_at are read from the inbox of the
// newest run of REPO.
func cmdAwaitRequestContains(ts *testscript.TestScript, neg bool, args []string) {
	srv := ts.Value(serverKey{}).(*serverSlot).srv
	if neg || len(args) < 1 || len(args) > 2 || srv == nil {
		ts.Fatalf("usage: await-request-contains TEXT [REPO] (after modelserver)")
	}
	quoted, err := json.Marshal(args[0])
	ts.Check(err)
	needle := bytes.Trim(quoted, `"`)
	req := awaitRequest(ts, srv, "a request holding "+args[0], func(r modelserver.Request) bool {
		return r.Main && bytes.Contains(r.Body, needle)
	})
	if len(args) < 2 {
		return
	}
	inboxes, err := filepath.Glob(filepath.Join(ts.MkAbs(args[1]), ".spawn", "runs", "*", "inbox"))
	ts.Check(err)
	for _, dir := range inboxes {
		delivered, err := inbox.New(dir).Delivered()
		ts.Check(err)
		for _, m := range delivered {
			if !strings.Contains(m.Text, args[0]) || m.DeliveredAt == nil {
				continue
			}
			ts.Logf("send latency for %q: sent %s -> delivered (%s) +%s -> in a model request +%s; sent to model request: %s",
				args[0], m.SentAt.Format("15:04:05.000"), m.How, m.DeliveredAt.Sub(m.SentAt).Round(time.Millisecond),
				req.Start.Sub(*m.DeliveredAt).Round(time.Millisecond), req.Start.Sub(m.SentAt).Round(time.Millisecond))
			return
		}
	}
	ts.Fatalf("no delivered message holding %q in the inbox of %s", args[0], args[1])
}

// awaitRequest polls the server's log until a request satisfies ok, and
// returns it.
func awaitRequest(ts *testscript.TestScript, srv *modelserver.Server, what string, ok func(modelserver.Request) bool) modelserver.Request {
	began := time.Now()
	for time.Since(began) < agentWait {
		for _, r := range srv.Requests() {
			if ok(r) {
				return r
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	reqs := srv.Requests()
	last := "none"
	if len(reqs) > 0 {
		last = fmt.Sprintf("the last %s after the wait began", reqs[len(reqs)-1].Start.Sub(began).Round(time.Millisecond))
	}
	ts.Fatalf("%s did not reach the model server within %s (%d requests, %s)", what, agentWait, len(reqs), last)
	return modelserver.Request{}
}

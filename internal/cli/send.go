package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/infinite-improbability-drive/spawn/observability"
	"github.com/infinite-improbability-drive/spawn/spawn/runs"
)

// sendOptions is `spawn send` after flag parsing.
type sendOptions struct {
	Repo    string
	Ref     string
	Message string
	Wait    time.Duration
	JSON    bool
}

func newSendCmd(d *deps) *cli.Command {
	return &cli.Command{
		Name:      "send",
		Usage:     "send the running coder a message",
		ArgsUsage: "<id> <message>",
		Description: "The coder gets the message after its next tool call (or, were it about to finish its turn, it\n" +
			"goes on and reads it first). A message sent while the reviewer works, or between turns, is put\n" +
			"at the top of the coder's next prompt. The record lists each message with when and how it was\n" +
			"delivered (messages).\n\n" +
			"spawn send waits up to --wait to see the message delivered and says \"delivered\"; otherwise it\n" +
			"says \"queued\" and the message waits for the coder. The id may be a unique prefix, or last.\n" +
			"A run that is not live (finished, abandoned) is an error: exit code 2.\n\n" +
			"Example:\n   spawn send last \"use the existing logger, not fmt.Println\"\n   spawn send 20261123-0915 --wait 0 \"stop adding tests, the task is the endpoint\"",
		OnUsageError: onUsageError,
		Flags: []cli.Flag{
			repoFlag(),
			&cli.DurationFlag{Name: "wait", Usage: "how long to wait to see the message delivered (0: do not wait)", Value: runs.SendWait},
			&cli.BoolFlag{Name: "json", Usage: "print what became of the message as one JSON document"},
		},
		Action: func(c *cli.Context) error {
			if err := danglingValue(c); err != nil {
				return err
			}
			if c.NArg() < 2 {
				return usageError{fmt.Errorf("spawn send needs a run id and a message, e.g. spawn send last \"use the existing logger\"")}
			}
			if c.Duration("wait") < 0 {
				return usageError{fmt.Errorf("--wait %s is negative; give how long to wait, e.g. 3s, or 0 not to wait", c.Duration("wait"))}
			}
			return runSend(c.Context, d, &sendOptions{
				Repo:    c.String("repo"),
				Ref:     c.Args().First(),
				Message: strings.Join(c.Args().Tail(), " "),
				Wait:    c.Duration("wait"),
				JSON:    c.Bool("json"),
			})
		},
	}
}

// runSend is `spawn send`: it posts the message to the run's inbox and
// says whether the coder got it within the wait, or it is queued.
func runSend(ctx context.Context, d *deps, opts *sendOptions) error {
	repo, err := d.openRepo(ctx, opts.Repo)
	if err != nil {
		return err
	}
	sent, err := repo.Send(ctx, opts.Ref, opts.Message, opts.Wait)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(d.io.Out, sent)
	}
	if !sent.Delivered {
		fmt.Fprintf(d.io.Out, "queued: the coder of run %s gets it after its next tool call, or in its next prompt\n", sent.Run)
		return nil
	}
	m := sent.Message
	fmt.Fprintf(d.io.Out, "delivered: the coder of run %s got it %s, %s after it was sent\n",
		sent.Run, deliveredHow(m.How), m.DeliveredAt.Sub(m.SentAt).Round(time.Millisecond))
	return nil
}

// deliveredHow says how a message reached the coder.
func deliveredHow(how observability.Delivery) string {
	switch how {
	case observability.DeliveryToolCall:
		return "after a tool call"
	case observability.DeliveryStop:
		return "as it was about to finish its turn"
	case observability.DeliveryPrompt:
		return "in its prompt"
	}
	return string(how)
}

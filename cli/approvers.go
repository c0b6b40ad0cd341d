package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/aegis-run/aegis/evidence"
	"github.com/aegis-run/aegis/session"
)

// channelNobody is who refuses the approval requests of a run that has
// nobody to ask: as the session's messages say it, "denied by default:
// nobody could be asked (...)". At most 128 characters (the session clips
// a channel there).
const channelNobody = "default: nobody could be asked (stdin is not a terminal; give --approve or --listen ADDR, or run in a terminal)"

// nobodyApprover answers the approval requests of a run without a
// terminal, an --approve rule or a live channel: nobody can be asked, so
// each is refused, and the terminal is told what would let a person
// answer.
type nobodyApprover struct {
	out io.Writer
}

// Approve refuses req, saying why on the terminal.
func (a nobodyApprover) Approve(ctx context.Context, req session.ApprovalRequest) (session.ApprovalAnswer, error) {
	fmt.Fprintf(a.out, "aegis: approval required (%s risk): %s: refused, nobody could be asked (stdin is not a terminal): run in a terminal, give --approve low-and-medium-only, or --listen ADDR to answer in the web console\n",
		req.Risk, session.Sanitize(session.DescribeRequest(req), 300))
	return session.ApprovalAnswer{Approved: false, Approver: evidence.RulePrefix + string(session.ApproveDeny), Channel: channelNobody}, nil
}

// announcedApprover is the live channel's approver of a run, which also
// says on the terminal that a request waits and where to answer it: the
// person watching the terminal may not have the console open.
type announcedApprover struct {
	next    session.Approver
	out     io.Writer
	timeout time.Duration
	// console returns the console's address for the session, without
	// its token, which is in tokenFile.
	console   func() string
	tokenFile string
}

// Approve announces req on the terminal, then waits for next's answer.
func (a *announcedApprover) Approve(ctx context.Context, req session.ApprovalRequest) (session.ApprovalAnswer, error) {
	fmt.Fprintf(a.out, "aegis: approval waiting (%s risk): %s: approve or deny it in the live console %s (bearer token in %s; refused if unanswered in %v)\n",
		req.Risk, session.Sanitize(session.DescribeRequest(req), 300), a.console(), a.tokenFile, a.timeout)
	return a.next.Approve(ctx, req)
}

package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/session"
)

// TestRunApproverChoice: which approver a run gets from --approve,
// --listen and its stdin. Without a terminal (a pipe, /dev/null as a
// service gets) and without a rule, nobody can be asked.
func TestRunApproverChoice(t *testing.T) {
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	tests := []struct {
		name    string
		o       runOptions
		in      io.Reader
		want    string // the approver's type, or "usage" for a usage error
		channel string // of its refusal of a high-risk request
	}{
		{"piped stdin", runOptions{}, strings.NewReader(""), "cli.nobodyApprover", channelNobody},
		{"/dev/null stdin", runOptions{}, devNull, "cli.nobodyApprover", channelNobody},
		{"pipe stdin", runOptions{}, pr, "cli.nobodyApprover", channelNobody},
		{"deny rule", runOptions{approve: "deny"}, devNull, "session.PolicyApprover", "the --approve=deny rule (no person was asked)"},
		{"low and medium", runOptions{approve: "low-and-medium-only"}, devNull, "session.PolicyApprover", "the --approve=low-and-medium-only rule (no person was asked)"},
		{"live channel", runOptions{listen: "127.0.0.1:0"}, devNull, "<nil>", ""},
		{"ask on /dev/null", runOptions{approve: "ask"}, devNull, "usage", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := runApprover(&tt.o, Stdio{In: tt.in, Err: io.Discard})
			got := typeName(a)
			if err != nil {
				got = "usage"
			}
			if got != tt.want {
				t.Fatalf("approver %s (%v), want %s", got, err, tt.want)
			}
			if a == nil {
				return
			}
			ans, err := a.Approve(context.Background(), session.ApprovalRequest{Action: contract.Action{ID: "a1", Type: contract.ActClick, Selector: "#pay"}, Risk: contract.RiskHigh})
			if err != nil || ans.Approved || ans.Channel != tt.channel {
				t.Errorf("answer %+v, %v; want a refusal by %q", ans, err, tt.channel)
			}
		})
	}
	if len(channelNobody) > 128 {
		t.Errorf("channelNobody has %d characters; the session clips a channel at 128", len(channelNobody))
	}
}

// typeName is the approver's type, such as "cli.nobodyApprover".
func typeName(v session.Approver) string {
	if v == nil {
		return "<nil>"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", v), "*")
}

// TestNobodyApproverSays: the terminal is told why an approval was
// refused, and what would let a person answer.
func TestNobodyApproverSays(t *testing.T) {
	var errb bytes.Buffer
	_, _ = nobodyApprover{out: &errb}.Approve(context.Background(), session.ApprovalRequest{
		Action: contract.Action{ID: "a1", Type: contract.ActClick, Selector: "#submit"}, Target: &contract.Element{Text: "Place order"}, Risk: contract.RiskHigh,
	})
	want := "aegis: approval required (high risk): click #submit \"Place order\": refused, nobody could be asked (stdin is not a terminal): run in a terminal, give --approve low-and-medium-only, or --listen ADDR to answer in the web console\n"
	if got := errb.String(); got != want {
		t.Errorf("stderr\n got %q\nwant %q", got, want)
	}
}

// TestAnnouncedApprover: with --listen, the terminal says that an approval
// waits, what it is about and where to answer; the live approver answers.
func TestAnnouncedApprover(t *testing.T) {
	var errb bytes.Buffer
	next := session.ApproverFunc(func(ctx context.Context, req session.ApprovalRequest) (session.ApprovalAnswer, error) {
		return session.ApprovalAnswer{Approved: true, Approver: "live client", Channel: session.ChannelLive}, nil
	})
	a := &announcedApprover{next: next, out: &errb, timeout: 5 * time.Minute, console: func() string { return "http://127.0.0.1:8099/?session=s-1" }, tokenFile: "/run/token"}
	ans, err := a.Approve(context.Background(), session.ApprovalRequest{
		Action: contract.Action{ID: "a1", Type: contract.ActClick, Selector: "#submit"}, Target: &contract.Element{Text: "Place order"}, Risk: contract.RiskHigh,
	})
	if err != nil || !ans.Approved || ans.Channel != session.ChannelLive {
		t.Errorf("answer %+v, %v; want the live approver's", ans, err)
	}
	want := "aegis: approval waiting (high risk): click #submit \"Place order\": approve or deny it in the live console http://127.0.0.1:8099/?session=s-1 (bearer token in /run/token; refused if unanswered in 5m0s)\n"
	if got := errb.String(); got != want {
		t.Errorf("stderr\n got %q\nwant %q", got, want)
	}
}

// TestRunWithoutTerminal: a run on the demo shop whose order needs an
// approval, with stdin no terminal and no --approve: the order is refused
// because nobody could be asked, and every message says so, not that
// someone refused.
func TestRunWithoutTerminal(t *testing.T) {
	site := demoSite(t)
	task := writeFile(t, "task.json", `{"goal":"Order","urls":["`+site+`/form"],"hints":{"steps":[
		"type \"Ada Lovelace\" into \"Full name\"",
		"click \"Place order\""]}}`, 0o644)
	code, o, stderr := runOutput(t, "run", "--evidence", t.TempDir(), task)
	if code != ExitSessionFailed {
		t.Fatalf("exit %d, want %d\n%s", code, ExitSessionFailed, stderr)
	}
	for _, want := range []string{
		`aegis: approval required (high risk): click #submit "Place order": refused, nobody could be asked (stdin is not a terminal): run in a terminal, give --approve low-and-medium-only, or --listen ADDR to answer in the web console`,
		`click #submit "Place order"  DENIED (high): approval_denied: denied by default: nobody could be asked (stdin is not a terminal; give --approve or --listen ADDR, or run in a terminal)`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "terminal:") || strings.Contains(stderr, "a person at the terminal") {
		t.Errorf("stderr names a terminal approver though nobody was asked:\n%s", stderr)
	}
	verifyOutput(t, o)
}

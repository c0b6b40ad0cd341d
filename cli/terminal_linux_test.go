//go:build linux

package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: what a person's terminal is to
// aegis (the follower) and to the terminal emulator (the leader).
func openPTY(t *testing.T) (leader, follower *os.File) {
	t.Helper()
	leader, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { leader.Close() })
	fd := int(leader.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Skipf("pseudo-terminal number: %v", err)
	}
	follower, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { follower.Close() })
	return leader, follower
}

func TestIsTerminal(t *testing.T) {
	_, tty := openPTY(t)
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
	regular, err := os.Open(writeFile(t, "f", "x", 0o644))
	if err != nil {
		t.Fatal(err)
	}
	defer regular.Close()
	tests := []struct {
		name string
		v    any
		want bool
	}{
		{"a terminal", tty, true},
		{"/dev/null", devNull, false},
		{"a pipe", pr, false},
		{"a file", regular, false},
		{"a buffer", &bytes.Buffer{}, false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		if got := isTerminal(tt.v); got != tt.want {
			t.Errorf("isTerminal(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestReportOnTerminal: aegis report without -o on a terminal writes no
// HTML there: the report goes beside the bundle, and stderr says where.
// Without a terminal (a redirect, a pipe) or with -o -, it is on stdout.
func TestReportOnTerminal(t *testing.T) {
	leader, tty := openPTY(t)
	// The terminal shows what reaches it (read as it comes, so that a
	// report written there could not block on a full terminal).
	shown := make(chan string, 1)
	go func() {
		var b strings.Builder
		r := bufio.NewReader(leader)
		for {
			line, err := r.ReadString('\n')
			b.WriteString(line)
			if err != nil || strings.Contains(line, "END-OF-TEST") {
				shown <- b.String()
				return
			}
		}
	}()
	bundle := copyBundle(t)
	var errb bytes.Buffer
	code := Run(t.Context(), []string{"report", bundle}, Stdio{Out: tty, Err: &errb})
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	path := bundle + ".report.html"
	if got, want := errb.String(), "aegis: report of cus_01HZX4K9 written to "+path+" (open it in a browser)\n"; got != want {
		t.Errorf("stderr\n got %q\nwant %q", got, want)
	}
	page, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(page, []byte("<html")) {
		t.Errorf("%s: %v, %d bytes", path, err, len(page))
	}
	// What the terminal showed: nothing before the end mark.
	if _, err := tty.WriteString("END-OF-TEST\n"); err != nil {
		t.Fatal(err)
	}
	if got := <-shown; strings.TrimSpace(got) != "END-OF-TEST" {
		t.Errorf("the terminal showed %d bytes before the end mark, want none:\n%.300s", len(got), got)
	}
	if code := Run(t.Context(), []string{"verify", bundle}, Stdio{Out: &bytes.Buffer{}, Err: &errb}); code != ExitOK {
		t.Errorf("the bundle no longer verifies once its report is beside it: %s", errb.String())
	}

	for _, args := range [][]string{{"report", bundle}, {"report", bundle, "-o", "-"}} {
		var out bytes.Buffer
		if code := Run(t.Context(), args, Stdio{Out: &out, Err: &errb}); code != ExitOK || !bytes.Contains(out.Bytes(), []byte("<html")) {
			t.Errorf("aegis %s to a buffer: exit %d, %d bytes of stdout", strings.Join(args, " "), code, out.Len())
		}
	}
	wd, _ := os.Getwd()
	if got, _ := reportPath(filepath.Join("ev", "b.tar.zst")); got != filepath.Join(wd, "ev", "b.report.html") {
		t.Errorf("reportPath of a packed bundle = %q, want %q", got, filepath.Join(wd, "ev", "b.report.html"))
	}
}

// TestReportPath: a report never lands inside its bundle (where the
// bundle would no longer verify: "aegis report ." made "..report.html"
// there), and the report beside the bundle never replaces a file unless
// -o names it.
func TestReportPath(t *testing.T) {
	_, tty := openPTY(t)
	bundle := copyBundle(t)
	beside := bundle + ".report.html"
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(bundle, link); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.html")
	tests := []struct {
		name string
		dir  string // the working directory
		args []string
		code int
		err  string // stderr, BESIDE for the report's path
		file string // the report written
	}{
		{"the bundle as .", bundle, []string{"report", "."}, ExitOK, "aegis: report of cus_01HZX4K9 written to BESIDE (open it in a browser)\n", beside},
		{"never replaced", bundle, []string{"report", "."}, ExitUsage, "aegis: BESIDE exists: give -o BESIDE to replace it, or -o another FILE.html\n", ""},
		{"replaced with -o", "", []string{"report", bundle, "-o", beside}, ExitOK, "aegis: report of cus_01HZX4K9 written to BESIDE (open it in a browser)\n", beside},
		{"-o inside", "", []string{"report", bundle, "-o", filepath.Join(bundle, "r.html")}, ExitUsage,
			"aegis: -o " + filepath.Join(bundle, "r.html") + ": inside the bundle " + bundle + ", where the report would be a file its ledger does not record (aegis verify: extra); write it beside the bundle\n", ""},
		{"-o inside, relative", bundle, []string{"report", ".", "-o", "provenance/r.html"}, ExitUsage, "-o provenance/r.html: inside the bundle .,", ""},
		{"-o inside through a link", "", []string{"report", bundle, "-o", filepath.Join(link, "r.html")}, ExitUsage, "inside the bundle", ""},
		{"-o the bundle itself", "", []string{"report", bundle, "-o", bundle}, ExitUsage, "inside the bundle", ""},
		{"-o elsewhere", "", []string{"report", link, "-o", other}, ExitOK, "written to " + other, other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.dir != "" {
				t.Chdir(tt.dir)
			}
			var errb bytes.Buffer
			code := Run(t.Context(), tt.args, Stdio{Out: tty, Err: &errb})
			if code != tt.code {
				t.Errorf("exit %d, want %d: %s", code, tt.code, errb.String())
			}
			if want := strings.ReplaceAll(tt.err, "BESIDE", beside); !strings.Contains(errb.String(), want) {
				t.Errorf("stderr %q, want %q", errb.String(), want)
			}
			if tt.file != "" {
				if page, err := os.ReadFile(tt.file); err != nil || !bytes.Contains(page, []byte("<html")) {
					t.Errorf("%s: %v, %d bytes", tt.file, err, len(page))
				}
			}
			if code, _, errOut := run(t, "", "verify", bundle); code != ExitOK {
				t.Errorf("the bundle no longer verifies: %s", errOut)
			}
		})
	}
}

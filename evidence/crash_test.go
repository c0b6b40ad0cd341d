package evidence

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// The crash test: a child process (this test binary, re-executed) writes
// a session; the parent kills it with SIGKILL at a random instant, again
// and again, and verifies what each kill left: a sealed bundle, or an
// unsealed one whose complete entries all verify and are exactly the first
// entries of an undisturbed run (no entry ever rewritten).

const (
	crashEnvDir  = "AEGIS_EVIDENCE_CRASH_DIR"
	crashEnvSync = "AEGIS_EVIDENCE_CRASH_SYNC"
	crashSteps   = 40
)

// TestCrashChild is the child's body; it does nothing unless the crash
// test started it.
func TestCrashChild(t *testing.T) {
	root := os.Getenv(crashEnvDir)
	if root == "" {
		t.Skip("run by TestCrashKill9")
	}
	if err := schemas.Check(); err != nil { // warm up before "ready"
		t.Fatal(err)
	}
	os.Stdout.WriteString("ready\n")
	crashSession(t, root, os.Getenv(crashEnvSync) == "1")
}

// crashSession writes the session the crash test kills.
func crashSession(t testing.TB, root string, syncEvery bool) string {
	opts := Options{Clock: fixedClock()}
	if syncEvery {
		opts.Sync = SyncEveryRecord
	}
	w, err := Create(root, testManifest(), opts)
	if err != nil {
		t.Fatal(err)
	}
	writeSession(t, w, fixture{steps: crashSteps, snapshot: string(bytes.Repeat([]byte("<p>crash test</p>"), 400))})
	if _, err := w.Seal(context.Background(), contract.SessionCompleted, time.Date(2026, 1, 23, 10, 16, 10, 0, time.UTC), NewEd25519Signer(testKey())); err != nil {
		t.Fatal(err)
	}
	return w.Dir()
}

func TestCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	// The undisturbed run: its ledger is what every killed run's intact
	// entries must be a prefix of.
	refDir := crashSession(t, t.TempDir(), false)
	ref, err := os.ReadFile(filepath.Join(refDir, filepath.FromSlash(FileLedger)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runChild(t, t.TempDir(), false, -1); err != nil {
		t.Fatal(err)
	}
	t.Logf("an undisturbed child writes %d entries (%d ledger bytes)", bytes.Count(ref, []byte("\n")), len(ref))

	// Each child is killed when its ledger first reaches a random size, so
	// that the kills land while the session is written however loaded the
	// machine is (a kill after a random delay lands mostly after the seal
	// when the machine is busy); about one in ten targets lies past the
	// end, and those children seal.
	const runs = 120
	r := rand.New(rand.NewPCG(7, 11))
	var sealed, unsealed, early, partialEntry, uncommitted int
	deadline := time.Now().Add(240 * time.Second)
	for i := 0; i < runs; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("only %d runs in the time allowed", i)
		}
		root := t.TempDir()
		delay := r.Int64N(int64(len(ref)) * 11 / 10)
		if _, err := runChild(t, root, i%4 == 3, delay); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, testSession)
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			early++
			continue
		}
		rep, err := Verify(context.Background(), dir, VerifyOptions{AllowUnsealed: true})
		if err != nil {
			t.Fatalf("run %d (killed at %d ledger bytes): %v", i, delay, err)
		}
		got, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(FileLedger)))
		complete := got[:bytes.LastIndexByte(got, '\n')+1]
		if n := bytes.Count(complete, []byte("\n")); rep.Entries != n {
			t.Fatalf("run %d: %d intact entries reported, %d complete lines", i, rep.Entries, n)
		}
		if !bytes.HasPrefix(ref, complete) {
			t.Fatalf("run %d: the intact entries are not those of the undisturbed run", i)
		}
		if rep.Sealed {
			sealed++
		} else {
			unsealed++
			if strings.Contains(rep.Incomplete, "incomplete") {
				partialEntry++
			}
			if rep.Incomplete != "" && !strings.HasPrefix(rep.Incomplete, FileLedger) {
				uncommitted++
			}
			if _, err := Verify(context.Background(), dir, VerifyOptions{}); !errorsIsUnsealed(err) {
				t.Fatalf("run %d: without AllowUnsealed: %v, want an UnsealedError", i, err)
			}
		}
	}
	t.Logf("%d kills: %d unsealed (all complete entries intact; %d with a partial last entry, %d with an uncommitted record), %d sealed, %d before the bundle existed",
		runs, unsealed, partialEntry, uncommitted, sealed, early)
	if unsealed < runs/4 {
		t.Errorf("only %d kills landed while the session was written", unsealed)
	}
}

func errorsIsUnsealed(err error) bool {
	var ue *UnsealedError
	return errors.As(err, &ue) && errors.Is(err, ErrUnsealed)
}

// runChild starts a child writing into root and kills it delay after it
// is ready (a negative delay lets it finish).
// runChild runs a child writer in root. With killAt >= 0 it kills the
// child with SIGKILL as soon as its ledger holds killAt bytes or more (or
// lets it finish when it never does); it returns how long the child ran
// after it said it was ready.
func runChild(t *testing.T, root string, syncEvery bool, killAt int64) (time.Duration, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnvDir+"="+root)
	if syncEvery {
		cmd.Env = append(cmd.Env, crashEnvSync+"=1")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	br := bufio.NewReader(out)
	line, err := br.ReadString('\n')
	if err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		return 0, err
	}
	start := time.Now()
	go func() { _, _ = br.WriteTo(io.Discard) }()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if killAt >= 0 {
		ledger := filepath.Join(root, testSession, filepath.FromSlash(FileLedger))
		for {
			select {
			case <-done:
				return time.Since(start), nil
			default:
			}
			if fi, err := os.Stat(ledger); err == nil && fi.Size() >= killAt {
				cmd.Process.Signal(syscall.SIGKILL)
				<-done
				return time.Since(start), nil
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	err = <-done
	if err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

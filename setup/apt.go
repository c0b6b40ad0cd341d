package setup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// osRelease reads KEY=value pairs from an os-release file.
func osRelease(path string) map[string]string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	kv := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		kv[k] = strings.Trim(v, `"'`)
	}
	return kv
}

// debianLike reports the os-release ID and whether the system is Debian or
// a derivative (Ubuntu included).
func debianLike(o Options) (id string, ok bool) {
	if o.goos != "linux" {
		return "", false
	}
	kv := osRelease(o.OSRelease)
	id = kv["ID"]
	if id == "debian" || id == "ubuntu" {
		return id, true
	}
	for like := range strings.FieldsSeq(kv["ID_LIKE"]) {
		if like == "debian" || like == "ubuntu" {
			return id, true
		}
	}
	return id, false
}

// aptGet returns apt-get's path when setup may use it: as root on a
// Debian-like Linux that has it.
func aptGet(o Options) (string, bool) {
	if o.goos != "linux" || o.Geteuid() != 0 {
		return "", false
	}
	if _, ok := debianLike(o); !ok {
		return "", false
	}
	p, err := o.LookPath("apt-get")
	if err != nil {
		return "", false
	}
	return p, true
}

// aptLockErrors are what apt prints when another apt or dpkg holds its lock.
var aptLockErrors = []string{
	"Could not get lock",
	"Unable to acquire the dpkg frontend lock",
	"Unable to lock directory",
	"Unable to lock the administration directory",
}

// aptInstall runs "apt-get update" then "apt-get install -y pkgs...",
// non-interactively, streaming apt's output to progress. Before each step
// it waits (bounded by o.AptLockTimeout for the whole install) for other
// apt or dpkg runs to release their locks, and retries a step that lost the
// race for a lock. A failed update is reported and the install tried anyway
// (a stale index often still installs).
func aptInstall(ctx context.Context, o Options, apt string, progress io.Writer, pkgs ...string) error {
	deadline := time.Now().Add(o.AptLockTimeout)
	steps := [][]string{{"update"}, append([]string{"install", "-y"}, pkgs...)}
	for i, step := range steps {
		err := aptStep(ctx, o, apt, deadline, progress, step)
		if err == nil {
			continue
		}
		if i == 0 && ctx.Err() == nil && !isLockTimeout(err) {
			fmt.Fprintf(progress, "setup: warning: %v; trying the install anyway\n", err)
			continue
		}
		return err
	}
	return nil
}

type lockTimeoutError struct {
	pid     int
	name    string
	waited  time.Duration
	attempt string
}

func (e *lockTimeoutError) Error() string {
	return fmt.Sprintf("apt-get %s: the apt/dpkg lock is still held by %s after %s; try again when that run has finished",
		e.attempt, holderString(e.pid, e.name), e.waited.Round(time.Second))
}

func isLockTimeout(err error) bool {
	var lt *lockTimeoutError
	return errors.As(err, &lt)
}

func holderString(pid int, name string) string {
	switch {
	case pid > 0 && name != "":
		return fmt.Sprintf("process %d (%s)", pid, name)
	case pid > 0:
		return fmt.Sprintf("process %d", pid)
	}
	return "another process"
}

func aptStep(ctx context.Context, o Options, apt string, deadline time.Time, progress io.Writer, step []string) error {
	what := strings.Join(step, " ")
	for {
		if err := waitAptLock(ctx, o, deadline, progress, what); err != nil {
			return err
		}
		secs := int(time.Until(deadline).Seconds())
		if secs < 1 {
			secs = 1
		}
		// DPkg::Lock::Timeout makes apt itself wait for the dpkg lock should
		// another run grab it between our check and apt's start.
		args := append([]string{"-o", fmt.Sprintf("DPkg::Lock::Timeout=%d", secs)}, step...)
		fmt.Fprintf(progress, "setup: running apt-get %s\n", what)
		tail := &tailBuffer{max: 8192}
		out := io.MultiWriter(progress, tail)
		_, err := o.Runner.Run(ctx, Cmd{Path: apt, Args: args, Env: []string{"DEBIAN_FRONTEND=noninteractive"}, Stdout: out, Stderr: out})
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("apt-get %s: %w", what, ctx.Err())
		}
		if lockError(tail.String()) && time.Now().Before(deadline) {
			fmt.Fprintf(progress, "setup: apt-get %s could not get the apt lock; waiting and retrying\n", what)
			if err := sleepCtx(ctx, o.pollInterval); err != nil {
				return fmt.Errorf("apt-get %s: %w", what, err)
			}
			continue
		}
		return fmt.Errorf("apt-get %s: %w", what, err)
	}
}

func lockError(out string) bool {
	for _, s := range aptLockErrors {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

// waitAptLock waits until no apt/dpkg lock is held, printing a progress
// line when it starts waiting and every 30 seconds after, up to deadline.
func waitAptLock(ctx context.Context, o Options, deadline time.Time, progress io.Writer, what string) error {
	start := time.Now()
	var lastNote time.Time
	for {
		pid, name, held := o.AptLockHolder()
		if !held {
			if !lastNote.IsZero() {
				fmt.Fprintf(progress, "setup: apt lock released after %s\n", time.Since(start).Round(time.Second))
			}
			return nil
		}
		now := time.Now()
		if !now.Before(deadline) {
			return &lockTimeoutError{pid: pid, name: name, waited: now.Sub(start), attempt: what}
		}
		if lastNote.IsZero() {
			fmt.Fprintf(progress, "setup: waiting for the apt/dpkg lock held by %s (another apt-get or dpkg is running; waiting up to %s)\n",
				holderString(pid, name), time.Until(deadline).Round(time.Second))
			lastNote = now
		} else if now.Sub(lastNote) >= 30*time.Second {
			fmt.Fprintf(progress, "setup: still waiting for the apt/dpkg lock held by %s (%s so far)\n",
				holderString(pid, name), now.Sub(start).Round(time.Second))
			lastNote = now
		}
		wait := min(o.pollInterval, time.Until(deadline))
		if err := sleepCtx(ctx, wait); err != nil {
			return fmt.Errorf("waiting for the apt lock: %w", err)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

//go:build linux

package driver

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// nsLink is how /proc shows a link to the network namespace with inode ino.
func nsLink(ino uint64) string { return "net:[" + strconv.FormatUint(ino, 10) + "]" }

// NamespaceUsers lists what still refers to the network namespace with
// inode ino: processes in it, and this process's threads in it and file
// descriptors open on it; for tests.
func NamespaceUsers(ino uint64) []string {
	want := nsLink(ino)
	var users []string
	pids, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range pids {
		if l, _ := os.Readlink(p + "/ns/net"); l == want {
			comm, _ := os.ReadFile(p + "/comm")
			users = append(users, "process "+filepath.Base(p)+" "+string(comm))
		}
	}
	tasks, _ := filepath.Glob("/proc/self/task/*/ns/net")
	for _, t := range tasks {
		if l, _ := os.Readlink(t); l == want {
			users = append(users, "thread "+t)
		}
	}
	fds, _ := filepath.Glob("/proc/self/fd/*")
	for _, f := range fds {
		if l, _ := os.Readlink(f); l == want {
			users = append(users, "fd "+f)
		}
	}
	return users
}

// Queued returns the size of the next datagram waiting on pc, 0 when
// none; for tests.
func Queued(pc net.PacketConn) (int, error) {
	rc, err := pc.(syscall.Conn).SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }); err != nil {
		return 0, err
	}
	return n, ierr
}

// TestNetnsHasNoWayOut: inside the namespace, loopback works, the host's
// TCP listener is unreachable and a datagram to the host's UDP port lands
// in the namespace (on a listener there on the same port), never at the
// host. After close, nothing refers to the namespace any more.
func TestNetnsHasNoWayOut(t *testing.T) {
	ns, err := newNetns()
	if err != nil {
		t.Fatal(err)
	}
	ino := ns.inode()
	hostTCP, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hostTCP.Close()
	hostUDP, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hostUDP.Close()
	udpAddr := hostUDP.LocalAddr().String()

	var inner net.Listener
	var witness net.PacketConn
	var dialErr error
	err = ns.do(func() (err error) {
		if inner, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return err
		}
		if witness, err = net.ListenPacket("udp4", udpAddr); err != nil {
			return err
		}
		c, err := net.Dial("udp4", udpAddr)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.Write([]byte("leak")); err != nil {
			return err
		}
		var c2 net.Conn
		if c2, dialErr = net.Dial("tcp", hostTCP.Addr().String()); dialErr == nil {
			c2.Close()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if dialErr == nil || !errors.Is(dialErr, syscall.ECONNREFUSED) {
		t.Errorf("dial the host's listener from the namespace: %v, want connection refused", dialErr)
	}
	// The namespace's listener is reachable on its loopback only: from the
	// host the same address reaches nothing (or something else).
	var innerOK error
	err = ns.do(func() error {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err == nil {
			c.Close()
		}
		innerOK = err
		return nil
	})
	if err != nil || innerOK != nil {
		t.Errorf("dial the namespace's own listener from inside: %v %v", err, innerOK)
	}
	buf := make([]byte, 16)
	n, _, err := witness.ReadFrom(buf) // loopback delivery is done when Write returns
	if err != nil || string(buf[:n]) != "leak" {
		t.Fatalf("the datagram did not land in the namespace: %q %v", buf[:n], err)
	}
	if got, err := Queued(hostUDP); got != 0 || err != nil {
		t.Errorf("the host's UDP port got a %d-byte datagram from the namespace (%v)", got, err)
	}
	if users := NamespaceUsers(ino); len(users) != 1 {
		t.Errorf("while open, what refers to the namespace: %v, want its fd only", users)
	}
	inner.Close()
	witness.Close()
	if err := ns.close(); err != nil {
		t.Fatal(err)
	}
	if users := NamespaceUsers(ino); len(users) != 0 {
		t.Errorf("after close the namespace is still in use: %v", users)
	}
	if err := ns.do(func() error { return nil }); err == nil {
		t.Error("entering a closed namespace worked")
	}
}

// BenchmarkNetns times making a network namespace (loopback up), opening a
// listener in it, and letting it go: what an isolated launch and a context
// of an isolated browser add on top of the browser.
func BenchmarkNetns(b *testing.B) {
	for b.Loop() {
		ns, err := newNetns()
		if err != nil {
			b.Fatal(err)
		}
		var ln net.Listener
		if err := ns.do(func() (err error) { ln, err = net.Listen("tcp", "127.0.0.1:0"); return err }); err != nil {
			b.Fatal(err)
		}
		ln.Close()
		if err := ns.close(); err != nil {
			b.Fatal(err)
		}
	}
}

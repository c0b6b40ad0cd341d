//go:build linux

package driver

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// netns is a network namespace of its own for one launched browser: only
// a loopback interface, no routes, no DNS. The browser (and the Playwright
// driver that starts it) run inside it; the filtering proxies of its
// contexts listen on its loopback and dial out from the host's namespace,
// so the proxy is the browser's only way out.
//
// The namespace lives while fd is open or a process or socket is in it:
// Close closes fd, and once the browser has exited and the proxies are
// closed the kernel frees it.
type netns struct {
	mu     sync.RWMutex // held for reading while a thread enters it
	fd     int          // the namespace (nsfs), -1 once closed
	closed bool
}

// newNetns makes a network namespace with its loopback up. It fails with
// ErrNoNetworkIsolation where the kernel refuses (no CAP_SYS_ADMIN).
func newNetns() (*netns, error) {
	var fd int
	err := onThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("%w: unshare(CLONE_NEWNET): %w", ErrNoNetworkIsolation, err)
		}
		return nil
	}, func() (err error) {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("driver: network namespace: bring up lo: %w", err)
		}
		if fd, err = threadNetns(); err != nil {
			return fmt.Errorf("driver: network namespace: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &netns{fd: fd}, nil
}

// threadNetns opens the calling thread's network namespace.
func threadNetns() (int, error) {
	return unix.Open("/proc/self/task/"+strconv.Itoa(unix.Gettid())+"/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

// onThread runs enter and then f on a thread of their own, and then puts
// the thread back in the network namespace it was in. When enter fails, f
// does not run. A thread that cannot be put back is never used again: it
// stays locked and ends with its goroutine.
func onThread(enter, f func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		home, err := threadNetns()
		if err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("driver: network namespace: %w", err)
			return
		}
		defer unix.Close(home)
		if err := enter(); err != nil {
			if unix.Setns(home, unix.CLONE_NEWNET) == nil {
				runtime.UnlockOSThread()
			}
			ch <- err
			return
		}
		err = f()
		if unix.Setns(home, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- err
	}()
	return <-ch
}

// loopbackUp sets the calling thread's namespace's lo up.
func loopbackUp() error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr)
}

// do runs f on a thread inside the namespace and returns its error. What f
// creates there stays there: a socket it opens is in the namespace whichever
// thread uses it later, a process it starts (and that process's children)
// runs in it. Goroutines f starts run in the host's namespace. When do
// returns, the thread is back in the host's namespace.
func (n *netns) do(f func() error) error {
	return onThread(func() error {
		n.mu.RLock()
		defer n.mu.RUnlock()
		if n.closed {
			return fmt.Errorf("driver: the browser's network namespace is closed")
		}
		if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("driver: enter the browser's network namespace: %w", err)
		}
		return nil
	}, f)
}

// inode identifies the namespace (the number in "net:[N]"), 0 once closed.
func (n *netns) inode() uint64 {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.closed {
		return 0
	}
	var st unix.Stat_t
	if unix.Fstat(n.fd, &st) != nil {
		return 0
	}
	return st.Ino
}

// close lets the namespace go: the kernel frees it when nothing is left in
// it.
func (n *netns) close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	err := unix.Close(n.fd)
	n.fd = -1
	return err
}

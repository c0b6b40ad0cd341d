//go:build !linux

package driver

import (
	"fmt"
	"runtime"
)

// netns stands for a network namespace, which only Linux has: elsewhere an
// isolated browser cannot be launched (see BrowserOptions.Isolate).
type netns struct{}

func newNetns() (*netns, error) {
	return nil, fmt.Errorf("%w: network namespaces exist only on Linux, this is %s", ErrNoNetworkIsolation, runtime.GOOS)
}

func (n *netns) do(f func() error) error { return f() }

func (n *netns) inode() uint64 { return 0 }

func (n *netns) close() error { return nil }

package driver

import "net"

// NetnsInode returns the inode of b's network namespace ("net:[N]"), 0
// when b is not isolated; for tests.
func NetnsInode(b *Browser) uint64 {
	if b.ns == nil {
		return 0
	}
	return b.ns.inode()
}

// ListenInBrowserNetwork opens a listener where b's network is (in its
// namespace when isolated); for tests.
func ListenInBrowserNetwork(b *Browser, network, addr string) (net.Listener, net.PacketConn, error) {
	f := func() (ln net.Listener, pc net.PacketConn, err error) {
		if network == "udp" {
			pc, err = net.ListenPacket("udp4", addr)
		} else {
			ln, err = net.Listen("tcp", addr)
		}
		return
	}
	if b.ns == nil {
		return f()
	}
	var ln net.Listener
	var pc net.PacketConn
	err := b.ns.do(func() (err error) { ln, pc, err = f(); return err })
	return ln, pc, err
}

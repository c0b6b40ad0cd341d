//go:build aegis_relay

package nativehost

import (
	"context"
	"io"
	"net"
	"os"
)

// EnvRelay names, in builds with the aegis_relay tag only, a Unix socket
// that host mode relays the conversation to, byte for byte, after the
// origin check: the extension driver's conformance tests and the
// benchmarks drive the extension from the test process this way. Release
// builds do not have this code.
const EnvRelay = "AEGIS_HOST_RELAY"

func init() { relay = relayTo }

// relayTo pipes in and out to the socket named by $AEGIS_HOST_RELAY until
// either side ends; it reports false (not taken over) when the variable is
// unset.
func relayTo(ctx context.Context, in io.Reader, out io.Writer, logf func(string, ...any)) (bool, error) {
	path := os.Getenv(EnvRelay)
	if path == "" {
		return false, nil
	}
	c, err := (&net.Dialer{}).DialContext(ctx, "unix", path)
	if err != nil {
		logf("relay %s: %v", path, err)
		return true, err
	}
	defer c.Close()
	logf("relaying to %s", path)
	done := make(chan error, 2)
	go func() { _, err := io.Copy(c, in); done <- err }()
	go func() { _, err := io.Copy(out, c); done <- err }()
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	return true, err
}

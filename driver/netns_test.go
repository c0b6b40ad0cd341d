//go:build linux

package driver_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

// webrtcOpen undoes the WebRTC restriction every launched browser gets, so
// that in these tests nothing but the network namespace keeps a page's UDP
// in: the IP handling policy lets WebRTC use UDP directly, and loopback
// counts as a network (the namespace has no other).
var webrtcOpen = []string{"--force-webrtc-ip-handling-policy=default", "--webrtc-ip-handling-policy=default", "--allow-loopback-in-peer-connection"}

// leakPage fetches a foreign loopback port, reports how that ended to its
// own origin, then starts WebRTC with a STUN server on a loopback UDP port,
// which sends a STUN binding request there.
const leakPage = `<!doctype html><title>leak</title><p>allowed page</p><script>
(async () => {
  let fetched = 'refused';
  try { await fetch('http://127.0.0.1:%d/leak', {mode: 'no-cors'}); fetched = 'reached'; } catch (e) {}
  await fetch('/report', {method: 'POST', body: fetched});
  const pc = new RTCPeerConnection({iceServers: [{urls: 'stun:127.0.0.1:%d'}]});
  pc.createDataChannel('leak');
  await pc.setLocalDescription(await pc.createOffer());
  window.keep = pc;
})();
</script>`

// isSTUNBinding reports whether b is a STUN binding request (RFC 5389).
func isSTUNBinding(b []byte) bool {
	return len(b) >= 20 && binary.BigEndian.Uint16(b) == 0x0001 && binary.BigEndian.Uint32(b[4:]) == 0x2112A442
}

// readSTUN waits for a STUN binding request on pc until ctx ends.
func readSTUN(ctx context.Context, pc net.PacketConn) error {
	if dl, ok := ctx.Deadline(); ok {
		_ = pc.SetReadDeadline(dl)
	}
	buf := make([]byte, 1500)
	for {
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			return err
		}
		if isSTUNBinding(buf[:n]) {
			return nil
		}
	}
}

func fdCount(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// TestSandboxNetworkIsolation runs one page in a sandbox session of an
// isolated browser and, as the control that shows the test bites, of a
// browser without a namespace (AllowNoNetworkIsolation), both with WebRTC
// unrestricted. The page is served by a server in the host's namespace, so
// it loads only through the sandbox's proxy. Ground truth is what the
// host's listeners received: the foreign port nothing in either; the STUN
// port the page's binding request without the namespace, nothing with it
// (the request lands on a witness listener in the namespace instead, which
// shows it was sent). After Close nothing refers to the namespace: no
// process, thread or file descriptor, and this process has as many file
// descriptors as before.
func TestSandboxNetworkIsolation(t *testing.T) {
	tests := []struct {
		name        string
		isolate     bool
		wantHostUDP bool
	}{
		{"isolated", true, false},
		{"control without namespace", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			// Go's network poller opens its descriptors on first use and
			// keeps them: make sure that happened before counting.
			if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
				ln.Close()
			}
			fdsBefore := fdCount(t)

			var foreignHits atomic.Int64
			foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { foreignHits.Add(1) }))
			hostUDP, err := net.ListenPacket("udp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			udpPort := hostUDP.LocalAddr().(*net.UDPAddr).Port
			report := make(chan string, 1)
			allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/report" {
					b, _ := io.ReadAll(r.Body)
					select {
					case report <- string(b):
					default:
					}
					return
				}
				fmt.Fprintf(w, leakPage, foreign.Listener.Addr().(*net.TCPAddr).Port, udpPort)
			}))

			b, err := driver.Launch(ctx, driver.BrowserOptions{Isolate: tt.isolate, Args: webrtcOpen})
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Isolated(); got != tt.isolate {
				t.Fatalf("Isolated() = %v, want %v", got, tt.isolate)
			}
			ino := driver.NetnsInode(b)
			witness := hostUDP
			if tt.isolate {
				var users []string
				for _, u := range driver.NamespaceUsers(ino) {
					if strings.HasPrefix(u, "process ") {
						users = append(users, u)
					}
				}
				if !strings.Contains(strings.Join(users, " "), "chrom") && !strings.Contains(strings.Join(users, " "), "headless") {
					t.Errorf("no browser process in the namespace: %v", users)
				}
				if _, witness, err = driver.ListenInBrowserNetwork(b, "udp", hostUDP.LocalAddr().String()); err != nil {
					t.Fatal(err)
				}
			}

			d, err := driver.Open(ctx, driver.Config{
				Mode: contract.ModeSandbox, Browser: b, AllowedOrigins: []string{allowed.URL},
				AllowNoNetworkIsolation: !tt.isolate,
				// WebRTC on in the page (and the browser's flags off: webrtcOpen), so
				// that only the namespace keeps the STUN request in.
				AllowWebRTC: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			res, err := d.Act(ctx, contract.Action{ID: "a1", Reason: "test", Type: contract.ActNavigate, URL: allowed.URL + "/"})
			if err != nil || !res.OK {
				t.Fatalf("the allowed page did not load through the proxy: %+v %v", res, err)
			}
			select {
			case got := <-report:
				if got != "refused" {
					t.Errorf("the page's fetch of a foreign port: %s, want refused", got)
				}
			case <-ctx.Done():
				t.Fatal("the page never reported its fetch")
			}
			if err := readSTUN(ctx, witness); err != nil {
				t.Fatalf("the page's STUN request never arrived (on the witness): %v", err)
			}

			if err := d.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if err := b.Close(ctx); err != nil {
				t.Fatal(err)
			}
			// The browser has exited: whatever it sent is delivered by now.
			if witness != hostUDP {
				witness.Close()
			}
			// In the control the witness is the host's port, and the request
			// was read from it above; else it is whatever waits on the port.
			gotHostUDP := witness == hostUDP
			if tt.isolate {
				n, err := driver.Queued(hostUDP)
				if err != nil {
					t.Fatal(err)
				}
				gotHostUDP = n > 0
			}
			if gotHostUDP != tt.wantHostUDP {
				t.Errorf("a datagram reached the host's UDP port: %v, want %v", gotHostUDP, tt.wantHostUDP)
			}
			foreign.Close() // waits for any request it got
			if got := foreignHits.Load(); got != 0 {
				t.Errorf("the foreign port got %d requests, want 0", got)
			}
			allowed.Close()
			hostUDP.Close()
			if tt.isolate {
				if users := driver.NamespaceUsers(ino); len(users) != 0 {
					t.Errorf("after Close the namespace is still in use: %v", users)
				}
				if got := driver.NetnsInode(b); got != 0 {
					t.Errorf("after Close the browser still holds its namespace (%d)", got)
				}
			}
			if got := fdCount(t); got != fdsBefore {
				t.Errorf("file descriptors: %d after Close, %d before", got, fdsBefore)
			}
		})
	}
}

// TestPlaywrightInIsolatedBrowser: a playwright session in an isolated
// browser reaches any origin through its pass-through proxy in the
// namespace (the site is in the host's namespace).
func TestPlaywrightInIsolatedBrowser(t *testing.T) {
	site := startSite(t)
	d := open(t, contract.ModePlaywright, site.URL(), func(c *driver.Config) { c.Browser = isolatedBrowser(t) })
	closeDriver(t, d)
	res, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site.URL() + "/"})
	if err != nil || !res.OK {
		t.Fatalf("navigate in a playwright session of an isolated browser: %+v %v", res, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obs, err := d.Observe(ctx, driver.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := obs.State.ActiveURL, site.URL()+"/"; got != want || obs.DOMText == "" {
		t.Errorf("page %q (%d chars of text), want %q with text", got, len(obs.DOMText), want)
	}
}

// TestSandboxRefusesBrowserWithoutNamespace: a sandbox session given a
// shared browser launched without isolation fails closed and says what to
// do, unless AllowNoNetworkIsolation.
func TestSandboxRefusesBrowserWithoutNamespace(t *testing.T) {
	_, err := driver.Open(context.Background(), driver.Config{
		Mode: contract.ModeSandbox, Browser: new(driver.Browser), AllowedOrigins: []string{"http://127.0.0.1:1"},
	})
	if !errors.Is(err, driver.ErrNoNetworkIsolation) || !strings.Contains(err.Error(), "Isolate: true") || !strings.Contains(err.Error(), "AllowNoNetworkIsolation") {
		t.Fatalf("sandbox in a browser without a namespace: %v, want ErrNoNetworkIsolation saying what to do", err)
	}
	_, err = driver.Launch(context.Background(), driver.BrowserOptions{Endpoint: "ws://127.0.0.1:1/", Isolate: true})
	if err == nil || !strings.Contains(err.Error(), "remote") {
		t.Errorf("isolating a remote browser: %v, want refused", err)
	}
}

// TestSandboxFailsClosedWithoutCapSysAdmin runs this test binary again
// without CAP_SYS_ADMIN (setpriv drops it from the bounding set, as in an
// unprivileged container): a sandbox session cannot get a namespace there
// and fails closed, saying why and what to do.
func TestSandboxFailsClosedWithoutCapSysAdmin(t *testing.T) {
	if os.Getenv("AEGIS_TEST_NO_SYS_ADMIN") == "1" {
		// A browser of its own, or one of shared Browsers: the same refusal.
		for _, bs := range []*driver.Browsers{nil, {}} {
			_, err := driver.Open(context.Background(), driver.Config{Mode: contract.ModeSandbox, Browsers: bs, AllowedOrigins: []string{"http://127.0.0.1:1"}})
			for _, want := range []string{"unshare(CLONE_NEWNET)", "operation not permitted", "CAP_SYS_ADMIN", "mode playwright", "AllowNoNetworkIsolation"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("sandbox without CAP_SYS_ADMIN (shared Browsers: %v): %v, want an error that says %q", bs != nil, err, want)
				}
			}
			if !errors.Is(err, driver.ErrNoNetworkIsolation) {
				t.Errorf("not ErrNoNetworkIsolation: %v", err)
			}
		}
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("no setpriv to drop CAP_SYS_ADMIN with")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setpriv, "--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin", exe,
		"-test.run", "^TestSandboxFailsClosedWithoutCapSysAdmin$", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), "AEGIS_TEST_NO_SYS_ADMIN=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("without CAP_SYS_ADMIN: %v\n%s", err, out)
	}
}

// BenchmarkLaunch times launching a browser (and closing it) without and
// with a network namespace of its own.
//
//	go test ./driver/ -run '^$' -bench Launch -benchtime 5x
func BenchmarkLaunch(b *testing.B) {
	for _, isolate := range []bool{false, true} {
		b.Run(fmt.Sprintf("isolate=%v", isolate), func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				br, err := driver.Launch(ctx, driver.BrowserOptions{Isolate: isolate})
				if err != nil {
					b.Fatal(err)
				}
				if err := br.Close(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

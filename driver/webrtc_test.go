package driver_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

// rtcPage tries to open a WebRTC data channel with a STUN server on a
// loopback UDP port (%d) when #rtc is clicked, with the page's own
// RTCPeerConnection (#rtc) or one taken from a fresh about:blank frame
// (#rtc-frame), and reports to /done how it went: "gathered" when ICE
// gathering completed, else the name of the error.
const rtcPage = `<!doctype html><html><head><meta charset="utf-8"><title>RTC</title></head><body>
<button id="rtc">call</button><button id="rtc-frame">call from a frame</button>
<script>
async function call(PC) {
  try {
    const pc = new PC({ iceServers: [{ urls: 'stun:127.0.0.1:%d' }] });
    pc.createDataChannel('leak');
    const done = new Promise((r) => { pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === 'complete') r(); }; });
    await pc.setLocalDescription(await pc.createOffer());
    await done;
    return 'gathered';
  } catch (e) { return String(e && e.name || e); }
}
function report(r) { fetch('/done?r=' + encodeURIComponent(r)); }
document.getElementById('rtc').addEventListener('click', async () => report(await call(window.RTCPeerConnection)));
document.getElementById('rtc-frame').addEventListener('click', async () => {
  const f = document.createElement('iframe');
  document.body.appendChild(f);
  report(await call(f.contentWindow.RTCPeerConnection || f.contentWindow.webkitRTCPeerConnection));
});
</script></body></html>`

// udpSink counts the datagrams that reach a loopback UDP port; sync waits
// until everything sent to it before the call has been counted.
type udpSink struct {
	conn    *net.UDPConn
	mu      sync.Mutex
	packets int
	marks   chan struct{}
	first   chan struct{} // closed at the first datagram
}

const syncMark = "aegis-test-sync"

func newUDPSink(t *testing.T) *udpSink {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s := &udpSink{conn: c, marks: make(chan struct{}, 16), first: make(chan struct{})}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, _, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if string(buf[:n]) == syncMark {
				s.marks <- struct{}{}
				continue
			}
			s.mu.Lock()
			if s.packets++; s.packets == 1 {
				close(s.first)
			}
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() { _ = c.Close() })
	return s
}

func (s *udpSink) port() int { return s.conn.LocalAddr().(*net.UDPAddr).Port }

// received returns how many datagrams arrived before now: it sends itself
// a mark and waits for it, and datagrams on loopback are read in the order
// they were queued.
func (s *udpSink) received(t *testing.T) int {
	t.Helper()
	c, err := net.DialUDP("udp4", nil, s.conn.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(syncMark)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.marks:
	case <-time.After(10 * time.Second):
		t.Fatal("the UDP sink never saw its own mark")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.packets
}

// rtcSite serves rtcPage and hands over each /done report.
func rtcSite(t *testing.T, stunPort int) (string, <-chan string) {
	t.Helper()
	done := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/done" {
			done <- r.URL.Query().Get("r")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, rtcPage, stunPort)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, done
}

// refusals records what the boundary refused.
type refusals struct {
	mu  sync.Mutex
	got []contract.Effect
}

func (r *refusals) Judge(context.Context, contract.Effect) error { return nil }
func (r *refusals) Refused(e contract.Effect) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, e)
}
func (r *refusals) effects() []contract.Effect {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// rtcClick clicks sel on the RTC page.
func rtcClick(t *testing.T, d driver.Driver, site, sel string) {
	t.Helper()
	if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site + "/rtc"}); err != nil {
		t.Fatal(err)
	}
	if _, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: sel}); err != nil {
		t.Fatal(err)
	}
}

// rtcAttempt clicks sel on the RTC page and returns what the page
// reported.
func rtcAttempt(t *testing.T, d driver.Driver, site, sel string, done <-chan string) string {
	t.Helper()
	rtcClick(t, d, site, sel)
	select {
	case r := <-done:
		return r
	case <-time.After(20 * time.Second):
		t.Fatalf("the page never reported its WebRTC attempt")
	}
	return ""
}

func TestWebRTCIsOff(t *testing.T) {
	for _, mode := range []contract.DriverMode{contract.ModePlaywright, contract.ModeSandbox} {
		for _, sel := range []string{"#rtc", "#rtc-frame"} {
			t.Run(string(mode)+"/"+sel, func(t *testing.T) {
				sink := newUDPSink(t)
				site, done := rtcSite(t, sink.port())
				eff := &refusals{}
				d := open(t, mode, site, func(c *driver.Config) { c.Effects = eff })
				closeDriver(t, d)
				if got := rtcAttempt(t, d, site, sel, done); got != "NotSupportedError" {
					t.Errorf("the page's WebRTC attempt ended with %q, want NotSupportedError", got)
				}
				if n := sink.received(t); n != 0 {
					t.Errorf("the STUN server received %d datagrams, want none", n)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if _, err := d.Observe(ctx, driver.ObserveOptions{}); err != nil {
					t.Fatal(err)
				}
				want := contract.Effect{Kind: contract.EffectPeer, Refused: "WebRTC is off"}
				if got := eff.effects(); len(got) != 1 || !equalEffect(got[0], want) {
					t.Errorf("refused effects = %+v, want one %+v", got, want)
				}
			})
		}
	}
}

// TestWebRTCUDPOffByFlags: with WebRTC allowed in the page
// (Config.AllowWebRTC), the browser's flags still keep it off UDP: ICE
// gathering completes and the STUN server received nothing. A browser
// launched without those flags does send to it (the control waits for its
// first datagram), which shows the test would see a leak.
func TestWebRTCUDPOffByFlags(t *testing.T) {
	sink := newUDPSink(t)
	site, done := rtcSite(t, sink.port())
	d := open(t, contract.ModePlaywright, site, func(c *driver.Config) { c.AllowWebRTC = true })
	closeDriver(t, d)
	if got := rtcAttempt(t, d, site, "#rtc", done); got != "gathered" {
		t.Fatalf("the page's WebRTC attempt ended with %q, want gathered", got)
	}
	if n := sink.received(t); n != 0 {
		t.Errorf("with the default flags the STUN server received %d datagrams, want none", n)
	}

	// The control: the same page in a browser without the WebRTC flags.
	// Later flags win: these undo the defaults' WebRTC restriction
	// without touching driver.DefaultArgs, which other launches read.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b, err := driver.Launch(ctx, driver.BrowserOptions{Args: []string{"--force-webrtc-ip-handling-policy=default", "--webrtc-ip-handling-policy=default"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	c, err := driver.Open(ctx, driver.Config{Mode: contract.ModePlaywright, Browser: b, AllowWebRTC: true})
	if err != nil {
		t.Fatal(err)
	}
	closeDriver(t, c)
	rtcClick(t, c, site, "#rtc")
	select {
	case <-sink.first:
	case <-ctx.Done():
		t.Errorf("control: without the flags the STUN server received nothing; the test cannot see a leak")
	}
}

package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/extension"
	"github.com/aegis-run/aegis/nativehost"
)

// frames decodes what host mode wrote to stdout: frames, nothing else.
func frames(t *testing.T, out string) []nativehost.Message {
	t.Helper()
	r := nativehost.NewReader(strings.NewReader(out), 0)
	var ms []nativehost.Message
	for {
		b, err := r.ReadFrame()
		if err == io.EOF {
			return ms
		}
		if err != nil {
			t.Fatalf("stdout is not frames: %v (%q)", err, out)
		}
		m, err := nativehost.DecodeMessage(b)
		if err != nil {
			t.Fatalf("frame %s: %v", b, err)
		}
		ms = append(ms, m)
	}
}

// TestHostModeFromOrigin: "aegis chrome-extension://ID/" (how Chrome
// starts a host) is host mode; a caller no installed manifest of this
// executable allows is refused with one error frame on stdout and the
// reason on stderr.
func TestHostModeFromOrigin(t *testing.T) {
	t.Setenv(nativehost.EnvConfig, filepath.Join(t.TempDir(), "host.json"))
	for _, args := range [][]string{
		{extension.Origin()},
		{extension.Origin(), "--parent-window=0"},
		{"host", extension.Origin()},
	} {
		code, out, errOut := run(t, "", args...)
		if code != ExitFailure {
			t.Fatalf("%q: exit %d, want %d (stderr %q)", args, code, ExitFailure, errOut)
		}
		ms := frames(t, out)
		if len(ms) != 1 || ms[0].Event != nativehost.EventError || !bytes.Contains(ms[0].Params, []byte(`"name":"origin_refused"`)) {
			t.Fatalf("%q: stdout frames %+v", args, ms)
		}
		if !strings.Contains(errOut, "origin_refused") {
			t.Errorf("%q: stderr %q", args, errOut)
		}
	}
}

func TestHostUsage(t *testing.T) {
	code, out, errOut := run(t, "", "host")
	if code != ExitUsage || out != "" || !strings.Contains(errOut, "needs the caller's origin") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, _ = run(t, "", "host", extension.Origin(), "chrome-extension://"+strings.Repeat("b", 32)+"/")
	if code != ExitUsage {
		t.Fatalf("two origins: exit %d", code)
	}
}

// TestHostRefusesReadableConfig: a configuration file others may read
// (it holds secrets) stops the host, which says why in one frame.
func TestHostRefusesReadableConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "host.json")
	if err := os.WriteFile(p, []byte(`{"secrets":{"PASSWORD":"x"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(nativehost.EnvConfig, p)
	code, out, errOut := run(t, "", extension.Origin())
	if code != ExitFailure || !strings.Contains(errOut, "chmod 600") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	ms := frames(t, out)
	if len(ms) != 1 || !bytes.Contains(ms[0].Params, []byte(`"name":"config"`)) || bytes.Contains(ms[0].Params, []byte(`"x"`)) {
		t.Fatalf("frames %+v", ms)
	}
}

// hostTalk is a conversation with a host process run in-process, as the
// extension has it: requests written as frames, frames read back.
type hostTalk struct {
	in     *io.PipeWriter
	out    *nativehost.Reader
	stderr *stderrWatch
	code   chan int
	id     int64
}

func startHost(t *testing.T) *hostTalk {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &hostTalk{in: inW, out: nativehost.NewReader(outR, 0), stderr: newStderrWatch(), code: make(chan int, 1)}
	go func() {
		code := Run(context.Background(), []string{extension.Origin()}, Stdio{In: inR, Out: outW, Err: h.stderr})
		outW.Close()
		h.code <- code
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return h
}

// call sends a request and returns its response, skipping the host's
// events and requests (a session's driver calls, left unanswered).
func (h *hostTalk) call(t *testing.T, method string, params any) nativehost.Message {
	t.Helper()
	h.id++
	b, err := nativehost.Message{V: nativehost.Version, Kind: nativehost.KindRequest, ID: h.id, Method: method, Params: mustJSON(params)}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := nativehost.NewWriter(h.in).WriteFrame(b); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := h.out.ReadFrame()
		if err != nil {
			t.Fatalf("%s: no response: %v\n%s", method, err, h.stderr)
		}
		m, err := nativehost.DecodeMessage(f)
		if err != nil {
			t.Fatal(err)
		}
		if m.Kind == nativehost.KindResponse && m.ID == h.id {
			return m
		}
	}
}

// end disconnects, as Chrome does when the extension lets go, and
// returns the exit code.
func (h *hostTalk) end(t *testing.T) int {
	t.Helper()
	h.in.Close()
	go func() {
		for {
			if _, err := h.out.ReadFrame(); err != nil {
				return
			}
		}
	}()
	return <-h.code
}

// TestHostOpensLiveAtFirstSession: with "listen" in the configuration,
// the host opens the live channel at the first session.start, never
// before: the host the options page starts (hello, config.get) neither
// listens nor writes the token file, so it works while another host's
// session holds the port; a session started while the port is taken is
// refused, saying why, for the popup to show.
func TestHostOpensLiveAtFirstSession(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name   string
		listen string
		start  string // in the error of session.start; "" for none
	}{
		{"the port is free", "127.0.0.1:0", ""},
		{"the port is taken", busy.Addr().String(), `the live channel: "listen" in the host configuration: `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfgPath := filepath.Join(dir, "host.json")
			t.Setenv(nativehost.EnvConfig, cfgPath)
			if code, _, errOut := run(t, "", "install", "--dir", filepath.Join(dir, "manifests")); code != ExitOK {
				t.Fatalf("install: %s", errOut)
			}
			cfg, err := nativehost.LoadConfig(cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			tokenFile := filepath.Join(dir, "token")
			cfg.Listen, cfg.LiveTokenFile, cfg.EvidenceDir = tt.listen, tokenFile, filepath.Join(dir, "evidence")
			if err := nativehost.SaveConfig(cfgPath, cfg); err != nil {
				t.Fatal(err)
			}

			h := startHost(t)
			for _, m := range []string{nativehost.MethodHello, nativehost.MethodConfigGet} {
				var params any = struct{}{}
				if m == nativehost.MethodHello {
					params = nativehost.HelloParams{Protocol: []int{nativehost.Version}, Extension: "test"}
				}
				if r := h.call(t, m, params); r.Error != nil {
					t.Fatalf("%s: %+v", m, r.Error)
				}
			}
			if _, err := os.Stat(tokenFile); !errors.Is(err, os.ErrNotExist) || strings.Contains(h.stderr.String(), "live console") {
				t.Fatalf("the live channel opened before a session (token file: %v):\n%s", err, h.stderr)
			}

			r := h.call(t, nativehost.MethodStart, nativehost.StartParams{TabID: 7, Goal: "read", Origins: []string{"https://example.com"}, Steps: []string{"extract text"}})
			switch {
			case tt.start == "" && r.Error != nil:
				t.Fatalf("session.start: %+v", r.Error)
			case tt.start == "":
				if !regexp.MustCompile(`aegis: live console: http://127\.0\.0\.1:\d+/#token=\S+ \(bearer token in ` + regexp.QuoteMeta(tokenFile) + `\)`).MatchString(h.stderr.String()) {
					t.Errorf("no live console line once the session started:\n%s", h.stderr)
				}
				if _, err := os.Stat(tokenFile); err != nil {
					t.Errorf("token file: %v", err)
				}
			case r.Error == nil || r.Error.Code != nativehost.CodeConfig || !strings.Contains(r.Error.Message, tt.start) || !strings.Contains(r.Error.Message, "address already in use"):
				t.Errorf("session.start with the port taken: %+v, want a config error saying so", r.Error)
			}
			if code := h.end(t); code != ExitOK {
				t.Errorf("exit %d\n%s", code, h.stderr)
			}
			if _, err := os.Stat(tokenFile); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the token file is left: %v", err)
			}
		})
	}
}

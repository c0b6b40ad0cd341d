package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
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

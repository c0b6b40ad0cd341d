package nativehost

import (
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
)

func TestDecodeMessage(t *testing.T) {
	tests := []struct {
		name string
		in   string
		code Code // 0: valid
	}{
		{"request", `{"v":1,"kind":"request","id":1,"method":"hello","params":{"protocol":[1]}}`, 0},
		{"request without params", `{"v":1,"kind":"request","id":7,"method":"session.abort"}`, 0},
		{"response result", `{"v":1,"kind":"response","id":3,"result":{}}`, 0},
		{"response error", `{"v":1,"kind":"response","id":3,"error":{"code":16,"name":"tab_closed","message":"gone"}}`, 0},
		{"event", `{"v":1,"kind":"event","event":"session.step","params":{}}`, 0},
		{"version 2", `{"v":2,"kind":"event","event":"x"}`, CodeUnsupportedVersion},
		{"no version", `{"kind":"event","event":"x"}`, CodeUnsupportedVersion},
		{"not JSON", `{"v":1,`, CodeBadMessage},
		{"array", `[1]`, CodeBadMessage},
		{"unknown member", `{"v":1,"kind":"event","event":"x","extra":1}`, CodeBadMessage},
		{"trailing data", `{"v":1,"kind":"event","event":"x"} {}`, CodeBadMessage},
		{"request without id", `{"v":1,"kind":"request","method":"hello"}`, CodeBadMessage},
		{"request with result", `{"v":1,"kind":"request","id":1,"method":"hello","result":{}}`, CodeBadMessage},
		{"response with both", `{"v":1,"kind":"response","id":1,"result":{},"error":{"code":1,"name":"x","message":"y"}}`, CodeBadMessage},
		{"response with neither", `{"v":1,"kind":"response","id":1}`, CodeBadMessage},
		{"event with id", `{"v":1,"kind":"event","id":1,"event":"x"}`, CodeBadMessage},
		{"negative id", `{"v":1,"kind":"request","id":-1,"method":"hello"}`, CodeBadMessage},
		{"id past 2^53", `{"v":1,"kind":"request","id":9007199254740993,"method":"hello"}`, CodeBadMessage},
		{"unknown kind", `{"v":1,"kind":"notify","event":"x"}`, CodeBadMessage},
		{"invalid UTF-8", "{\"v\":1,\"kind\":\"event\",\"event\":\"\xff\"}", CodeBadMessage},
		{"long method", `{"v":1,"kind":"request","id":1,"method":"` + strings.Repeat("m", 65) + `"}`, CodeBadMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeMessage([]byte(tt.in))
			if tt.code == 0 {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Code != tt.code {
				t.Fatalf("error = %v, want code %s", err, tt.code)
			}
		})
	}
}

func TestDecodeParamsStrict(t *testing.T) {
	var p StartParams
	err := DecodeParams([]byte(`{"tabId":1,"goal":"x","origins":["http://a"],"evil":true}`), &p)
	if !errors.Is(err, &Error{Code: CodeBadParams}) {
		t.Fatalf("unknown member: %v", err)
	}
	if err := DecodeParams(nil, &p); err != nil {
		t.Fatalf("no params: %v", err)
	}
}

// wantCodes is the append-only list: a code's number and name never
// change. Add new codes at the end, here and in PROTOCOL.md.
var wantCodes = []string{
	"bad_message", "frame_too_large", "unsupported_version", "handshake_required", "unknown_method",
	"bad_params", "session_running", "no_session", "unexpected_response", "approval_mismatch",
	"no_pending_approval", "origin_refused", "config", "internal", "timeout", "tab_closed",
	"navigation_failed", "origin_not_allowed", "script_failed", "unsupported", "shutting_down",
	"target_changed", "config_rejected",
}

func TestCodesAppendOnly(t *testing.T) {
	codes := Codes()
	if len(codes) < len(wantCodes) {
		t.Fatalf("%d codes, want at least %d: codes are never removed", len(codes), len(wantCodes))
	}
	for i, name := range wantCodes {
		if c := codes[i]; int(c) != i+1 || c.String() != name {
			t.Errorf("code %d is %d %q, want %d %q", i, int(c), c, i+1, name)
		}
	}
	if got := Code(999).String(); got != "code_999" {
		t.Errorf("unknown code = %q", got)
	}
}

// TestProtocolDocTable: PROTOCOL.md's table lists every code with its
// number and name, in order.
func TestProtocolDocTable(t *testing.T) {
	b, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?m)^\\| (\\d+) \\| `([a-z_]+)` \\|")
	m := re.FindAllStringSubmatch(string(b), -1)
	codes := Codes()
	if len(m) != len(codes) {
		t.Fatalf("PROTOCOL.md lists %d codes, the code has %d", len(m), len(codes))
	}
	for i, row := range m {
		n, _ := strconv.Atoi(row[1])
		if n != int(codes[i]) || row[2] != codes[i].String() {
			t.Errorf("PROTOCOL.md row %d: %s %s, want %d %s", i, row[1], row[2], int(codes[i]), codes[i])
		}
	}
}

func TestDriverCodes(t *testing.T) {
	tests := map[Code]contract.ErrorCode{
		CodeTimeout:          contract.CodeTimeout,
		CodeTabClosed:        contract.CodePageClosed,
		CodeShuttingDown:     contract.CodePageClosed,
		CodeNavigationFailed: contract.CodeNavigationBlocked,
		CodeOriginNotAllowed: contract.CodeNavigationBlocked,
		CodeUnsupported:      contract.CodeUnsupported,
		CodeScriptFailed:     contract.CodeInternal,
		CodeBadParams:        contract.CodeInternal,
		CodeTargetChanged:    contract.CodeTargetChanged,
	}
	for c, want := range tests {
		if got := (&Error{Code: c}).DriverCode(); got != want {
			t.Errorf("%s maps to %s, want %s", c, got, want)
		}
	}
	if !(&Error{Code: CodeScriptFailed}).Retryable() || (&Error{Code: CodeTimeout}).Retryable() {
		t.Error("only script_failed is retryable")
	}
}

func TestBound(t *testing.T) {
	if got := bound("a\x1b[31mb\nc\x7f", 100); got != "a [31mb\nc " {
		t.Errorf("bound = %q", got)
	}
	if got := bound("héllo", 2); got != "hé…" {
		t.Errorf("bound = %q", got)
	}
}

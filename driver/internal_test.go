package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

func TestParseSelector(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"#a", []string{"#a"}, false},
		{"#a >>> #b", []string{"#a", "#b"}, false},
		{"host>>>inner>>>leaf", []string{"host", "inner", "leaf"}, false},
		{`[aria-label=">>>"] >>> b`, []string{`[aria-label=">>>"]`, "b"}, false},
		{`[title=a>>>b]`, []string{`[title=a>>>b]`}, false},
		{`:is(a >>> b)`, []string{`:is(a >>> b)`}, false},
		{`a\>>>b`, []string{`a\>>>b`}, false},
		{"a > b", []string{"a > b"}, false},
		{"a >> b", []string{"a >> b"}, false},
		{"a >>>> b", []string{"a", "> b"}, false},
		{"\t#a\n>>>\f#b ", []string{"#a", "#b"}, false},
		{"", nil, true},
		{" >>> #a", nil, true},
		{"#a >>> ", nil, true},
		{"#a >>>>>> #b", nil, true},
		{`"unterminated`, nil, true},
		{strings.Repeat("a", MaxSelector+1), nil, true},
		{strings.Repeat("a >>> ", MaxSegments) + "a", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseSelector(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseSelector(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrElementNotFound) {
				t.Errorf("ParseSelector(%q) error %v is not element_not_found", tt.in, err)
			}
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseSelector(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func ExampleParseSelector() {
	segs, _ := ParseSelector(`#newsletter >>> form [aria-label="a >>> b"] >>> #subscribe`)
	fmt.Printf("%q\n", segs)
	// Output: ["#newsletter" "form [aria-label=\"a >>> b\"]" "#subscribe"]
}

func TestNormalizeOrigin(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080", false},
		{"HTTPS://Shop.Example:443/", "https://shop.example", false},
		{"http://shop.example:80", "http://shop.example", false},
		{"http://[::1]:9000", "http://[::1]:9000", false},
		{"https://shop.example/path", "", true},
		{"https://shop.example?q", "", true},
		{"https://user@shop.example", "", true},
		{"ftp://shop.example", "", true},
		{"shop.example", "", true},
		{"", "", true},
	}
	for _, tt := range tests {
		got, err := NormalizeOrigin(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("NormalizeOrigin(%q) = %q, %v; want %q, wantErr %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestHostPortAllowed(t *testing.T) {
	allowed := map[string]bool{"http://127.0.0.1:8080": true, "https://shop.example": true}
	for hp, want := range map[string]bool{
		"127.0.0.1:8080":   true,
		"shop.example:443": true,
		"SHOP.example:443": true,
		"shop.example:80":  false,
		"evil.example:443": false,
		"127.0.0.1:8081":   false,
		"garbage":          false,
	} {
		if got := hostPortAllowed(allowed, hp); got != want {
			t.Errorf("hostPortAllowed(%q) = %v, want %v", hp, got, want)
		}
	}
}

func TestAllowedURL(t *testing.T) {
	d := &pwDriver{allowed: map[string]bool{"http://127.0.0.1:8080": true}}
	for u, want := range map[string]bool{
		"http://127.0.0.1:8080/x?y":  true,
		"ws://127.0.0.1:8080/socket": true,
		"http://127.0.0.1:8081/":     false,
		"https://127.0.0.1:8080/":    false,
		"http://evil.example/":       false,
		"data:text/plain,hi":         true,
		"blob:http://127.0.0.1:8080": true,
		"file:///etc/passwd":         false,
		"chrome://settings":          false,
		"%zz":                        false,
	} {
		if got := d.allowedURL(u); got != want {
			t.Errorf("allowedURL(%q) = %v, want %v", u, got, want)
		}
	}
}

func TestBoundURL(t *testing.T) {
	long := "http://x.example/" + strings.Repeat("a", 3000)
	tests := []struct{ in, want string }{
		{"http://x.example/a", "http://x.example/a"},
		{"about:blank", "about:blank"},
		{"", ""},
		{"/relative", ""},
		{long + "#frag", long[:MaxURL]},
		{"http://x.example/p?" + strings.Repeat("q", 3000), "http://x.example/p"},
		{"http://x.example/" + strings.Repeat("a", MaxURL-19) + "%41", "http://x.example/" + strings.Repeat("a", MaxURL-19)},
	}
	for _, tt := range tests {
		got := boundURL(tt.in)
		if got != tt.want {
			t.Errorf("boundURL(%.40q...) = %.60q (len %d), want len %d", tt.in, got, len(got), len(tt.want))
		}
		if len(got) > MaxURL {
			t.Errorf("boundURL returned %d bytes", len(got))
		}
	}
}

func TestErrorIsAndMessages(t *testing.T) {
	e := &Error{Code: contract.CodeAmbiguousSelector, Selector: "button", Count: 3, Msg: "several match"}
	if !errors.Is(e, ErrAmbiguousSelector) || errors.Is(e, ErrElementNotFound) {
		t.Error("errors.Is does not follow the code")
	}
	wrapped := fmt.Errorf("step 3: %w", e)
	var got *Error
	if !errors.As(wrapped, &got) || got.Count != 3 {
		t.Error("errors.As through %w")
	}
	if !errors.Is(wrapped, ErrAmbiguousSelector) {
		t.Error("errors.Is through %w")
	}
	if s := e.Error(); !strings.Contains(s, "ambiguous_selector") || !strings.Contains(s, `"button"`) || !strings.Contains(s, "3 matches") {
		t.Errorf("Error() = %q", s)
	}
	te := (&Error{Code: contract.CodeInternal, Msg: strings.Repeat("é", 5000)}).ToolError()
	if n := utf8.RuneCountInString(te.Message); n > MaxErrorMessage {
		t.Errorf("ToolError message has %d characters", n)
	}
	if te := (&Error{Code: contract.CodeTimeout}).ToolError(); te.Message == "" {
		t.Error("empty ToolError message")
	}
	cause := errors.New("boom")
	if !errors.Is(&Error{Code: contract.CodeInternal, Err: cause}, cause) {
		t.Error("Unwrap")
	}
	for code, want := range map[error]contract.ErrorCode{nil: "", cause: contract.CodeInternal, wrapped: contract.CodeAmbiguousSelector} {
		if got := CodeOf(code); got != want {
			t.Errorf("CodeOf(%v) = %q, want %q", code, got, want)
		}
	}
}

func TestAsErrorScrubsTypedText(t *testing.T) {
	a := contract.Action{Type: contract.ActType, Selector: "#pw", Text: "hunter2-secret"}
	e := asError(&Error{Code: contract.CodeInternal, Msg: "could not type hunter2-secret", Err: errors.New("echo hunter2-secret")}, a)
	if strings.Contains(e.Error(), "hunter2-secret") || strings.Contains(e.ToolError().Message, "hunter2-secret") {
		t.Fatalf("typed text survives: %v", e)
	}
}

func TestObserveOptionsMerged(t *testing.T) {
	got := ObserveOptions{MaxAffordances: 99999, SensitiveSelectors: []string{"#a", "#b"}}.
		merged(ObserveOptions{MaxTextChars: 10, SensitiveSelectors: []string{"#b"}}, []string{"#c"})
	want := ObserveOptions{
		SensitiveSelectors: []string{"#c", "#b", "#a"},
		MaxElements:        DefaultMaxElements, MaxDepth: DefaultMaxDepth, MaxTextChars: 10,
		MaxSnapshotChars: DefaultMaxSnapshotChars, MaxAffordances: MaxAffordances,
		MaxAffordanceText: DefaultMaxAffordanceText, MaxSelector: DefaultMaxSelector,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged = %+v\nwant     %+v", got, want)
	}
}

func TestDefaultRisk(t *testing.T) {
	want := map[contract.ActionType]contract.RiskTag{
		contract.ActNavigate: contract.RiskHigh, contract.ActClick: contract.RiskMedium, contract.ActType: contract.RiskMedium,
		contract.ActSelect: contract.RiskMedium, contract.ActScroll: contract.RiskLow, contract.ActWait: contract.RiskLow, contract.ActExtract: contract.RiskLow,
	}
	for _, at := range contract.ActionTypes() {
		if got := DefaultRisk(at); got != want[at] {
			t.Errorf("DefaultRisk(%s) = %s, want %s", at, got, want[at])
		}
	}
}

const samplePage = `{"ok":true,"url":"http://127.0.0.1:1/form","title":"Order","viewport":{"width":1280,"height":720,"dpr":1},` +
	`"text":"Place an order","affordances":[{"selector":"#name","role":"textbox","text":"Full name","hint":"type"},` +
	`{"selector":"","hint":"click"},{"selector":"#x","hint":"hover"}],"stats":{"elements":3},` +
	`"snapshot":{"v":1,"root":["#document",{"url":"u"},["input",{"type":"password","value":"[masked]"}]],"truncated":{"walk":false}}}`

func TestParsePage(t *testing.T) {
	o := ObserveOptions{}.merged(ObserveOptions{}, nil)
	po, err := parsePage([]byte(samplePage), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(po.Affordances) != 2 || po.Affordances[1].ActionHint != "" || po.Affordances[0].ActionHint != contract.HintType {
		t.Errorf("affordances = %+v (want the empty selector dropped, the unknown hint dropped)", po.Affordances)
	}
	canon, _ := canonjson.Transform(po.Snapshot)
	if string(canon) != string(po.Snapshot) || !strings.HasPrefix(string(po.Snapshot), `{"root":`) {
		t.Errorf("snapshot is not canonical: %s", po.Snapshot)
	}
	for name, tc := range map[string]struct {
		data string
		code contract.ErrorCode
	}{
		"not json":      {`{"ok":tru`, contract.CodeInternal},
		"unknown field": {`{"ok":true,"extra":1,"snapshot":{}}`, contract.CodeInternal},
		"trailing":      {`{"ok":true,"snapshot":{}} {}`, contract.CodeInternal},
		"no snapshot":   {`{"ok":true}`, contract.CodeInternal},
		"page failure":  {`{"ok":false,"code":"not_interactable","msg":"hidden"}`, contract.CodeNotInteractable},
		"odd code":      {`{"ok":false,"code":"rm -rf","msg":"x"}`, contract.CodeInternal},
	} {
		_, err := parsePage([]byte(tc.data), o)
		if CodeOf(err) != tc.code {
			t.Errorf("%s: error %v, want code %s", name, err, tc.code)
		}
	}
	// Bounds are enforced whatever the page sends.
	o.MaxTextChars, o.MaxAffordances, o.MaxSnapshotChars, o.MaxAffordanceText = 50, 1, 20, 5
	big := fmt.Sprintf(`{"ok":true,"text":%q,"affordances":[{"selector":"#a","text":"abcdefghij"},{"selector":"#b"}],"snapshot":{"a":%q}}`,
		strings.Repeat("t", 500), strings.Repeat("s", 100))
	po, err = parsePage([]byte(big), o)
	if err != nil {
		t.Fatal(err)
	}
	if utf8.RuneCountInString(po.Text) != 50 || !strings.HasSuffix(po.Text, TextTruncatedMarker) {
		t.Errorf("text %q", po.Text)
	}
	if len(po.Affordances) != 1 || po.Affordances[0].Text != "abcde" {
		t.Errorf("affordances %+v", po.Affordances)
	}
	if string(po.Snapshot) != emptySnapshot {
		t.Errorf("oversized snapshot kept: %s", po.Snapshot)
	}
	if po.Viewport.Width != 1 || po.Viewport.DeviceScaleFactor != 1 {
		t.Errorf("viewport %+v, want clamped", po.Viewport)
	}
}

// observationOf builds the observation a driver would build from po.
func observationOf(po pageObservation) contract.Observation {
	cfg := Config{SessionID: "s-1", Mode: contract.ModePlaywright,
		PolicyContext: contract.PolicyContext{Classification: contract.ClassPublic, MaxStepBudget: 1, DecisionLogID: "d"}}
	return observation(cfg, po, "http://127.0.0.1:1/", nil, time.Unix(0, 0))
}

func FuzzParsePage(f *testing.F) {
	f.Add([]byte(samplePage))
	f.Add([]byte(`{"ok":true,"snapshot":[]}`))
	f.Add([]byte(`{"ok":false,"code":"ambiguous_selector","msg":"2 match","count":2}`))
	f.Add([]byte(`{"ok":true,"text":"\ud800","title":"\u0000","affordances":[{"selector":"\u00e9 >>> a","role":"` + strings.Repeat("r", 200) + `"}],"snapshot":{"b":1e400}}`))
	o := ObserveOptions{MaxTextChars: 300, MaxAffordances: 3, MaxSnapshotChars: 2000, MaxAffordanceText: 10}.merged(ObserveOptions{}, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		po, err := parsePage(data, o)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		if utf8.RuneCountInString(po.Text) > o.MaxTextChars || len(po.Affordances) > o.MaxAffordances || utf8.RuneCount(po.Snapshot) > o.MaxSnapshotChars {
			t.Fatalf("bounds broken: text %d, affordances %d, snapshot %d", utf8.RuneCountInString(po.Text), len(po.Affordances), utf8.RuneCount(po.Snapshot))
		}
		canon, err := canonjson.Transform(po.Snapshot)
		if err != nil || string(canon) != string(po.Snapshot) {
			t.Fatalf("snapshot not canonical: %v", err)
		}
		obs := observationOf(po)
		if _, err := contract.Encode(schemas.KindObservation, obs); err != nil {
			b, _ := json.Marshal(obs)
			t.Fatalf("observation from accepted page data breaks the schema: %v\n%s", err, b)
		}
	})
}

func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{"#a", "#a >>> #b", `[x=">>>"]`, `a\>>>b`, `:is(a >>> b) >>> c`, `"`, " >>> ", "a >>>> b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sel string) {
		segs, err := ParseSelector(sel)
		if err != nil {
			if !errors.Is(err, ErrElementNotFound) {
				t.Fatalf("error %v is not element_not_found", err)
			}
			return
		}
		if len(segs) == 0 || len(segs) > MaxSegments {
			t.Fatalf("%d segments", len(segs))
		}
		total := 0
		for _, s := range segs {
			if s == "" || strings.Trim(s, " \t\n\r\f") != s {
				t.Fatalf("segment %q empty or untrimmed", s)
			}
			total += len(s)
		}
		if total > len(sel) {
			t.Fatalf("segments longer than the selector")
		}
		if len(segs) == 1 && strings.Trim(sel, " \t\n\r\f") != segs[0] {
			t.Fatalf("single segment %q is not the trimmed selector", segs[0])
		}
	})
}

// The driver vouches only for a sensitive selector it holds: one the
// observer reports that is not in the session's list is an internal error,
// not a fact the gate judges on.
func TestDescribedElementSensitiveSelector(t *testing.T) {
	list := []string{"#vault", ".pin"}
	for _, tt := range []struct {
		reported string
		wantErr  bool
	}{
		{"", false},
		{".pin", false},
		{"#other", true},
		{"#VAULT", true},
	} {
		got, err := describedElement("#x", contract.Element{Tag: "input", SensitiveSelector: tt.reported}, list)
		if (err != nil) != tt.wantErr {
			t.Errorf("reported %q: err %v, want error %v", tt.reported, err, tt.wantErr)
		}
		if err == nil && got.SensitiveSelector != tt.reported {
			t.Errorf("reported %q: got %q", tt.reported, got.SensitiveSelector)
		}
	}
}

// TestRunCtxOwnedReleases: what a call makes after its caller gave up is
// released; what the caller took is not.
func TestRunCtxOwnedReleases(t *testing.T) {
	released := make(chan int, 1)
	release := func(v int) { released <- v }

	v, err := runCtxOwned(context.Background(), func() (int, error) { return 7, nil }, release)
	if got, want := fmt.Sprint(v, err), "7 <nil>"; got != want {
		t.Fatalf("taken: got %s, want %s", got, want)
	}
	select {
	case v := <-released:
		t.Fatalf("released %d that the caller took", v)
	default: // release runs only on the ctx.Done branch, which was not taken
	}

	ctx, cancel := context.WithCancel(context.Background())
	started, proceed := make(chan struct{}), make(chan struct{})
	go func() { <-started; cancel() }()
	_, err = runCtxOwned(ctx, func() (int, error) {
		close(started)
		<-proceed // made only after the caller gave up
		return 8, nil
	}, release)
	if err == nil {
		t.Fatal("the caller did not give up on a cancelled context")
	}
	close(proceed)
	if got, want := <-released, 8; got != want {
		t.Errorf("released %d, want %d", got, want)
	}
}

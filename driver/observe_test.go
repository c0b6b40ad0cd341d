package driver_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/driver/drivertest"
)

// A page with 100,000 interactive elements gives a bounded observation,
// keeping the elements in the viewport. (How long it takes is a benchmark's
// business, not a test's: BenchmarkObserve/aegis-huge.)
func TestObserveHugePageIsBounded(t *testing.T) {
	site := startSite(t)
	d := open(t, contract.ModePlaywright, site.URL(), func(c *driver.Config) { c.NavigationTimeout = 60 * time.Second })
	closeDriver(t, d)
	if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site.URL() + "/big?n=100000"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	obs, err := d.Observe(ctx, driver.ObserveOptions{})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	drivertest.CheckObservation(t, obs)
	b, _ := json.Marshal(obs)
	t.Logf("observe of 100,000 elements: %v, %d bytes, %d affordances, stats %v", took, len(b), len(obs.Affordances), driver.LastStats(d))
	if len(b) > 4<<20 {
		t.Errorf("observation is %d bytes", len(b))
	}
	if got, want := len(obs.Affordances), driver.DefaultMaxAffordances; got != want {
		t.Errorf("%d affordances, want the default bound %d", got, want)
	}
	if _, ok := findAff(obs, "#buy-0"); !ok {
		t.Errorf("no affordance for the first item (in the viewport)")
	}
	if len([]rune(obs.DOMSnapshot)) > driver.DefaultMaxSnapshotChars || len([]rune(obs.DOMText)) > driver.DefaultMaxTextChars {
		t.Errorf("snapshot %d, text %d characters: past the defaults", len([]rune(obs.DOMSnapshot)), len([]rune(obs.DOMText)))
	}
	if !strings.Contains(obs.DOMSnapshot, `"#truncated"`) {
		t.Errorf("snapshot is not marked truncated")
	}
	st := driver.LastStats(d)
	if st["walkTruncated"] != true {
		t.Errorf("walk not truncated on 100,000 elements: %v", st)
	}
	// Smaller limits are honoured exactly.
	small, err := d.Observe(ctx, driver.ObserveOptions{MaxAffordances: 10, MaxTextChars: 1000, MaxSnapshotChars: 5000})
	if err != nil {
		t.Fatal(err)
	}
	drivertest.CheckObservation(t, small)
	if len(small.Affordances) != 10 || len([]rune(small.DOMText)) > 1000 || len([]rune(small.DOMSnapshot)) > 5000 {
		t.Errorf("small limits: %d affordances, %d text, %d snapshot", len(small.Affordances), len([]rune(small.DOMText)), len([]rune(small.DOMSnapshot)))
	}
	if !strings.HasSuffix(small.DOMText, driver.TextTruncatedMarker) {
		t.Errorf("cut text does not end with the marker")
	}
}

// The observer's selector splitting and ParseSelector agree.
func TestSelectorSyntaxMatchesObserver(t *testing.T) {
	d := open(t, contract.ModePlaywright, "http://127.0.0.1:1")
	closeDriver(t, d)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, sel := range selectorCases {
		raw, err := driver.CallObserver(ctx, d, "split", sel)
		if err != nil {
			t.Fatalf("split %q: %v", sel, err)
		}
		var js struct {
			OK       bool     `json:"ok"`
			Segments []string `json:"segments"`
		}
		if err := json.Unmarshal(raw, &js); err != nil {
			t.Fatal(err)
		}
		goSegs, goErr := driver.ParseSelector(sel)
		if js.OK != (goErr == nil) {
			t.Errorf("%q: observer ok=%v, Go error %v", sel, js.OK, goErr)
			continue
		}
		if js.OK && !reflect.DeepEqual(js.Segments, goSegs) {
			t.Errorf("%q: observer %q, Go %q", sel, js.Segments, goSegs)
		}
	}
}

var selectorCases = []string{
	"#a",
	"#a >>> #b",
	"#a>>>#b>>>c d",
	`[aria-label=">>>"]`,
	`[aria-label='a >>> b'] >>> button`,
	`a\>>>b`,
	`:is(a >>> b)`,
	`x[y=">>>"] >>> z`,
	" >>> #a",
	"#a >>> ",
	"#a >>>>>> #b",
	`"unterminated`,
	`#a >>> "x`,
	"\t#a\n>>>\f#b ",
	"#a > b >> c",
	"a >>>> b",
	`[x="\"" ] >>> y`,
}

func findAff(obs contract.Observation, sel string) (contract.Affordance, bool) {
	for _, a := range obs.Affordances {
		if a.Selector == sel {
			return a, true
		}
	}
	return contract.Affordance{}, false
}

// The Playwright driver fetches observations packed: observePacked answers
// observe's JSON, compressed, and the snapshot in it is already canonical
// (so Go only checks it).
func TestObservePacked(t *testing.T) {
	site := startSite(t)
	d := open(t, contract.ModePlaywright, site.URL())
	closeDriver(t, d)
	for _, path := range []string{"/big?n=300", "/form", "/shadow", "/frame"} {
		if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site.URL() + path}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		opts := map[string]any{"sensitive": []string{"#name"}}
		plain, err := driver.CallObserver(ctx, d, "observe", opts)
		if err != nil {
			t.Fatal(err)
		}
		packed, err := driver.CallObserver(ctx, d, "observePacked", opts)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(packed), "deflate-raw;base64,") || len(packed) >= len(plain) {
			t.Fatalf("%s: observePacked answered %d bytes %.40q, not packed (plain: %d bytes)", path, len(packed), packed, len(plain))
		}
		unpacked, err := driver.Unpack(packed)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		type page struct {
			Text        string            `json:"text"`
			Affordances []json.RawMessage `json:"affordances"`
			Snapshot    json.RawMessage   `json:"snapshot"`
		}
		var a, b page
		if err := json.Unmarshal(plain, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(unpacked, &b); err != nil {
			t.Fatalf("%s: unpacked answer is not JSON: %v", path, err)
		}
		if !reflect.DeepEqual(a, b) || len(a.Affordances) == 0 {
			t.Errorf("%s: packed and plain observations differ (%d and %d affordances)", path, len(a.Affordances), len(b.Affordances))
		}
		if !driver.IsCanonical(b.Snapshot) {
			t.Errorf("%s: the observer's snapshot is not in canonical form: %.300s", path, b.Snapshot)
		}
	}
}

// A page nested deeper than a general JSON document may be (a button
// inside 100 sections, as single-page applications nest) is observed,
// with the deep button as an affordance; a page deeper than the walk's
// bound is observed to that bound.
func TestObserveDeepPage(t *testing.T) {
	site := startSite(t)
	d := open(t, contract.ModePlaywright, site.URL(), func(*driver.Config) {})
	closeDriver(t, d)
	for _, tt := range []struct {
		n        int
		deepest  bool
		truncate bool
	}{
		{100, true, false},
		{400, false, true}, // past DefaultMaxDepth (256)
	} {
		if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site.URL() + "/deep?n=" + strconv.Itoa(tt.n)}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		obs, err := d.Observe(ctx, driver.ObserveOptions{})
		cancel()
		if err != nil {
			t.Fatalf("%d levels: %v", tt.n, err)
		}
		drivertest.CheckObservation(t, obs)
		if _, ok := findAff(obs, "#deepest"); ok != tt.deepest {
			t.Errorf("%d levels: affordance for the deepest button %v, want %v", tt.n, ok, tt.deepest)
		}
		if got := driver.LastStats(d)["tooDeep"]; (got != nil && got != float64(0)) != tt.truncate {
			t.Errorf("%d levels: tooDeep %v, want truncation %v", tt.n, got, tt.truncate)
		}
	}
}

// Two browsers launched at once (a session and a console in one process)
// do not race: playwright-go prepares its driver in a package variable.
func TestConcurrentLaunch(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Chromium")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			b, err := driver.Launch(ctx, driver.BrowserOptions{})
			if err == nil {
				err = b.Close(context.Background())
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

package driver_test

import (
	"context"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
)

// identityBody is a page whose "Change" button changes the others: it
// moves a class on #keep, replaces #swap by a new element with the same
// id, hides #hide, disables #off, renames #next "Place order", gives
// #rerole the role link, and covers #under and #far (below the viewport)
// with an overlay each.
const identityBody = `<!doctype html><html><head><meta charset="utf-8"><title>Identity</title>
<style>.on { font-weight: bold; }</style></head><body>
<button id="change">Change</button>
<button id="keep">Keep</button>
<div id="box"><button id="swap">Swap</button></div>
<button id="hide">Hide</button>
<button id="off">Off</button>
<button id="next">Next</button>
<button id="rerole">Details</button>
<button id="under">Under</button>
<div style="height: 3000px"></div>
<button id="far">Far</button>
<script>
function cover(el) {
  const r = el.getBoundingClientRect();
  const d = document.createElement('div');
  d.style.cssText = 'position:absolute;background:#0008;left:' + (r.left + scrollX - 4) + 'px;top:' + (r.top + scrollY - 4) +
    'px;width:' + (r.width + 8) + 'px;height:' + (r.height + 8) + 'px';
  document.body.appendChild(d);
}
document.getElementById('change').addEventListener('click', () => {
  document.getElementById('keep').classList.add('on');
  document.getElementById('keep').setAttribute('aria-pressed', 'true');
  document.getElementById('box').innerHTML = '<button id="swap">Swap</button>';
  document.getElementById('hide').style.display = 'none';
  document.getElementById('off').disabled = true;
  document.getElementById('next').textContent = 'Place order';
  document.getElementById('rerole').setAttribute('role', 'link');
  cover(document.getElementById('under'));
  cover(document.getElementById('far'));
});
</script>
</body></html>`

// TestDescribeObserved: Describe says, in both drivers, whether the
// element a selector resolves to is the one the last Observe listed under
// it: unknown before any Observe, for a selector the Observe did not list
// and in a new document; same for an element whose class and attributes
// changed, and for one covered outside the viewport (a click scrolls it
// into view first); replaced, hidden, disabled, changed (a new name or
// role) or covered (an overlay on top of it) when it is so.
func TestDescribeObserved(t *testing.T) {
	site := servePages(t, map[string]string{"": identityBody})
	inBothDrivers(t, site, func(t *testing.T, d driver.Driver, _ contract.DriverMode) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		observed := func(sel string) driver.Observed {
			t.Helper()
			_, o, err := d.DescribeObserved(ctx, sel)
			if err != nil {
				t.Fatalf("describe %s: %v", sel, err)
			}
			return o
		}
		if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site + "/"}); err != nil {
			t.Fatal(err)
		}
		if got := observed("#keep"); got != driver.ObservedUnknown {
			t.Errorf("before any observe: %s, want unknown", got)
		}
		obs, err := d.Observe(ctx, driver.ObserveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		listed := map[string]bool{}
		for _, a := range obs.Affordances {
			listed[a.Selector] = true
		}
		for _, sel := range []string{"#change", "#keep", "#swap", "#hide", "#off", "#next", "#rerole", "#under", "#far"} {
			if !listed[sel] {
				t.Fatalf("the observation does not list %s: %+v", sel, obs.Affordances)
			}
		}
		if got := observed("#keep"); got != driver.ObservedSame {
			t.Errorf("#keep right after the observe: %s, want same", got)
		}
		if _, err := act(t, d, contract.Action{Type: contract.ActClick, Selector: "#change"}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			sel  string
			want driver.Observed
		}{
			{"#keep", driver.ObservedSame},
			{"#swap", driver.ObservedReplaced},
			{"#hide", driver.ObservedHidden},
			{"#off", driver.ObservedDisabled},
			{"#next", driver.ObservedChanged},
			{"#rerole", driver.ObservedChanged},
			{"#under", driver.ObservedCovered},
			{"#far", driver.ObservedSame},
			{"#box > button", driver.ObservedUnknown},
			{"button#keep", driver.ObservedUnknown},
		} {
			if got := observed(tc.sel); got != tc.want {
				t.Errorf("%s after the change: %s, want %s", tc.sel, got, tc.want)
			}
		}
		if _, err := act(t, d, contract.Action{Type: contract.ActNavigate, URL: site + "/again"}); err != nil {
			t.Fatal(err)
		}
		if got := observed("#keep"); got != driver.ObservedUnknown {
			t.Errorf("in a new document: %s, want unknown", got)
		}
	})
}

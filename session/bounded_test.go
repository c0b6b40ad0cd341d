package session_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aegis-run/aegis/contract"
)

// boundedBody is a page whose button breaks every bound of a decision's
// target (decision-record #/$defs/element): an id, a name, a label and a
// text far over them, in characters of several bytes, and a label that
// starts with the text the evidence writer puts in place of a masked
// value.
var boundedBody = `<!doctype html><html><head><title>Bounded</title></head><body>
<button class="more" type="button" id="` + strings.Repeat("i", 600) + `" name="` + strings.Repeat("n", 600) + `"
 aria-label="{{redacted}} {{secret:PASSWORD}} ` + strings.Repeat("détails 🙂 ", 400) + `">` + strings.Repeat("Plus de détails 🙂 ", 600) + `</button>
<p id="out"></p>
<script>document.querySelector('button.more').addEventListener('click', () => { document.getElementById('out').textContent = 'shown'; });</script>
</body></html>`

// TestTruncatedTargetVerifies: the driver truncates an element that breaks
// its bounds to them (by characters, never inside one), the gate judges
// and hashes the truncated element, the decision records it, and the
// bundle verifies: the verifier recomputes the decision's hash from the
// recorded target, the page's own {{redacted}} text included (the writer
// masked nothing, so masked is absent and the hash is checked).
func TestTruncatedTargetVerifies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, boundedBody)
	}))
	t.Cleanup(srv.Close)
	model := fakeModel(t, nil, script(
		answer("done", aClick("a1", "button.more")),
	))
	pl, nav := llmAgents(t, model, nil)
	cfg := cfgFor(t, task("Show the details", []string{srv.URL + "/"}, ""), pl, nav)
	res, err := run(t, cfg)
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s, err %v", res.Status, err)
	}
	files := verify(t, res)
	d := lastDecision(t, files, "a1")
	if d == nil || !d.Allow || d.Target == nil || d.Action == nil || d.ActiveURL == nil {
		t.Fatalf("decision of a1: %+v", d)
	}
	if d.Masked != nil {
		t.Errorf("masked %q: the writer masked nothing", d.Masked)
	}
	el := d.Target
	for _, f := range []struct {
		name  string
		value string
		max   int
	}{
		{"id", el.ID, 256}, {"name", el.Name, 256}, {"label", el.Label, 1024}, {"text", el.Text, 1024},
	} {
		if !utf8.ValidString(f.value) {
			t.Errorf("%s is not valid UTF-8 after truncation", f.name)
		}
		if n := utf8.RuneCountInString(f.value); n == 0 || n > f.max {
			t.Errorf("%s holds %d characters, want 1 to %d", f.name, n, f.max)
		}
	}
	if !strings.HasPrefix(el.Label, contract.RedactedText+" {{secret:PASSWORD}}") {
		t.Errorf("label %.40q..., want the page's own text", el.Label)
	}
}

package session_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/navigator"
	"github.com/aegis-run/aegis/session"
)

// revealBody is a page that reacts: the first button renders the form
// again (its fields are new elements), and typing a name renders the
// colour list again. A batch stops before an action whose target was
// replaced, and skips the rest.
const revealBody = `<!doctype html><html><head><meta charset="utf-8"><title>Order</title></head><body>
<h1>Order</h1>
<button type="button" id="reveal" onclick="var f=document.getElementById('f');f.innerHTML=f.innerHTML;document.getElementById('out').textContent='Form shown'">Submit</button>
<div id="f">
<label for="name">Full name</label> <input type="text" id="name" name="name" oninput="var c=document.getElementById('colour');c.replaceWith(c.cloneNode(true))">
<label for="colour">Colour</label> <select id="colour" name="colour"><option value="red">Red</option><option value="blue">Blue</option></select>
</div>
<p id="out" role="status"></p>
</body></html>`

// revealSite serves revealBody at /.
func revealSite(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(revealBody))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// inBothModes runs check with the extension driver and with Playwright.
func inBothModes(t *testing.T, check func(t *testing.T, mode contract.DriverMode)) {
	for _, mode := range []contract.DriverMode{contract.ModeSandbox, contract.ModePlaywright} {
		t.Run(string(mode), func(t *testing.T) { check(t, mode) })
	}
}

// modeCfg is cfgFor with the driver of mode (Playwright launches its own
// browser for the session).
func modeCfg(t *testing.T, mode contract.DriverMode, in contract.Input, nav navigator.Navigator) session.Config {
	t.Helper()
	pl, _ := stepsAgents(t, task(in.Goal, in.URLs, `{"steps":["wait 1 ms"]}`), nil)
	cfg := cfgFor(t, in, pl, nav)
	if mode == contract.ModePlaywright {
		cfg.Driver = driver.Config{Mode: contract.ModePlaywright, ActionTimeout: 2 * time.Second}
	}
	return cfg
}

const revealScript = `{"script": [
	{"id":"s1","type":"click","reason":"show the form","policyTags":[],"selector":"#reveal"},
	{"id":"s2","type":"type","reason":"name","policyTags":[],"selector":"#name","text":"Ada Lovelace","redact":false},
	{"id":"s3","type":"select","reason":"colour","policyTags":[],"selector":"#colour","value":"blue"},
	{"id":"s4","type":"extract","reason":"keep a picture","policyTags":[],"extract":"screenshot"}
]}`

// TestScriptResumesSkippedActions: the script's first click changes the
// page, so the session skips the rest of the batch; the script hands the
// skipped actions out again and every one of them runs.
func TestScriptResumesSkippedActions(t *testing.T) {
	inBothModes(t, func(t *testing.T, mode contract.DriverMode) {
		url := revealSite(t)
		in := task("Fill the order", []string{url}, revealScript)
		nav, err := navigator.NewScriptFromHints(in.Hints, navigator.ScriptOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := modeCfg(t, mode, in, nav)
		var items []string
		cfg.OnStep = func(r session.StepReport) {
			if r.Executed {
				items = append(items, r.Plan.String())
			}
		}
		res, err := run(t, cfg)
		if err != nil || res.Status != contract.SessionCompleted {
			t.Fatalf("status %s, err %v, summary %q", res.Status, err, res.Output.Summary)
		}
		// The progress says which scripted action ran (none for the first URL).
		if got, want := strings.Join(items, ","), ",script 1/4,script 2/4,script 3/4,script 4/4"; got != want {
			t.Errorf("plan items %q, want %q", got, want)
		}
		if got, want := res.Plan.String(), "script 4/4"; got != want {
			t.Errorf("result plan %q, want %q", got, want)
		}
		// A skipped action runs again under a fresh id (the session's ids
		// are unique): s2 once, s3 and s4 twice skipped.
		ran := ranIDs(t, verify(t, res))
		if got, want := strings.Join(ran, " "), "start s1 s2.2 s3.3 s4.3"; got != want {
			t.Errorf("ran %q, want %q", got, want)
		}
		if len(res.Artifacts) != 1 || res.Artifacts[0].Type != contract.ArtifactScreenshot {
			t.Errorf("artifacts %+v, want the screenshot", res.Artifacts)
		}
	})
}

// TestScriptDeniedFails: a denied scripted action ends the session
// failed, the denial its reason; the actions after it never run.
func TestScriptDeniedFails(t *testing.T) {
	inBothModes(t, func(t *testing.T, mode contract.DriverMode) {
		url := revealSite(t)
		in := task("Fill the order", []string{url}, `{"script": [
	{"id":"s1","type":"click","reason":"show the form","policyTags":[],"selector":"#reveal"},
	{"id":"s2","type":"type","reason":"name","policyTags":[],"selector":"#name","text":"Ada Lovelace","redact":false},
	{"id":"s3","type":"navigate","reason":"leave","policyTags":[],"url":"http://evil.example/"},
	{"id":"s4","type":"extract","reason":"keep a picture","policyTags":[],"extract":"screenshot"}
]}`)
		nav, err := navigator.NewScriptFromHints(in.Hints, navigator.ScriptOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := run(t, modeCfg(t, mode, in, nav))
		deniedFails(t, res, err, "s3.2", "start s1 s2.2")
		if got, want := res.Plan.String(), "script 2/4"; got != want {
			t.Errorf("result plan %q, want %q", got, want)
		}
	})
}

// TestStepsDeniedAfterSkipFails: the steps agent likewise.
func TestStepsDeniedAfterSkipFails(t *testing.T) {
	inBothModes(t, func(t *testing.T, mode contract.DriverMode) {
		url := revealSite(t)
		in := task("Fill the order", []string{url}, `{"steps": [
	"click \"Submit\"",
	"type \"Ada Lovelace\" into \"Full name\"",
	"select \"Blue\" in \"Colour\"",
	"navigate http://evil.example/",
	"extract screenshot"
]}`)
		_, nav := stepsAgents(t, in, nil)
		res, err := run(t, modeCfg(t, mode, in, nav))
		deniedFails(t, res, err, "step4.2", "start step1 step2 step3.2")
		if got, want := res.Plan.String(), "steps 3/5"; got != want {
			t.Errorf("result plan %q, want %q", got, want)
		}
	})
}

// TestStepsCompleteAfterSkip: every step runs, the last one a screenshot.
func TestStepsCompleteAfterSkip(t *testing.T) {
	inBothModes(t, func(t *testing.T, mode contract.DriverMode) {
		url := revealSite(t)
		in := task("Fill the order", []string{url}, `{"steps": [
	"click \"Submit\"",
	"expect \"Form shown\"",
	"type \"Ada Lovelace\" into \"Full name\"",
	"select \"Blue\" in \"Colour\"",
	"extract screenshot"
]}`)
		_, nav := stepsAgents(t, in, nil)
		res, err := run(t, modeCfg(t, mode, in, nav))
		if err != nil || res.Status != contract.SessionCompleted {
			t.Fatalf("status %s, err %v, summary %q", res.Status, err, res.Output.Summary)
		}
		if got, want := strings.Join(ranIDs(t, verify(t, res)), " "), "start step1 step3 step4.2 step5.2"; got != want {
			t.Errorf("ran %q, want %q", got, want)
		}
		if got, want := res.Plan.String(), "steps 5/5"; got != want {
			t.Errorf("result plan %q, want %q", got, want)
		}
	})
}

// deniedFails checks a session that ended failed on the denial of id,
// after the actions ran ran.
func deniedFails(t *testing.T, res session.Result, err error, id, ran string) {
	t.Helper()
	var se *session.Error
	if !errors.As(err, &se) || se.Code != "navigator" || res.Status != contract.SessionFailed {
		t.Fatalf("status %s err %v", res.Status, err)
	}
	if !strings.Contains(res.Output.Summary, "action "+id+" denied") || !strings.Contains(res.Output.Summary, "origin_not_allowed") {
		t.Errorf("summary %q does not give the denial of %s", res.Output.Summary, id)
	}
	files := verify(t, res)
	if got := strings.Join(ranIDs(t, files), " "); got != ran {
		t.Errorf("ran %q, want %q", got, ran)
	}
	if d := lastDecision(t, files, id); d == nil || d.Allow {
		t.Errorf("decision of %s = %+v, want a denial", id, d)
	}
}

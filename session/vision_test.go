package session_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // screenshots may be JPEG
	_ "image/png"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/driver"
	"github.com/aegis-run/aegis/gate"
	"github.com/aegis-run/aegis/llm/llmtest"
	"github.com/aegis-run/aegis/policy"
	"github.com/aegis-run/aegis/session"
)

// visionPage has a password field holding a known value at a known box
// (fieldBox, CSS pixels) on a yellow page.
const visionPage = `<!doctype html><html><head><meta charset="utf-8"><title>Sign in</title></head>
<body style="margin:0;background:#ff0">
<input type="password" id="pw" aria-label="Password" value="` + visionSecret + `" style="position:absolute;left:40px;top:60px;width:300px;height:40px;font:20px monospace;border:0;background:#fff">
<button type="button" id="go" style="position:absolute;left:40px;top:160px">Go</button>
</body></html>`

const visionSecret = "pw-visible-4711"

var (
	visionField = image.Rect(40, 60, 340, 100)
	visionBlank = image.Rect(400, 60, 600, 100) // the page's background: never masked
)

// aVision is the model asking to see the page.
func aVision(id string) string {
	return `{"id":"` + id + `","type":"extract","reason":"look","policyTags":[],"extract":"screenshot","vision":true}`
}

// visionRun runs a session on visionPage with the fake model answering
// the Navigator's n-th request with nav(n), and returns what it recorded.
func visionRun(t *testing.T, class contract.Classification, images bool, nav ...llmtest.Reply) (session.Result, map[string][]byte, []llmtest.Request) {
	t.Helper()
	return visionRunCfg(t, func(cfg *session.Config) { cfg.Classification, cfg.ModelImages = class, images }, nav...)
}

// visionRunCfg is visionRun with the config set by mutate.
func visionRunCfg(t *testing.T, mutate func(*session.Config), nav ...llmtest.Reply) (session.Result, map[string][]byte, []llmtest.Request) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, visionPage)
	}))
	t.Cleanup(srv.Close)
	model := fakeModel(t, nil, script(nav...))
	pl, nv := llmAgents(t, model, nil)
	cfg := cfgFor(t, task("look at the sign-in page", []string{srv.URL + "/"}, ""), pl, nv)
	mutate(&cfg)
	res, err := run(t, cfg)
	if err != nil || res.Status != contract.SessionCompleted {
		t.Fatalf("status %s, err %v", res.Status, err)
	}
	return res, verify(t, res), navRequests(model)
}

// imageParts counts the image parts of the requests.
func imageParts(reqs []llmtest.Request) int {
	n := 0
	for _, r := range reqs {
		n += len(r.Images())
	}
	return n
}

// mentionsVision reports whether the system prompt of r tells the model
// how to ask for a screenshot.
func mentionsVision(r llmtest.Request) bool {
	return len(r.Messages) > 0 && strings.Contains(r.Messages[0].Content, `"vision":true`)
}

// checkShown checks the one image request r carries: the bytes of the
// bundle's image record that model call lists, and masked over the
// password field.
func checkShown(t *testing.T, files map[string][]byte, r llmtest.Request, step int) {
	t.Helper()
	parts := r.Images()
	if len(parts) != 1 {
		t.Fatalf("%d image parts, want 1", len(parts))
	}
	mime, data, err := parts[0].Decode()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	var shown *contract.ModelImage
	for _, mc := range lines[contract.ModelCall](t, files, "model-calls.jsonl") {
		if mc.Purpose == contract.ModelPurpose("navigate") && mc.Step == step && len(mc.Images) > 0 {
			shown = &mc.Images[0]
		}
	}
	if shown == nil || shown.SHA256 != hash || len(mc(t, files, step)) != 1 {
		t.Fatalf("model-call record of step %d lists %+v, want one image of SHA-256 %s", step, shown, hash)
	}
	if !bytes.Equal(files[shown.URI], data) {
		t.Errorf("the bytes sent are not the bundle's %s", shown.URI)
	}
	var rec *contract.ImageArtifact
	for name, b := range files {
		var im contract.ImageArtifact
		if strings.HasPrefix(name, "artifacts/") && strings.HasSuffix(name, ".json") && json.Unmarshal(b, &im) == nil && im.URI == shown.URI {
			rec = &im
		}
	}
	if rec == nil || rec.ContentHash != hash || rec.MIMEType != mime {
		t.Fatalf("image record %+v, want contentHash %s and type %s", rec, hash, mime)
	}
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the image sent is no PNG or JPEG: %v", err)
	}
	scale := float64(img.Bounds().Dx()) / float64(viewportWidth(t, files))
	box := image.Rect(int(float64(visionField.Min.X)*scale)+1, int(float64(visionField.Min.Y)*scale)+1, int(float64(visionField.Max.X)*scale)-1, int(float64(visionField.Max.Y)*scale)-1)
	mr, mg, mb, ma := driver.MaskColor.RGBA()
	isMask := func(x, y int) bool {
		r, g, b, a := img.At(x, y).RGBA()
		return r == mr && g == mg && b == mb && a == ma
	}
	for y := box.Min.Y; y < box.Max.Y; y++ {
		for x := box.Min.X; x < box.Max.X; x++ {
			if !isMask(x, y) {
				t.Fatalf("pixel (%d, %d) of the password field is %v: not masked", x, y, img.At(x, y))
			}
		}
	}
	blank := image.Rect(int(float64(visionBlank.Min.X)*scale), int(float64(visionBlank.Min.Y)*scale), int(float64(visionBlank.Max.X)*scale), int(float64(visionBlank.Max.Y)*scale))
	if isMask(blank.Min.X+1, blank.Min.Y+1) {
		t.Errorf("the page's background is masked too")
	}
}

// mc returns the images the Navigator's model calls of step list.
func mc(t *testing.T, files map[string][]byte, step int) []contract.ModelImage {
	var out []contract.ModelImage
	for _, c := range lines[contract.ModelCall](t, files, "model-calls.jsonl") {
		if c.Step == step {
			out = append(out, c.Images...)
		}
	}
	return out
}

// viewportWidth is the viewport's width in CSS pixels, from the first
// observation of the bundle.
func viewportWidth(t *testing.T, files map[string][]byte) int {
	t.Helper()
	for name, b := range files {
		if !strings.HasPrefix(name, "dom/") || !strings.HasSuffix(name, ".json") {
			continue
		}
		var o contract.Observation
		if err := json.Unmarshal(b, &o); err == nil && o.State.Viewport.Width > 0 {
			return o.State.Viewport.Width
		}
	}
	t.Fatal("no observation with a viewport")
	return 0
}

// TestVisionAllowed: public data, a model that accepts images: the prompt
// says how to ask, the model asks, and its next request carries exactly
// one image, the bundle's (same SHA-256 in the image record and the
// model-call record), the password field masked.
func TestVisionAllowed(t *testing.T) {
	_, files, reqs := visionRun(t, contract.ClassPublic, true,
		answer("continue", aVision("v1")),
		answer("done", aWait("w1", 10)))
	if len(reqs) != 2 || !mentionsVision(reqs[0]) || len(reqs[0].Images()) != 0 {
		t.Fatalf("%d navigator requests; the first mentions vision %v with %d images", len(reqs), len(reqs) > 0 && mentionsVision(reqs[0]), imageParts(reqs[:1]))
	}
	checkShown(t, files, reqs[1], 2)
	noSecret(t, visionSecret, files, nil)
	if d := lastDecision(t, files, "v1"); d == nil || d.Result != contract.ResultAllowed {
		t.Errorf("decision on v1: %+v", d)
	}
}

// TestVisionSensitive: sensitive data: the prompt does not mention vision,
// the model asks anyway and is denied (vision_not_allowed), and no image
// reaches it.
func TestVisionSensitive(t *testing.T) {
	_, files, reqs := visionRun(t, contract.ClassSensitive, true,
		answer("continue", aVision("v1")),
		answer("done", aWait("w1", 10)))
	if mentionsVision(reqs[0]) || imageParts(reqs) != 0 {
		t.Errorf("sensitive: the prompt mentions vision %v, %d images sent", mentionsVision(reqs[0]), imageParts(reqs))
	}
	d := lastDecision(t, files, "v1")
	if d == nil || d.Result != contract.ResultDenied || !hasRule(d.Reasons, "vision_not_allowed") {
		t.Errorf("decision on v1: %+v, want denied by vision_not_allowed", d)
	}
}

// highVisionGate returns a gate on the embedded policy with vision.risk
// "high" (README: a person approves each screenshot), and its approvals.
func highVisionGate(t *testing.T) (*gate.Gate, *gate.Approvals) {
	t.Helper()
	raw, err := fs.ReadFile(policy.FS(), "data.json")
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	if err := json.Unmarshal(raw, &data); err != nil {
		t.Fatal(err)
	}
	data["aegis"].(map[string]any)["config"].(map[string]any)["vision"].(map[string]any)["risk"] = "high"
	raw, err = json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	bundle := fstest.MapFS{"data.json": {Data: raw}}
	rego, err := fs.ReadFile(policy.FS(), "browser.rego")
	if err != nil {
		t.Fatal(err)
	}
	bundle["browser.rego"] = &fstest.MapFile{Data: rego}
	approvals := gate.NewApprovals()
	g, err := gate.New(context.Background(), gate.Options{PolicyFS: bundle, Approvals: approvals})
	if err != nil {
		t.Fatal(err)
	}
	return g, approvals
}

// TestVisionHighRiskApproved: with vision.risk "high" the start-up probe
// pauses (approval required, no deny reason): the session may still
// escalate, the prompt says how to ask, and each screenshot is put to the
// approver when asked for. An approved one reaches the model (decision
// approved); a refused one does not (decision denied, no image part).
func TestVisionHighRiskApproved(t *testing.T) {
	g, approvals := highVisionGate(t)
	for _, approve := range []bool{true, false} {
		t.Run(fmt.Sprintf("approve=%v", approve), func(t *testing.T) {
			asked := 0
			_, files, reqs := visionRunCfg(t, func(cfg *session.Config) {
				cfg.Classification, cfg.ModelImages = contract.ClassPublic, true
				cfg.Gate, cfg.Approvals = g, approvals
				cfg.Approver = session.ApproverFunc(func(ctx context.Context, req session.ApprovalRequest) (session.ApprovalAnswer, error) {
					asked++
					return session.ApprovalAnswer{Approved: approve, Approver: "tester"}, nil
				})
			}, answer("continue", aVision("v1")), answer("done", aWait("w1", 10)))
			if len(reqs) != 2 || !mentionsVision(reqs[0]) || asked != 1 {
				t.Fatalf("%d navigator requests, the first mentions vision %v, approver asked %d times", len(reqs), len(reqs) > 0 && mentionsVision(reqs[0]), asked)
			}
			d := lastDecision(t, files, "v1")
			if approve {
				checkShown(t, files, reqs[1], 2)
				if d == nil || d.Result != contract.ResultApproved {
					t.Errorf("decision on v1: %+v, want approved", d)
				}
				return
			}
			if n := imageParts(reqs); n != 0 || len(mc(t, files, 2)) != 0 {
				t.Errorf("refused: %d images sent", n)
			}
			if d == nil || d.Result != contract.ResultDenied {
				t.Errorf("decision on v1: %+v, want denied", d)
			}
		})
	}
}

// TestVisionModelWithoutImages: a model that takes no images is never
// told of vision nor shown one, even where the policy would allow it.
func TestVisionModelWithoutImages(t *testing.T) {
	_, files, reqs := visionRun(t, contract.ClassPublic, false,
		answer("continue", aVision("v1")),
		answer("done", aWait("w1", 10)))
	if mentionsVision(reqs[0]) || imageParts(reqs) != 0 || len(mc(t, files, 2)) != 0 {
		t.Errorf("no images: the prompt mentions vision %v, %d images sent", mentionsVision(reqs[0]), imageParts(reqs))
	}
	for _, r := range reqs {
		if strings.Contains(strings.ToLower(r.Messages[0].Content), "screenshot") {
			t.Errorf("the system prompt speaks of screenshots")
		}
	}
}

// TestVisionAfterFailure: after a click whose target is not on the page,
// the session escalates on its own (vision-1, decided and recorded), and
// the next request carries the screenshot.
func TestVisionAfterFailure(t *testing.T) {
	_, files, reqs := visionRun(t, contract.ClassPublic, true,
		answer("continue", aClick("c1", "#missing")),
		answer("done", aWait("w1", 10)))
	if len(reqs) != 2 || len(reqs[0].Images()) != 0 {
		t.Fatalf("%d navigator requests, %d images in the first", len(reqs), imageParts(reqs[:1]))
	}
	checkShown(t, files, reqs[1], 2)
	d := lastDecision(t, files, "vision-1")
	if d == nil || d.Result != contract.ResultAllowed {
		t.Fatalf("decision on vision-1: %+v", d)
	}
	var a *actionLine
	for _, l := range actions(t, files) {
		if l.Action.ID == "vision-1" {
			a = &l
		}
	}
	if a == nil || !a.Action.Vision || !strings.HasPrefix(a.Action.Reason, "aegis: vision escalation after a failed click") {
		t.Errorf("action vision-1: %+v", a)
	}
}

// TestVisionEscalationsBounded: a Navigator that keeps failing is shown
// the page after each failed batch, but the session escalates on its own
// at most session.MaxVisionEscalations times.
func TestVisionEscalationsBounded(t *testing.T) {
	var nav []llmtest.Reply
	for i := range session.MaxVisionEscalations + 2 {
		nav = append(nav, answer("continue", aClick(fmt.Sprintf("c%d", i), fmt.Sprintf("#missing-%d", i))))
	}
	nav = append(nav, answer("done", aWait("w1", 10)))
	_, files, reqs := visionRun(t, contract.ClassPublic, true, nav...)
	escalations := 0
	for _, l := range actions(t, files) {
		if strings.HasPrefix(l.Action.ID, "vision-") {
			escalations++
		}
	}
	if escalations != session.MaxVisionEscalations || imageParts(reqs) != session.MaxVisionEscalations {
		t.Errorf("%d escalations, %d images sent; want %d of each", escalations, imageParts(reqs), session.MaxVisionEscalations)
	}
	for i, r := range reqs {
		if n := len(r.Images()); n > 1 || (n == 1) != (i >= 1 && i <= session.MaxVisionEscalations) {
			t.Errorf("request %d carries %d images", i, n)
		}
	}
}

// TestClassificationAndVisionProbe: the session runs under the stricter of
// its caller's classification and the task's (restricted when neither
// names one), hands it to the driver's policy context, and allows vision
// escalation there only when the model takes images and the policy allows
// vision for that classification (the probe at the start). An unknown
// classification is a configuration error.
func TestClassificationAndVisionProbe(t *testing.T) {
	tests := []struct {
		cfg, hint  contract.Classification
		images     bool
		want       contract.Classification
		wantVision bool
	}{
		{"", "", true, contract.ClassRestricted, true},
		{contract.ClassPublic, "", true, contract.ClassPublic, true},
		{contract.ClassPublic, "", false, contract.ClassPublic, false},
		{contract.ClassPublic, contract.ClassSensitive, true, contract.ClassSensitive, false},
		{contract.ClassSensitive, contract.ClassPublic, true, contract.ClassSensitive, false},
		{"", contract.ClassPublic, true, contract.ClassPublic, true},
	}
	for _, tc := range tests {
		site := newFakeSite()
		site.openErr = errors.New("no browser here")
		srv := fakeModel(t, nil, script(answer("done", aWait("w", 1))))
		pl, nav := llmAgents(t, srv, nil)
		hints := ""
		if tc.hint != "" {
			hints = `{"classification":"` + string(tc.hint) + `"}`
		}
		cfg := fakeCfg(t, site, task("Read", []string{fakeOrigin + "/orders"}, hints), pl, nav)
		cfg.Classification, cfg.ModelImages = tc.cfg, tc.images
		if _, err := run(t, cfg); err == nil {
			t.Fatal("the session ran without a browser")
		}
		if len(site.opened) != 1 {
			t.Fatalf("OpenDriver called %d times", len(site.opened))
		}
		pc := site.opened[0].PolicyContext
		if pc.Classification != tc.want || pc.AllowVisionEscalation != tc.wantVision {
			t.Errorf("%q with hint %q, images %v: policy context %+v, want %s, vision %v", tc.cfg, tc.hint, tc.images, pc, tc.want, tc.wantVision)
		}
	}
	for _, bad := range []struct{ cfg, hints string }{{"secret", ""}, {"", `{"classification":"top"}`}} {
		pl, nav := stepsAgents(t, task("x", []string{fakeOrigin + "/"}, `{"steps":["navigate /orders"]}`), nil)
		cfg := fakeCfg(t, newFakeSite(), task("x", []string{fakeOrigin + "/"}, bad.hints), pl, nav)
		cfg.Classification = contract.Classification(bad.cfg)
		_, err := session.New(cfg)
		var se *session.Error
		if !errors.As(err, &se) || se.Code != "config" || !strings.Contains(err.Error(), "classification") {
			t.Errorf("classification %q, hints %s: err %v, want a config error", bad.cfg, bad.hints, err)
		}
	}
}

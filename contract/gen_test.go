package contract_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aegis-run/aegis/contract"
)

func intp(i int) *int                      { return &i }
func floatp(f float64) *float64            { return &f }
func hex64(seed byte) string               { return strings.Repeat(fmt.Sprintf("%02x", seed), 32) }
func tags(ts ...string) []string           { return append([]string{}, ts...) }
func noAffordances() []contract.Affordance { return []contract.Affordance{} }

// handActions returns one hand-written action of every type, with and
// without the optional fields, ids unique.
func handActions() []contract.Action {
	return []contract.Action{
		{ID: "nav-1", Type: contract.ActNavigate, Reason: "Open the sign-in page", PolicyTags: tags("navigation"), URL: "https://portal.example.com/login"},
		{ID: "type-1", Type: contract.ActType, Reason: "Enter the email", PolicyTags: tags("form:input"), Selector: "#email", Text: "ops@example.com"},
		{ID: "type-2", Type: contract.ActType, Reason: "Enter the password", PolicyTags: tags("form:input", "pii"), Selector: "#password", Text: "hunter2", Redact: true},
		{ID: "select-1", Type: contract.ActSelect, Reason: "Choose the region", PolicyTags: tags(), Selector: "select[name=region]", Value: "eu"},
		{ID: "click-1", Type: contract.ActClick, Reason: "Submit", PolicyTags: tags(), Selector: "button[type=submit]"},
		{ID: "click-2", Type: contract.ActClick, Reason: "Submit, slowly", PolicyTags: tags(), Selector: "text=Sign in", TimeoutMs: 120000},
		{ID: "scroll-1", Type: contract.ActScroll, Reason: "See more", PolicyTags: tags(), Direction: contract.ScrollDown},
		{ID: "scroll-2", Type: contract.ActScroll, Reason: "Back up", PolicyTags: tags(), Direction: contract.ScrollUp, AmountPx: 800},
		{ID: "wait-1", Type: contract.ActWait, Reason: "Let it load", PolicyTags: tags(), DurationMs: 60000},
		{ID: "extract-1", Type: contract.ActExtract, Reason: "Read the page", PolicyTags: tags("read-only"), Extract: contract.ExtractText},
	}
}

func handState() contract.State {
	return contract.State{
		SessionID: "sess-1", Mode: contract.ModeExtension, ActiveURL: "https://example.com", Title: "Example Domain",
		Viewport: contract.Viewport{Width: 1280, Height: 800, DeviceScaleFactor: 2}, TabID: intp(0),
		Timestamp: "2026-01-23T10:15:30.123Z", DOMHash: hex64(0xab),
		PolicyContext: contract.PolicyContext{Classification: contract.ClassRestricted, MaxStepBudget: 25, DecisionLogID: "dec-2026-01-23-001"},
	}
}

func handObservation() contract.Observation {
	return contract.Observation{
		State: handState(), DOMText: "Sign in", DOMSnapshot: "<form></form>",
		Affordances: []contract.Affordance{{Selector: "#email", Role: "textbox", Text: "Email", ActionHint: contract.HintType}, {Selector: "body"}},
		ExtractedArtifacts: []contract.Artifact{{ID: "art-1", Type: contract.ArtifactText, Value: "Sign in", SourceURL: "https://example.com", Hash: hex64(1)},
			{ID: "art-2", Type: contract.ArtifactLink, Value: "https://example.com/x", SourceSelector: "a", SourceURL: "https://example.com", Hash: hex64(2)}},
	}
}

func handToolResult() contract.ToolResult {
	return contract.ToolResult{
		ActionID: "click-1", Action: "browser.click", RiskTag: contract.RiskMedium, SessionID: "sess-1", OK: true,
		CaptureLatencyMs: floatp(0), InputLatencyMs: floatp(12.5), FrameID: "main", WindowID: intp(1), TabID: intp(2),
		URL: "https://example.com/next", StartedAt: "2026-01-23T10:15:30Z", EndedAt: "2026-01-23T10:15:30.050Z", ArtifactIDs: []string{"art-1"},
	}
}

// gen draws random values that fill exactly the fields each type allows,
// within the schema's bounds, from a seeded source (reproducible).
type gen struct{ r *rand.Rand }

func newGen(seed uint64) *gen { return &gen{rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15))} }

// between returns an int in [lo, hi].
func (g *gen) between(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

// length returns a length in [lo, hi], usually short, sometimes the bounds.
func (g *gen) length(lo, hi int) int {
	switch x := g.r.IntN(10); {
	case x == 0:
		return lo
	case x == 1:
		return hi
	default:
		return g.between(lo, min(hi, lo+24))
	}
}

const (
	alnum    = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	idChars  = alnum + "._-"
	tagChars = alnum + "._:/-"
)

// runePool mixes ASCII, JSON-special, control, multi-byte and non-BMP
// characters, and U+2028, which JavaScript treats as a line break.
var runePool = []rune("aZ09 ~\"\\/<>&'{}[]:,\n\t\r\x00\x1f\x7féßЖ中文😀\u2028\u200b")

func (g *gen) pick(s string) byte { return s[g.r.IntN(len(s))] }

func (g *gen) word(first, rest string, lo, hi int) string {
	n := g.length(lo, hi)
	b := make([]byte, n)
	b[0] = g.pick(first)
	for i := 1; i < n; i++ {
		b[i] = g.pick(rest)
	}
	return string(b)
}

func (g *gen) id() string  { return g.word(alnum, idChars, 1, 128) }
func (g *gen) tag() string { return g.word(alnum, tagChars, 1, 64) }

// text returns a string of lo to hi characters (runes).
func (g *gen) text(lo, hi int) string {
	n := g.length(lo, hi)
	rs := make([]rune, n)
	for i := range rs {
		rs[i] = runePool[g.r.IntN(len(runePool))]
	}
	return string(rs)
}

func (g *gen) optText(lo, hi int) string {
	if g.chance(0.3) {
		return ""
	}
	return g.text(lo, hi)
}

func (g *gen) hash() string {
	const hexd = "0123456789abcdef"
	b := make([]byte, 64)
	for i := range b {
		b[i] = g.pick(hexd)
	}
	return string(b)
}

func (g *gen) url() string {
	switch g.r.IntN(8) {
	case 0:
		return "about:blank"
	case 1:
		return "javascript:void(0)"
	case 2:
		return "http://127.0.0.1:8080/a/b?c=d&e=f#g"
	case 3:
		u := "https://example.com/"
		return u + strings.Repeat("p", 2048-len(u))
	}
	host := g.word("abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnopqrstuvwxyz0123456789-", 1, 30)
	return "https://" + host + ".example/" + g.word(alnum, alnum+"-._~/", 1, 200) + "?q=" + g.word(alnum, alnum, 1, 10)
}

func (g *gen) timestamp() string {
	t := time.Unix(g.r.Int64N(4102444800), g.r.Int64N(1e9))
	if g.chance(0.5) {
		return t.UTC().Format(time.RFC3339Nano)
	}
	return t.In(time.FixedZone("", 60*g.between(-12*60, 14*60))).Format(time.RFC3339)
}

func (g *gen) optInt(lo, hi int) *int {
	if g.chance(0.3) {
		return nil
	}
	return intp(g.between(lo, hi))
}

func (g *gen) latency() *float64 {
	switch g.r.IntN(4) {
	case 0:
		return nil
	case 1:
		return floatp(0)
	}
	return floatp(float64(g.r.IntN(3600000000)) / 1000)
}

func (g *gen) selector() string { return g.text(1, 2048) }

func oneOf[T any](g *gen, xs ...T) T { return xs[g.r.IntN(len(xs))] }

func (g *gen) action(id string) contract.Action {
	a := contract.Action{ID: id, Type: oneOf(g, contract.ActionTypes()...), Reason: g.text(1, 2000), PolicyTags: []string{}}
	seen := map[string]bool{}
	for range g.length(0, 16) {
		if t := g.tag(); !seen[t] {
			seen[t] = true
			a.PolicyTags = append(a.PolicyTags, t)
		}
	}
	switch a.Type {
	case contract.ActNavigate:
		a.URL = g.url()
	case contract.ActClick:
		a.Selector = g.selector()
		if g.chance(0.5) {
			a.TimeoutMs = g.between(1, 120000)
		}
	case contract.ActType:
		a.Selector, a.Text, a.Redact = g.selector(), g.text(0, 10000), g.chance(0.5)
	case contract.ActSelect:
		a.Selector, a.Value = g.selector(), g.text(0, 2048)
	case contract.ActScroll:
		a.Direction = oneOf(g, contract.ScrollUp, contract.ScrollDown)
		if g.chance(0.5) {
			a.AmountPx = g.between(1, 100000)
		}
	case contract.ActWait:
		a.DurationMs = g.between(1, 60000)
	case contract.ActExtract:
		a.Extract = oneOf(g, contract.ExtractText, contract.ExtractTable, contract.ExtractLink, contract.ExtractScreenshot)
		if g.chance(0.5) {
			a.Selector = g.selector()
		}
	}
	return a
}

func (g *gen) batch() []contract.Action {
	n := g.between(1, contract.MaxBatchActions)
	out := make([]contract.Action, n)
	for i := range out {
		id := g.id()
		out[i] = g.action(id[:min(len(id), 100)] + fmt.Sprintf("-%d", i))
	}
	return out
}

func (g *gen) state() contract.State {
	dsf := oneOf(g, 1, 1.25, 1.5, 2, 3, 16, 0.5, 1e-9, 1+g.r.Float64()*14)
	return contract.State{
		SessionID: g.id(), Mode: oneOf(g, contract.ModeExtension, contract.ModePlaywright, contract.ModeSandbox),
		ActiveURL: g.url(), Title: g.text(0, 4096),
		Viewport: contract.Viewport{Width: g.between(1, 16384), Height: g.between(1, 16384), DeviceScaleFactor: dsf},
		TabID:    g.optInt(0, 2147483647), Timestamp: g.timestamp(), DOMHash: g.hash(),
		PolicyContext: contract.PolicyContext{
			Classification:        oneOf(g, contract.ClassPublic, contract.ClassRestricted, contract.ClassSensitive),
			AllowVisionEscalation: g.chance(0.5), MaxStepBudget: g.between(1, 10000), DecisionLogID: g.id(),
		},
	}
}

func (g *gen) observation() contract.Observation {
	o := contract.Observation{State: g.state(), DOMText: g.text(0, 5000), DOMSnapshot: g.text(0, 20000), Affordances: noAffordances()}
	for range g.length(0, 60) {
		o.Affordances = append(o.Affordances, contract.Affordance{
			Selector: g.selector(), Role: g.optText(1, 128), Text: g.optText(1, 2000),
			ActionHint: oneOf(g, "", contract.HintClick, contract.HintType, contract.HintSelect, contract.HintScroll),
			Generic:    g.chance(0.2),
		})
	}
	if g.chance(0.5) {
		for range g.between(1, 5) {
			sel := ""
			if g.chance(0.5) {
				sel = g.selector()
			}
			o.ExtractedArtifacts = append(o.ExtractedArtifacts, contract.Artifact{
				ID: g.id(), Type: oneOf(g, contract.ArtifactTable, contract.ArtifactText, contract.ArtifactLink, contract.ArtifactScreenshot),
				Value: g.text(0, 5000), SourceSelector: sel, SourceURL: g.url(), Hash: g.hash(),
			})
		}
	}
	return o
}

func (g *gen) plan() contract.Plan {
	p := contract.Plan{Goal: g.text(1, 4000), Revision: g.optInt(0, 10000)}
	for range g.length(1, 50) {
		p.Steps = append(p.Steps, contract.PlanStep{ID: g.id(), Description: g.text(1, 2000), SuccessCriteria: g.text(1, 2000)})
	}
	return p
}

func (g *gen) response() contract.NavigatorResponse {
	return contract.NavigatorResponse{
		Actions: g.batch(), Status: oneOf(g, contract.StatusContinue, contract.StatusDone, contract.StatusFailed), Summary: g.text(0, 2000),
	}
}

func (g *gen) toolResult() contract.ToolResult {
	r := contract.ToolResult{
		ActionID: g.id(), Action: "browser." + string(oneOf(g, contract.ActionTypes()...)),
		RiskTag: oneOf(g, contract.RiskLow, contract.RiskMedium, contract.RiskHigh), SessionID: g.id(), OK: g.chance(0.5),
		CaptureLatencyMs: g.latency(), InputLatencyMs: g.latency(), WindowID: g.optInt(0, 2147483647), TabID: g.optInt(0, 2147483647),
		StartedAt: g.timestamp(), EndedAt: g.timestamp(),
	}
	if !r.OK {
		r.Error = &contract.ToolError{
			Code: oneOf(g, contract.CodeElementNotFound, contract.CodeAmbiguousSelector, contract.CodeNotInteractable, contract.CodeTimeout,
				contract.CodeNavigationBlocked, contract.CodePageClosed, contract.CodeUnsupported, contract.CodeInternal, contract.CodeTargetChanged),
			Message: g.text(1, 4096),
		}
	}
	if g.chance(0.5) {
		r.FrameID = g.id()
	}
	if g.chance(0.7) {
		r.URL = g.url()
	}
	if g.chance(0.5) {
		for i := range g.between(1, 20) {
			r.ArtifactIDs = append(r.ArtifactIDs, fmt.Sprintf("art-%d-%s", i, g.word(alnum, idChars, 1, 40)))
		}
	}
	if r.OK && g.chance(0.3) {
		r.Note = g.text(1, 2048)
	}
	return r
}

func (g *gen) image() contract.ImageArtifact {
	mime := oneOf(g, contract.MIMEPNG, contract.MIMEJPEG, contract.MIMEWebP)
	ext := map[string]string{contract.MIMEPNG: ".png", contract.MIMEJPEG: ".jpg", contract.MIMEWebP: ".webp"}[mime]
	id := g.id()
	im := contract.ImageArtifact{
		ID: id, URI: "artifacts/" + g.word(alnum, idChars, 1, 64) + "/" + id[:min(len(id), 100)] + ext, MIMEType: mime,
		ByteSize: int64(g.between(1, contract.MaxImageBytes)), ContentHash: g.hash(),
	}
	if g.chance(0.5) {
		im.Width, im.Height = g.between(1, 65535), g.between(1, 65535)
	}
	if g.chance(0.5) {
		im.SourceURL = g.url()
	}
	if g.chance(0.5) {
		im.ActionID = g.id()
	}
	return im
}

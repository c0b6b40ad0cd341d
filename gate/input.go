package gate

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/contract"
)

// Request is everything the gate judges one action on. The Action is the
// model's and is hostile; Target is the driver's reading of the page, which
// is hostile too; everything else comes from the operator and the task.
type Request struct {
	// SessionID identifies the session (BrowserState.sessionId).
	SessionID string
	// StepIndex is the step the action was proposed at; the policy denies
	// every step past Session.MaxStepBudget. Count from 1.
	StepIndex int
	// Action is the action the Navigator proposed.
	Action contract.Action
	// Target is the element the driver resolved for the action's selector;
	// nil when the action has no selector or the driver could not resolve
	// it (a type action without a target is denied).
	Target *contract.Element
	// ActiveURL is the URL of the active page (BrowserState.activeUrl).
	ActiveURL string
	// Session holds the session's policy facts.
	Session Session
	// Policy holds the session's additions to the policy data.
	Policy SessionPolicy
	// Now is the decision time the policy sees; zero means the gate's
	// clock. It is pinned for the evaluation and recorded, so that the
	// decision can be recomputed.
	Now time.Time
	// ApprovalID names an approval (from Approvals.Grant) for this exact
	// action, presented when a previous decision paused it.
	ApprovalID string
}

// Session is the policy facts of a session.
type Session struct {
	// AllowedOrigins bound where navigate may go and where any action may
	// run: the task's urls (seed 003). See ParseAllowedOrigin for the forms.
	// An empty list allows nothing.
	AllowedOrigins []string
	// Permission is the permission level (seed 004): disabled, observe,
	// control or full. "" means Preset.
	Permission string
	// Preset is the security preset: safe, balanced, power or developer.
	// "" (with no Permission) means the policy's default_preset.
	Preset string
	// MaxStepBudget is the most steps the session may take
	// (policyContext.maxStepBudget); the policy caps it at its own limit.
	MaxStepBudget int
	// DecisionLogID identifies the session's compliance decision log
	// (policyContext.decisionLogId); required.
	DecisionLogID string
}

// SessionPolicy is what a session adds to the policy data (seed 001's
// input.policy).
type SessionPolicy struct {
	// BlockedDomains are denied on top of the policy's own; each also
	// blocks its subdomains.
	BlockedDomains []string
	// SensitiveSelectors mark fields as sensitive when the action's
	// selector contains one (compared lowercased, without spaces or quotes).
	SensitiveSelectors []string
	// GovernedExceptions may each waive one waivable deny rule until they
	// expire.
	GovernedExceptions []Exception
}

// Exception is a governed exception (seed 001): named, scoped to the one
// rule it waives, with a reason, an expiry and a link to the approved
// decision log entry. An exception that lacks any of these, or has expired,
// waives nothing, and the decision record says why.
type Exception struct {
	// ID names the exception.
	ID string `json:"id"`
	// Rule is the deny rule it waives, such as "origin_not_allowed".
	Rule string `json:"rule"`
	// Reason says why it was granted.
	Reason string `json:"reason"`
	// ExpiresAt is when it expires, RFC 3339.
	ExpiresAt string `json:"expires_at"`
	// DecisionLogID links it to its approved decision log entry.
	DecisionLogID string `json:"decision_log_id"`
}

// MaxExceptionReason bounds an exception's reason, in characters.
const MaxExceptionReason = 1024

// exceptionFacts checks an exception's form and parses its expiry for the
// policy, which decides what it waives.
func exceptionFacts(e Exception) map[string]any {
	var problems []any
	if !isID(e.ID) {
		problems = append(problems, "its id is missing or not an identifier")
	}
	if e.Rule == "" {
		problems = append(problems, "it names no rule to waive")
	} else if !isRuleName(e.Rule) {
		problems = append(problems, "its rule is not a rule name")
	}
	if strings.TrimSpace(e.Reason) == "" {
		problems = append(problems, "it gives no reason")
	} else if utf8.RuneCountInString(e.Reason) > MaxExceptionReason || !utf8.ValidString(e.Reason) {
		problems = append(problems, fmt.Sprintf("its reason is not valid text of at most %d characters", MaxExceptionReason))
	}
	var expires int64
	if e.ExpiresAt == "" {
		problems = append(problems, "it has no expiry")
	} else if t, err := time.Parse(time.RFC3339Nano, e.ExpiresAt); err != nil || len(e.ExpiresAt) > 64 {
		problems = append(problems, "its expiry is not an RFC 3339 time")
	} else {
		expires = t.UnixNano()
	}
	if !isID(e.DecisionLogID) {
		problems = append(problems, "it links no decision log entry")
	}
	if problems == nil {
		problems = []any{}
	}
	return map[string]any{
		"id":              truncate(e.ID, 256),
		"rule":            truncate(e.Rule, 64),
		"reason":          truncate(e.Reason, MaxExceptionReason),
		"expires_at":      truncate(e.ExpiresAt, 64),
		"decision_log_id": truncate(e.DecisionLogID, 256),
		"expires_ns":      expires,
		"problems":        problems,
	}
}

// actionMap is the action as the policy sees it and as its hash covers it:
// the common fields, every field the action sets, and the fields its type
// requires even when zero (so a type action always carries redact). It is
// built field by field, so that an action of an unknown type is still
// judged (and denied) rather than refused by MarshalJSON.
func actionMap(a contract.Action) map[string]any {
	tags := make([]any, len(a.PolicyTags))
	for i, t := range a.PolicyTags {
		tags[i] = t
	}
	m := map[string]any{"id": a.ID, "type": string(a.Type), "reason": a.Reason, "policyTags": tags}
	req := map[string]bool{}
	switch a.Type {
	case contract.ActNavigate:
		req["url"] = true
	case contract.ActClick:
		req["selector"] = true
	case contract.ActType:
		req["selector"], req["text"], req["redact"] = true, true, true
	case contract.ActSelect:
		req["selector"], req["value"] = true, true
	case contract.ActScroll:
		req["direction"] = true
	case contract.ActWait:
		req["durationMs"] = true
	case contract.ActExtract:
		req["extract"] = true
	}
	str := func(k, v string) {
		if v != "" || req[k] {
			m[k] = v
		}
	}
	num := func(k string, v int) {
		if v != 0 || req[k] {
			m[k] = json.Number(strconv.Itoa(v))
		}
	}
	str("url", a.URL)
	str("selector", a.Selector)
	num("timeoutMs", a.TimeoutMs)
	str("text", a.Text)
	if a.Redact || req["redact"] {
		m["redact"] = a.Redact
	}
	str("value", a.Value)
	str("direction", string(a.Direction))
	num("amountPx", a.AmountPx)
	num("durationMs", a.DurationMs)
	str("extract", string(a.Extract))
	return m
}

func elementMap(e *contract.Element) map[string]any {
	if e == nil {
		return nil
	}
	return map[string]any{
		"tag": e.Tag, "type": e.Type, "name": e.Name, "id": e.ID,
		"autocomplete": e.Autocomplete, "role": e.Role, "label": e.Label, "text": e.Text,
	}
}

// ActionHash returns what an approval of req's action is bound to: the
// SHA-256, as 64 lowercase hex digits, of the canonical JSON (RFC 8785) of
//
//	{"action": ACTION, "activeUrl": URL, "sessionId": ID, "target": ELEMENT or null}
//
// where ACTION is the action as the policy sees it, except that the text of
// an action with redact true is replaced by "hmac-sha256:" and the
// HMAC-SHA-256, in lowercase hex, of the text under the gate's redaction key.
// The step index, the time and the approval are not part of it:
// re-proposing the same action on the same page of the same session after a
// pause yields the same hash.
//
// The decision record, and so the evidence bundle, stores the hash while it
// masks a redacted text everywhere else; a plain SHA-256 over a short text
// (a PIN the model types) could be brute-forced from it offline. The
// redaction key is 32 random bytes the gate draws in New and never writes
// anywhere, so the hash still binds an approval to the exact text (another
// text gives another hash) but cannot be inverted, nor recomputed by anyone,
// the auditor included, once the process is gone. That costs nothing:
// approvals are granted and consumed in the process that holds the gate
// (Approvals lives in memory), and a decision id is derived from the hash
// as recorded (DecisionID), not from the action. The hash of an action
// without redact true is the plain one, recomputable from the record's
// action, target, page and session. Two gates hash a redacted action
// differently: an approval binds within the gate that paused the action.
func (g *Gate) ActionHash(req Request) string {
	return g.actionHash(req.SessionID, req.ActiveURL, actionMap(req.Action), elementMap(req.Target))
}

// redactKeySize is the size of a gate's redaction key, in bytes: the
// strength of SHA-256 itself.
const redactKeySize = 32

// newRedactKey draws a redaction key from crypto/rand (which does not fail
// on supported platforms; it crashes the program rather than return
// predictable bytes).
func newRedactKey() []byte {
	k := make([]byte, redactKeySize)
	rand.Read(k)
	return k
}

// fallbackRedactKey is the redaction key of a nil Gate, or of one not made
// by New: random per process, never a known key.
var fallbackRedactKey = newRedactKey()

func (g *Gate) redactKey() []byte {
	if g == nil || len(g.redact) != redactKeySize {
		return fallbackRedactKey
	}
	return g.redact
}

// redactedTextPrefix starts what the hashed document holds in place of a
// redacted text.
const redactedTextPrefix = "hmac-sha256:"

func (g *Gate) actionHash(sessionID, activeURL string, action, target map[string]any) string {
	if action["redact"] == true {
		if text, ok := action["text"].(string); ok {
			m := make(map[string]any, len(action))
			for k, v := range action {
				m[k] = v
			}
			mac := hmac.New(sha256.New, g.redactKey())
			mac.Write([]byte(text))
			m["text"] = redactedTextPrefix + hex.EncodeToString(mac.Sum(nil))
			action = m
		}
	}
	return plainActionHash(sessionID, activeURL, action, target)
}

// plainActionHash is the SHA-256 of the canonical hashed document.
func plainActionHash(sessionID, activeURL string, action, target map[string]any) string {
	doc := map[string]any{"action": action, "activeUrl": activeURL, "sessionId": sessionID, "target": nil}
	if target != nil {
		doc["target"] = target
	}
	b, ok := appendCanonical(make([]byte, 0, 512), doc)
	var err error
	if !ok {
		b, err = canonjson.EncodeValue(doc)
	}
	if err != nil {
		// Only invalid UTF-8 can fail here; hash the Go encoding instead,
		// which replaced it, prefixed so the two never collide.
		b = []byte(fmt.Sprintf("aegis-noncanonical:%#v", doc))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// DecisionID derives a decision id from the record's own fields, so that an
// auditor can recompute it: "dec-" and the first 32 hex digits of SHA-256
// over "aegis-decision-v1", the policy version, the action hash (as the
// record states it: that of a redacted action is keyed, see
// Gate.ActionHash, and taken as given), the step index and the evaluation
// time (RFC 3339 with nanoseconds, UTC), joined by newlines.
func DecisionID(policyVersion, actionHash string, stepIndex int, evaluatedAt time.Time) string {
	s := "aegis-decision-v1\n" + policyVersion + "\n" + actionHash + "\n" + strconv.Itoa(stepIndex) + "\n" + evaluatedAt.UTC().Format(time.RFC3339Nano)
	sum := sha256.Sum256([]byte(s))
	return "dec-" + hex.EncodeToString(sum[:16])
}

// policyInput is one evaluation's input: the request's facts, computed
// once, from which the whole document is built, as JSON for a remote OPA
// (document) or directly as AST for the local engine (astValue), reusing the
// parts it shares with the other decisions of its session and page.
type policyInput struct {
	req       *Request
	now       time.Time
	action    map[string]any // the action as the policy sees it (actionMap)
	target    map[string]any // the target element (elementMap); nil without one
	sf        *sessionFacts
	active    *urlEntry
	targetURL *urlEntry // a navigate action's url; nil for other types

	selectorLC   string
	subjectTails []any
	fieldTails   []any
	fieldTypes   map[string]any

	// Keys of the parts the local engine converts once (see boundedCache).
	state       stateKey
	targetFacts targetFactsKey
	fieldsKey   string
}

// urlEntry is the facts of one URL, as a map and as AST.
type urlEntry struct {
	facts map[string]any
	term  *ast.Term
}

// urlCache memoizes the facts of active-page URLs, which repeat on every
// action taken on a page. It is emptied when it holds maxURLCache entries.
type urlCache struct{ capped[string, *urlEntry] }

const maxURLCache = 1024

func (c *urlCache) get(raw string) (*urlEntry, error) {
	if e, ok := c.capped.get(raw); ok {
		return e, nil
	}
	facts := urlFactsMap(NormalizeURL(raw))
	v, err := ast.InterfaceToValue(facts)
	if err != nil {
		return nil, err
	}
	e := &urlEntry{facts: facts, term: ast.NewTerm(v)}
	c.put(raw, e, maxURLCache)
	return e, nil
}

// sessionFacts are the parts of the input that depend only on the session
// (its allowlist, blocked domains, sensitive selectors, exceptions,
// permission), normalized once per distinct session and cached.
type sessionFacts struct {
	key          sessionKey     // the key it is cached under
	origins      []any          // normalized allowed origins, for messages
	originKeys   map[string]any // allowlist keys (see originKey)
	configErrors []any          // unusable entries of the session's lists
	blocked      []any          // normalized blocked domains
	selectors    []any          // normalized sensitive selectors
	exceptions   []any          // exception facts (see exceptionFacts)
	policy       map[string]any // input.policy as given
	session      map[string]any // input.session as given

	once  sync.Once
	terms map[string]*ast.Term // AST of policy, session and the derivedSessionKeys parts
	err   error
}

// derivedSessionKeys are the members of input.derived that come from the
// session facts.
var derivedSessionKeys = []string{"allowed_origins", "allowed_origin_keys", "config_errors", "blocked_domains", "sensitive_selectors", "exceptions"}

func (sf *sessionFacts) derivedValue(k string) any {
	switch k {
	case "allowed_origins":
		return sf.origins
	case "allowed_origin_keys":
		return sf.originKeys
	case "config_errors":
		return sf.configErrors
	case "blocked_domains":
		return sf.blocked
	case "sensitive_selectors":
		return sf.selectors
	default:
		return sf.exceptions
	}
}

// astTerms converts the session facts to AST once.
func (sf *sessionFacts) astTerms() (map[string]*ast.Term, error) {
	sf.once.Do(func() {
		terms := map[string]*ast.Term{}
		conv := func(name string, v any) {
			if sf.err != nil {
				return
			}
			val, err := ast.InterfaceToValue(v)
			if err != nil {
				sf.err = fmt.Errorf("policy input %s: %w", name, err)
				return
			}
			terms[name] = ast.NewTerm(val)
		}
		conv("policy", sf.policy)
		conv("session", sf.session)
		for _, k := range derivedSessionKeys {
			conv(k, sf.derivedValue(k))
		}
		sf.terms = terms
	})
	return sf.terms, sf.err
}

// maxSessionCache bounds the cache of session facts; it is emptied when
// full.
const maxSessionCache = 256

type sessionCache struct {
	capped[sessionKey, *sessionFacts]
}

// sessionKey identifies the session facts of a request: a 128-bit hash
// (two maphash seeds, random per process, so no input can be crafted to
// collide) of every field they are computed from, length-prefixed.
type sessionKey [2]uint64

var sessionSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func keyOf(req *Request) sessionKey {
	var k sessionKey
	for i, seed := range sessionSeeds {
		var h maphash.Hash
		h.SetSeed(seed)
		var n [8]byte
		add := func(s string) {
			binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
			h.Write(n[:])
			h.WriteString(s)
		}
		list := func(l []string) {
			binary.LittleEndian.PutUint64(n[:], uint64(len(l)))
			h.Write(n[:])
			for _, s := range l {
				add(s)
			}
		}
		add(req.SessionID)
		add(req.Session.Permission)
		add(req.Session.Preset)
		list(req.Session.AllowedOrigins)
		list(req.Policy.BlockedDomains)
		list(req.Policy.SensitiveSelectors)
		binary.LittleEndian.PutUint64(n[:], uint64(len(req.Policy.GovernedExceptions)))
		h.Write(n[:])
		for _, e := range req.Policy.GovernedExceptions {
			add(e.ID)
			add(e.Rule)
			add(e.Reason)
			add(e.ExpiresAt)
			add(e.DecisionLogID)
		}
		k[i] = h.Sum64()
	}
	return k
}

func (c *sessionCache) get(req *Request) *sessionFacts {
	key := keyOf(req)
	if sf, ok := c.capped.get(key); ok {
		return sf
	}
	sf := newSessionFacts(req)
	sf.key = key
	c.put(key, sf, maxSessionCache)
	return sf
}

func newSessionFacts(req *Request) *sessionFacts {
	sf := &sessionFacts{
		origins:      []any{},
		originKeys:   map[string]any{},
		configErrors: []any{},
		blocked:      []any{},
		selectors:    []any{},
		exceptions:   []any{},
	}
	cfgErr := func(field, raw string, err error) {
		sf.configErrors = append(sf.configErrors, map[string]any{"field": field, "raw": truncate(raw, 256), "error": truncate(err.Error(), 512)})
	}
	rawOrigins := make([]any, 0, len(req.Session.AllowedOrigins))
	for _, raw := range req.Session.AllowedOrigins {
		rawOrigins = append(rawOrigins, raw)
		o, err := ParseAllowedOrigin(raw)
		if err != nil {
			cfgErr("allowed_origins", raw, err)
			continue
		}
		sf.origins = append(sf.origins, o.Origin)
		sf.originKeys[originKey(o)] = o.Origin
	}
	rawBlocked := make([]any, 0, len(req.Policy.BlockedDomains))
	for _, raw := range req.Policy.BlockedDomains {
		rawBlocked = append(rawBlocked, raw)
		d, err := NormalizeDomain(raw)
		if err != nil {
			cfgErr("blocked_domains", raw, err)
			continue
		}
		sf.blocked = append(sf.blocked, d)
	}
	rawSelectors := make([]any, 0, len(req.Policy.SensitiveSelectors))
	for _, raw := range req.Policy.SensitiveSelectors {
		rawSelectors = append(rawSelectors, raw)
		if n := normalizeSelector(raw); n != "" {
			sf.selectors = append(sf.selectors, n)
		} else {
			cfgErr("sensitive_selectors", raw, errors.New("empty selector"))
		}
	}
	rawExceptions := make([]any, 0, len(req.Policy.GovernedExceptions))
	for _, e := range req.Policy.GovernedExceptions {
		rawExceptions = append(rawExceptions, map[string]any{
			"id": e.ID, "rule": e.Rule, "reason": e.Reason, "expires_at": e.ExpiresAt, "decision_log_id": e.DecisionLogID,
		})
		sf.exceptions = append(sf.exceptions, exceptionFacts(e))
	}
	sf.policy = map[string]any{
		"blocked_domains":     rawBlocked,
		"sensitive_selectors": rawSelectors,
		"governed_exceptions": rawExceptions,
	}
	sf.session = map[string]any{
		"id":              req.SessionID,
		"allowed_origins": rawOrigins,
		"permission":      req.Session.Permission,
		"preset":          req.Session.Preset,
	}
	return sf
}

// buildInput computes the facts of the policy input: the seed's shape
// (state, action, step_index, policy), the session, the target, the pinned
// time, and the facts computed in Go (derived) that the policy matches on.
// See policy/README.md for the document.
func (g *Gate) buildInput(req *Request, now time.Time, action, target map[string]any) (*policyInput, error) {
	a := &req.Action
	in := &policyInput{req: req, now: now, action: action, target: target, sf: g.sessions.get(req)}
	var err error
	if in.active, err = g.urls.get(req.ActiveURL); err != nil {
		return nil, fmt.Errorf("policy input: active URL: %w", err)
	}
	if a.Type == contract.ActNavigate {
		if in.targetURL, err = g.urls.get(a.URL); err != nil {
			return nil, fmt.Errorf("policy input: navigation target: %w", err)
		}
	}
	var tgt contract.Element
	if req.Target != nil {
		tgt = *req.Target
		lower := strings.ToLower(tgt.Autocomplete)
		in.targetFacts = targetFactsKey{strings.ToLower(strings.TrimSpace(tgt.Tag)), strings.ToLower(strings.TrimSpace(tgt.Type)), strings.Join(strings.Fields(lower), " ")}
	}
	in.selectorLC = normalizeSelector(a.Selector)
	in.subjectTails = Tails(Words(a.Selector, tgt.Text, tgt.Label, tgt.Name, tgt.ID, a.Value))
	in.fieldTails = Tails(Words(a.Selector, tgt.Name, tgt.ID, tgt.Label))
	in.fieldTypes = fieldTypes(action)
	in.fieldsKey = fieldsKey(in.fieldTypes)
	in.state = stateKey{session: req.SessionID, url: req.ActiveURL, log: req.Session.DecisionLogID, budget: req.Session.MaxStepBudget}
	return in, nil
}

// stateMap is input.state.
func (in *policyInput) stateMap() map[string]any {
	return map[string]any{
		"sessionId": in.state.session,
		"activeUrl": in.state.url,
		"policyContext": map[string]any{
			"maxStepBudget": in.state.budget,
			"decisionLogId": in.state.log,
		},
	}
}

// targetFactsMap is input.derived.target: the element's tag and type
// lowercased and trimmed, its autocomplete tokens lowercased.
func (in *policyInput) targetFactsMap() map[string]any {
	ac := []any{}
	for tok := range strings.FieldsSeq(in.targetFacts.autocomplete) {
		ac = append(ac, tok)
	}
	return map[string]any{"tag": in.targetFacts.tag, "type": in.targetFacts.typ, "autocomplete": ac}
}

// document is the whole input document, as a remote OPA receives it (JSON).
// astValue builds the same document as AST; TestInputDocumentMatchesAST
// holds them equal.
func (in *policyInput) document() map[string]any {
	req := in.req
	derived := map[string]any{
		"now_ns":                in.now.UnixNano(),
		"active":                in.active.facts,
		"decision_log_id_valid": isID(in.state.log),
		"selector_lc":           in.selectorLC,
		"subject_tails":         in.subjectTails,
		"field_tails":           in.fieldTails,
		"action_field_types":    in.fieldTypes,
		"has_target":            in.target != nil,
	}
	for _, k := range derivedSessionKeys {
		derived[k] = in.sf.derivedValue(k)
	}
	if in.targetURL != nil {
		derived["target_url"] = in.targetURL.facts
	}
	doc := map[string]any{
		"state":      in.stateMap(),
		"action":     in.action,
		"step_index": req.StepIndex,
		"policy":     in.sf.policy,
		"session":    in.sf.session,
		"now":        in.now.Format(time.RFC3339Nano),
		"derived":    derived,
	}
	if in.target != nil {
		derived["target"] = in.targetFactsMap()
		doc["target"] = in.target
	}
	return doc
}

// fieldsKey encodes an action's field types (member names and type names
// come from fixed sets, so "name=type;" pairs in a fixed order are
// unambiguous).
func fieldsKey(types map[string]any) string {
	var b strings.Builder
	for _, k := range actionMemberOrder {
		if t, ok := types[k]; ok {
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(t.(string))
			b.WriteByte(';')
		}
	}
	return b.String()
}

// actionMemberOrder lists every member actionMap can write.
var actionMemberOrder = []string{"id", "type", "reason", "policyTags", "url", "selector", "timeoutMs", "text", "redact", "value", "direction", "amountPx", "durationMs", "extract"}

// preludeValue is the input of the policy's prelude (PreludeQuery) as AST:
// input.session, input.policy, input.state and the derived facts of the
// session (derivedSessionKeys), decision_log_id_valid and active. Each is
// determined by the session facts or the state, so a prelude is memoized
// under preludeKey.
func (in *policyInput) preludeValue() (ast.Value, error) {
	terms, err := in.sf.astTerms()
	if err != nil {
		return nil, err
	}
	state, err := stateTerms.get(in.state, func() any { return in.stateMap() })
	if err != nil {
		return nil, err
	}
	derived := make([][2]*ast.Term, 0, len(derivedSessionKeys)+2)
	for _, k := range derivedSessionKeys {
		derived = append(derived, [2]*ast.Term{keyTerm(k), terms[k]})
	}
	derived = append(derived,
		[2]*ast.Term{keyTerm("decision_log_id_valid"), ast.InternedTerm(isID(in.state.log))},
		[2]*ast.Term{keyTerm("active"), in.active.term},
	)
	return ast.NewObject(
		[2]*ast.Term{keyTerm("session"), terms["session"]},
		[2]*ast.Term{keyTerm("policy"), terms["policy"]},
		[2]*ast.Term{keyTerm("state"), state},
		[2]*ast.Term{keyTerm("derived"), ast.NewTerm(ast.NewObject(derived...))},
	), nil
}

// astValue builds the input document as OPA's AST, directly, reusing the
// converted parts of the session, the page, the state and the element. A
// non-nil prelude joins input.derived as session_prelude.
func (in *policyInput) astValue(prelude *ast.Term) (ast.Value, error) {
	terms, err := in.sf.astTerms()
	if err != nil {
		return nil, err
	}
	fieldTypes, err := fieldTypeTerms.get(in.fieldsKey, func() any { return in.fieldTypes })
	if err != nil {
		return nil, err
	}
	state, err := stateTerms.get(in.state, func() any { return in.stateMap() })
	if err != nil {
		return nil, err
	}
	action, err := ast.InterfaceToValue(in.action)
	if err != nil {
		return nil, fmt.Errorf("policy input: action: %w", err)
	}
	derived := make([][2]*ast.Term, 0, 11+len(derivedSessionKeys))
	add := func(k string, t *ast.Term) { derived = append(derived, [2]*ast.Term{keyTerm(k), t}) }
	add("now_ns", ast.NewTerm(ast.InternedValueOr(in.now.UnixNano(), func(n int64) ast.Value { return ast.Number(strconv.FormatInt(n, 10)) })))
	add("active", in.active.term)
	add("decision_log_id_valid", ast.InternedTerm(isID(in.state.log)))
	add("selector_lc", ast.StringTerm(in.selectorLC))
	add("subject_tails", stringsTerm(in.subjectTails))
	add("field_tails", stringsTerm(in.fieldTails))
	add("action_field_types", fieldTypes)
	add("has_target", ast.InternedTerm(in.target != nil))
	for _, k := range derivedSessionKeys {
		add(k, terms[k])
	}
	if in.targetURL != nil {
		add("target_url", in.targetURL.term)
	}
	top := make([][2]*ast.Term, 0, 8)
	if in.target != nil {
		facts, err := targetFactsTerms.get(in.targetFacts, func() any { return in.targetFactsMap() })
		if err != nil {
			return nil, err
		}
		add("target", facts)
		element, err := elementTerms.get(*in.req.Target, func() any { return in.target })
		if err != nil {
			return nil, err
		}
		top = append(top, [2]*ast.Term{keyTerm("target"), element})
	}
	if prelude != nil {
		add("session_prelude", prelude)
	}
	top = append(top,
		[2]*ast.Term{keyTerm("state"), state},
		[2]*ast.Term{keyTerm("action"), ast.NewTerm(action)},
		[2]*ast.Term{keyTerm("step_index"), ast.InternedTerm(in.req.StepIndex)},
		[2]*ast.Term{keyTerm("policy"), terms["policy"]},
		[2]*ast.Term{keyTerm("session"), terms["session"]},
		[2]*ast.Term{keyTerm("now"), ast.StringTerm(in.now.Format(time.RFC3339Nano))},
		[2]*ast.Term{keyTerm("derived"), ast.NewTerm(ast.NewObject(derived...))},
	)
	return ast.NewObject(top...), nil
}

// stringsTerm is an array of strings (as Tails returns them) as AST.
func stringsTerm(xs []any) *ast.Term {
	ts := make([]*ast.Term, len(xs))
	for i, x := range xs {
		ts[i] = ast.StringTerm(x.(string))
	}
	return ast.ArrayTerm(ts...)
}

// boundedCache is a cache of converted input parts under comparable keys;
// it is emptied when it holds maxTermCache entries.
type boundedCache[K comparable] struct{ capped[K, *ast.Term] }

const maxTermCache = 1024

func (c *boundedCache[K]) get(k K, v func() any) (*ast.Term, error) {
	if t, ok := c.capped.get(k); ok {
		return t, nil
	}
	val, err := ast.InterfaceToValue(v())
	if err != nil {
		return nil, fmt.Errorf("policy input: %w", err)
	}
	t := ast.NewTerm(val)
	c.put(k, t, maxTermCache)
	return t, nil
}

// The keys of the cached input parts: exactly what each part is built from.
type (
	stateKey struct {
		session, url, log string
		budget            int
	}
	targetFactsKey struct{ tag, typ, autocomplete string }
)

var (
	stateTerms       boundedCache[stateKey]
	elementTerms     boundedCache[contract.Element]
	targetFactsTerms boundedCache[targetFactsKey]
	fieldTypeTerms   boundedCache[string]
)

// fieldTypes maps each member of the action to its JSON type name, as
// Rego's type_name names it.
func fieldTypes(action map[string]any) map[string]any {
	out := make(map[string]any, len(action))
	for k, v := range action {
		switch v.(type) {
		case string:
			out[k] = "string"
		case bool:
			out[k] = "boolean"
		case json.Number:
			out[k] = "number"
		case []any:
			out[k] = "array"
		case map[string]any:
			out[k] = "object"
		default:
			out[k] = "null"
		}
	}
	return out
}

func urlFactsMap(f URLFacts) map[string]any {
	return map[string]any{
		"raw": truncate(f.Raw, MaxURLLength), "valid": f.Valid, "error": f.Error,
		"scheme": truncate(f.Scheme, 64), "host": f.Host, "port": f.Port, "origin": f.Origin,
		"userinfo": f.Userinfo, "ip": f.IP, "path_tails": Tails(f.PathWords),
		"origin_keys": originKeys(f), "host_suffixes": hostSuffixes(f),
	}
}

// originKeys lists the allowlist keys a URL matches: its exact origin
// "scheme://host:port", and the wildcard key "scheme://*.d:port" of its host
// and of each parent domain d (an allowlist entry *.example.com allows
// example.com and all its subdomains). IP literals match exactly only.
func originKeys(f URLFacts) []any {
	if !f.Valid || f.Host == "" {
		return []any{}
	}
	port := ":" + strconv.Itoa(f.Port)
	keys := []any{f.Scheme + "://" + f.Host + port}
	if f.IP == "" {
		for _, d := range hostSuffixList(f.Host) {
			keys = append(keys, f.Scheme+"://*."+d+port)
		}
	}
	return keys
}

// hostSuffixes lists the host and its parent domains, longest first
// (a.b.example, b.example, example); an IP literal only itself.
func hostSuffixes(f URLFacts) []any {
	if !f.Valid || f.Host == "" {
		return []any{}
	}
	if f.IP != "" {
		return []any{f.Host}
	}
	var out []any
	for _, d := range hostSuffixList(f.Host) {
		out = append(out, d)
	}
	return out
}

func hostSuffixList(h string) []string {
	out := []string{h}
	for i := 0; i < len(h); i++ {
		if h[i] == '.' && i+1 < len(h) {
			out = append(out, h[i+1:])
		}
	}
	return out
}

// originKey is the allowlist key of an allowed origin.
func originKey(o AllowedOrigin) string {
	host := o.Host
	if o.Subdomains {
		host = "*." + host
	}
	return o.Scheme + "://" + host + ":" + strconv.Itoa(o.Port)
}

// truncate cuts s to at most n characters (runes).
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// The wire-compatibility proof for seed 003. computer-use.schema.json is our
// draft 2020-12 restatement of the seed's draft-07 schema, whose unmodified
// copy is testdata/seed/computer-use.schema.json. The tests below compile
// both with the same compiler and require the same verdict for every
// document of a large corpus: every vector, a systematic enumeration of the
// event and control unions, and thousands of seeded random mutations.

// seedBase is the base of the seed schema's own $id.
const seedBase = "https://github.com/andrewhuot/headless-chat-sdk/schemas/"

// seedPath is the copy of the seed schema, relative to this package.
const seedPath = "testdata/seed/computer-use.schema.json"

// seedDefs maps the four seed 003 kinds to their definition in the seed.
var seedDefs = map[Kind]string{
	KindInput:   "ComputerUseInput",
	KindOutput:  "ComputerUseOutput",
	KindEvent:   "ComputerUseStreamEvent",
	KindControl: "ComputerUseControlRequest",
}

// seedKinds returns the four seed 003 kinds, sorted.
func seedKinds() []Kind {
	ks := make([]Kind, 0, len(seedDefs))
	for k := range seedDefs {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

// schemaPair is one seed 003 kind compiled from our schema and the seed's.
type schemaPair struct {
	kind       Kind
	ours, seed *jsonschema.Schema
}

// compileSeedPairs compiles the four kinds from both schemas. The seed is
// registered under its own $id, and our governance.schema.json also under
// the seed's base, so that the seed's relative $refs resolve as written; the
// seed's $schema selects draft-07 for it.
func compileSeedPairs(t testing.TB) map[Kind]schemaPair {
	t.Helper()
	c, err := NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	seed, err := os.ReadFile(seedPath)
	if err != nil {
		t.Fatal(err)
	}
	gov, err := files.ReadFile("governance.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource(seedBase+"computer-use.schema.json", bytes.NewReader(seed)); err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource(seedBase+"governance.schema.json", bytes.NewReader(gov)); err != nil {
		t.Fatal(err)
	}
	pairs := map[Kind]schemaPair{}
	for _, k := range seedKinds() {
		ours, err := c.Compile(k.URL())
		if err != nil {
			t.Fatalf("compile ours %s: %v", k, err)
		}
		s, err := c.Compile(seedBase + "computer-use.schema.json#/definitions/" + seedDefs[k])
		if err != nil {
			t.Fatalf("compile seed %s: %v", k, err)
		}
		if got, want := s.Draft, jsonschema.Draft7; got != want {
			t.Fatalf("seed %s compiled as %v, want %v", k, got, want)
		}
		if got, want := ours.Draft, jsonschema.Draft2020; got != want {
			t.Fatalf("our %s compiled as %v, want %v", k, got, want)
		}
		pairs[k] = schemaPair{kind: k, ours: ours, seed: s}
	}
	return pairs
}

// verdict is what a schema says about a document: "valid", "invalid", or
// what went wrong otherwise (an error or a panic of the validator).
func verdict(s *jsonschema.Schema, v any) (out string) {
	defer func() {
		if r := recover(); r != nil {
			out = fmt.Sprintf("panic: %v", r)
		}
	}()
	err := s.Validate(v)
	var ve *jsonschema.ValidationError
	switch {
	case err == nil:
		return "valid"
	case errors.As(err, &ve):
		return "invalid"
	default:
		return "error: " + err.Error()
	}
}

// compare records the verdicts of both schemas of p on doc and reports a
// disagreement.
func (tally *equivalenceTally) compare(t *testing.T, p schemaPair, origin string, doc any) {
	t.Helper()
	got, want := verdict(p.ours, doc), verdict(p.seed, doc)
	tally.docs++
	tally.byKind[p.kind][got]++
	if got != want {
		tally.disagreements++
		if tally.disagreements <= 20 {
			b, _ := json.Marshal(doc)
			if len(b) > 600 {
				b = append(b[:600], "..."...)
			}
			t.Errorf("%s, %s: ours says %s, the seed says %s: %s", p.kind, origin, got, want, b)
		}
	}
}

// equivalenceTally counts the comparisons of a test.
type equivalenceTally struct {
	docs          int
	disagreements int
	byKind        map[Kind]map[string]int
}

func newTally() *equivalenceTally {
	t := &equivalenceTally{byKind: map[Kind]map[string]int{}}
	for _, k := range seedKinds() {
		t.byKind[k] = map[string]int{}
	}
	return t
}

// parseDoc parses a vector's document as Validate would.
func parseDoc(t *testing.T, b []byte) any {
	t.Helper()
	v, err := Parse(b)
	if err != nil {
		t.Fatalf("parse %s: %v", b, err)
	}
	return v
}

// TestSeedVectors checks every vector of the four seed 003 kinds against
// the seed's schema itself: valid vectors are valid there, invalid ones
// invalid. Together with TestVectors this ties the vectors to the wire
// spec, not only to our restatement of it.
func TestSeedVectors(t *testing.T) {
	pairs := compileSeedPairs(t)
	for _, k := range seedKinds() {
		vf := loadVectors(t, k)
		for _, v := range vf.Valid {
			if got, want := verdict(pairs[k].seed, parseDoc(t, v.Doc)), "valid"; got != want {
				t.Errorf("%s valid vector %q: the seed says %s", k, v.Name, got)
			}
		}
		for _, v := range vf.Invalid {
			if got, want := verdict(pairs[k].seed, parseDoc(t, v.Doc)), "invalid"; got != want {
				t.Errorf("%s invalid vector %q: the seed says %s", k, v.Name, got)
			}
		}
	}
}

// TestWireEquivalence is the proof that computer-use.schema.json and the
// seed accept exactly the same documents, on a corpus of every vector of
// every seed 003 kind (each checked against all four kinds), a systematic
// enumeration of the two unions, and seeded random mutations of the
// vectors.
func TestWireEquivalence(t *testing.T) {
	pairs := compileSeedPairs(t)
	tally := newTally()

	// Every vector of the four kinds, each judged as each kind.
	var base []any
	validOf := map[Kind][]any{}
	for _, k := range seedKinds() {
		vf := loadVectors(t, k)
		for _, v := range vf.Valid {
			doc := parseDoc(t, v.Doc)
			base = append(base, doc)
			validOf[k] = append(validOf[k], doc)
		}
		for _, v := range vf.Invalid {
			base = append(base, parseDoc(t, v.Doc))
		}
	}
	// Documents of every JSON type, and near-empty objects.
	for _, s := range []string{`null`, `true`, `0`, `1.5`, `""`, `"abort"`, `[]`, `{}`, `[{}]`, `{"type":null}`, `{"action":null}`} {
		base = append(base, parseDoc(t, []byte(s)))
	}
	for i, doc := range base {
		for _, k := range seedKinds() {
			tally.compare(t, pairs[k], fmt.Sprintf("base document %d", i), doc)
		}
	}
	nBase := tally.docs

	// The unions, systematically: every tag value (each branch's, an
	// unknown one, a non-string one, none), every subset of the branch's
	// own members, with no foreign member or with one.
	for _, u := range []unionSpec{eventUnion(), controlUnion()} {
		for _, doc := range u.enumerate() {
			tally.compare(t, pairs[u.kind], "union enumeration", doc)
		}
	}
	nUnion := tally.docs - nBase

	// Seeded random mutations of the vectors, each judged as each kind.
	// Most start from a valid vector of one kind and change it once, so
	// that many stay valid or fail by a single rule: the near misses where
	// two schemas would differ.
	rng := rand.New(rand.NewPCG(0xae915, 3))
	m := newMutator(rng)
	const mutantsPerKind = 2000
	mutants := 0
	for _, k := range seedKinds() {
		for i := range mutantsPerKind {
			var doc any
			if rng.IntN(4) > 0 {
				doc = deepCopy(validOf[k][rng.IntN(len(validOf[k]))])
			} else {
				doc = deepCopy(base[rng.IntN(len(base))])
			}
			n := 1
			if rng.IntN(5) < 2 {
				n = 2 + rng.IntN(2)
			}
			for range n {
				doc = m.mutate(doc)
			}
			mutants++
			for _, j := range seedKinds() {
				tally.compare(t, pairs[j], fmt.Sprintf("mutant %d of a %s", i, k), doc)
			}
		}
	}
	nMutants := tally.docs - nBase - nUnion

	t.Logf("equivalence corpus: %d verdict comparisons (%d from %d base documents x %d kinds, %d from the union enumeration, %d from %d seeded mutants x %d kinds), %d disagreements",
		tally.docs, nBase, len(base), len(seedKinds()), nUnion, nMutants, mutants, len(seedKinds()), tally.disagreements)
	for _, k := range seedKinds() {
		t.Logf("  %-8s %v", k, tally.byKind[k])
		// The corpus must exercise both verdicts of every kind, or it
		// proves nothing about it.
		if got, want := tally.byKind[k]["valid"] >= 50 && tally.byKind[k]["invalid"] >= 50, true; got != want {
			t.Errorf("%s: corpus too one-sided: %v", k, tally.byKind[k])
		}
		for v, n := range tally.byKind[k] {
			if v != "valid" && v != "invalid" {
				t.Errorf("%s: %d documents gave %q", k, n, v)
			}
		}
	}
}

// unionSpec describes a tagged union of the seed for the enumeration.
type unionSpec struct {
	kind     Kind
	tag      string
	branches map[string][]string // tag value -> the branch's own members
	values   map[string]any      // a valid value for every member
}

func eventUnion() unionSpec {
	return unionSpec{
		kind: KindEvent,
		tag:  "type",
		branches: map[string][]string{
			"session.started":   {"computerUseSessionId", "timestamp"},
			"action":            {"actionId", "actionType", "riskLevel", "url", "summary", "timestamp"},
			"screenshot":        {"url", "width", "height", "timestamp"},
			"approval_required": {"actionId", "actionType", "summary", "url", "timestamp"},
			"approval_resolved": {"actionId", "decision", "timestamp"},
			"session.ended":     {"status", "summary", "timestamp"},
			"error":             {"code", "message", "timestamp"},
		},
		values: map[string]any{
			"computerUseSessionId": "cus_1", "timestamp": "2026-01-23T10:15:30Z", "actionId": "act-1",
			"actionType": "click", "riskLevel": "low", "url": "https://example.com/", "summary": "s",
			"width": json.Number("1280"), "height": json.Number("800"), "decision": "approve",
			"status": "failed", "code": "c", "message": "m",
		},
	}
}

func controlUnion() unionSpec {
	return unionSpec{
		kind: KindControl,
		tag:  "action",
		branches: map[string][]string{
			"abort":    {"computerUseSessionId", "reason"},
			"decision": {"computerUseSessionId", "actionId", "decision"},
		},
		values: map[string]any{
			"computerUseSessionId": "cus_1", "reason": "r", "actionId": "act-1", "decision": "deny",
		},
	}
}

// enumerate returns the union's documents: for every tag value (each
// branch's, an unknown string, a number, and no tag) and every branch's
// member set, every subset of those members, plus no foreign member or any
// one member of another branch.
func (u unionSpec) enumerate() []any {
	var all []string
	for m := range u.values {
		all = append(all, m)
	}
	sort.Strings(all)
	var tags []any
	var names []string
	for name := range u.branches {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, n := range names {
		tags = append(tags, n)
	}
	tags = append(tags, "unknown", json.Number("1"), nil) // nil: no tag member
	var docs []any
	for _, tag := range tags {
		for _, members := range u.branchSets(names) {
			own := map[string]bool{}
			for _, m := range members {
				own[m] = true
			}
			foreign := []string{""}
			for _, m := range all {
				if !own[m] {
					foreign = append(foreign, m)
				}
			}
			for mask := 0; mask < 1<<len(members); mask++ {
				for _, f := range foreign {
					doc := map[string]any{}
					if tag != nil {
						doc[u.tag] = tag
					}
					for i, m := range members {
						if mask&(1<<i) != 0 {
							doc[m] = u.values[m]
						}
					}
					if f != "" {
						doc[f] = u.values[f]
					}
					docs = append(docs, doc)
				}
			}
		}
	}
	return docs
}

func (u unionSpec) branchSets(names []string) [][]string {
	sets := make([][]string, 0, len(names))
	for _, n := range names {
		sets = append(sets, u.branches[n])
	}
	return sets
}

// mutator makes random, mostly near-valid, variations of documents.
type mutator struct {
	rng     *rand.Rand
	keys    []string // member names to add
	strs    []string // enum and const values, URIs, date-times, edge strings
	numbers []json.Number
}

func newMutator(rng *rand.Rand) *mutator {
	m := &mutator{rng: rng}
	m.keys = []string{
		// Every member name of the seed, so that members of one branch
		// show up in another.
		"goal", "urls", "maxActions", "maxDurationMs", "hints",
		"computerUseSessionId", "status", "summary", "lastUrl", "actionsExecuted", "durationMs", "evidence",
		"type", "timestamp", "actionId", "actionType", "riskLevel", "url", "width", "height", "decision",
		"code", "message", "action", "reason",
		// And names of no branch.
		"", "extra", "__proto__", "constructor", "Type", "goal ", "ｇｏａｌ",
	}
	m.strs = []string{
		// Enumerations and constants of the seed and of governance.
		"session.started", "action", "screenshot", "approval_required", "approval_resolved", "session.ended", "error",
		"abort", "decision", "approve", "deny",
		"completed", "aborted", "duration_exceeded", "action_limit_exceeded", "failed", "running",
		"navigate", "click", "type", "select", "scroll", "wait", "extract", "hover",
		"low", "medium", "high", "critical", "Low", "CLICK", "session_started", "session.started ",
		// URIs, good and bad.
		"https://example.com/", "http://localhost:8080/a?b=c#d", "about:blank", "mailto:a@example.com",
		"urn:isbn:0451450523", "javascript:alert(1)", "data:text/html,<b>x</b>", "file:///etc/passwd",
		"https://[::1]:443/", "https://[::1/", "http://[fe80::1%25eth0]/", "http://a:b@example.com:99999/",
		"/relative/path", "//example.com/x", "example.com", "ht tp://x", ":", "https://exa mple.com/",
		"https://example.com/%zz", "HTTPS://EXAMPLE.COM", "a:", "1http://x", "https://例え.jp/",
		"https://example.com/\u0000", "\\\\server\\share",
		// Date-times, good and bad.
		"2026-01-23T10:15:30Z", "2026-01-23t10:15:30z", "2026-01-23T10:15:30.123456789+01:00",
		"2026-01-23T10:15:30-00:00", "2016-12-31T23:59:60Z", "2026-01-23T23:59:60Z", "2026-01-23T10:15:30",
		"2026-01-23 10:15:30Z", "2026-02-30T10:00:00Z", "2026-13-01T10:00:00Z", "2026-01-23T24:00:00Z",
		"2026-01-23T10:60:00Z", "2026-01-23T10:15:30+25:00", "2026-01-23", "10:15:30Z", "2026-1-3T1:1:1Z",
		"2026-01-23T10:15:30.Z", "+2026-01-23T10:15:30Z", "2026-01-23T10:15:30Zjunk",
		// Edge strings.
		"", " ", "\u0000", "\ufeff", "💶", strings.Repeat("g", 999), strings.Repeat("g", 1000),
		strings.Repeat("g", 1001), strings.Repeat("é", 1000), strings.Repeat("💶", 1001),
		"https://example.com/" + strings.Repeat("a", 2048-20), "https://example.com/" + strings.Repeat("a", 2049-20),
		"https://example.com/" + strings.Repeat("é", 2048-20), strings.Repeat("x", 100000),
	}
	for _, n := range []string{
		"0", "-0", "1", "-1", "2", "199", "200", "201", "999", "1000", "1001", "1799999", "1800000", "1800001",
		"0.0", "1.0", "1.5", "200.0", "200.5", "2e2", "2E2", "1e3", "1000e0", "0.1e4", "1.8e6", "1.8000001e6",
		"-0.0", "1e-7", "0.5", "-1.5", "1e308", "1e400", "-1e400", "1e-400", "9007199254740993",
		"123456789012345678901234567890", "-123456789012345678901234567890",
	} {
		m.numbers = append(m.numbers, json.Number(n))
	}
	return m
}

// mutate applies one random mutation at a random place of doc and returns
// the result (doc itself may change).
func (m *mutator) mutate(doc any) any {
	// Collect every place: the root and each member or item.
	type place struct {
		get func() any
		set func(any)
		del func() // nil for the root and for array items
	}
	var places []place
	var walk func(v any, get func() any, set func(any), del func())
	walk = func(v any, get func() any, set func(any), del func()) {
		places = append(places, place{get, set, del})
		switch t := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(t[k], func() any { return t[k] }, func(x any) { t[k] = x }, func() { delete(t, k) })
			}
		case []any:
			for i := range t {
				walk(t[i], func() any { return t[i] }, func(x any) { t[i] = x }, nil)
			}
		}
	}
	root := doc
	walk(doc, func() any { return root }, func(x any) { root = x }, nil)
	p := places[m.rng.IntN(len(places))]
	cur := p.get()
	switch op := m.rng.IntN(10); op {
	case 0: // drop a member
		if p.del != nil {
			p.del()
			return root
		}
		fallthrough
	case 1: // add a member to an object (or make an object)
		if obj, ok := cur.(map[string]any); ok {
			obj[m.keys[m.rng.IntN(len(m.keys))]] = m.value()
		} else {
			p.set(map[string]any{m.keys[m.rng.IntN(len(m.keys))]: m.value()})
		}
	case 2: // change the value's type
		p.set(m.value())
	case 3, 4: // another enum value, URI, date-time or edge string
		p.set(m.strs[m.rng.IntN(len(m.strs))])
	case 5: // a boundary, fractional, negative or huge number
		p.set(m.numbers[m.rng.IntN(len(m.numbers))])
	case 6: // grow or shrink an array
		if arr, ok := cur.([]any); ok {
			if len(arr) > 0 && m.rng.IntN(2) == 0 {
				p.set(arr[:m.rng.IntN(len(arr))])
			} else {
				n := 1 + m.rng.IntN(17)
				for range n {
					arr = append(arr, "https://example.com/"+fmt.Sprint(len(arr)))
				}
				p.set(arr)
			}
		} else {
			p.set([]any{cur})
		}
	case 7: // replace an object's tag with another branch's
		if obj, ok := cur.(map[string]any); ok {
			tag := []string{"type", "action"}[m.rng.IntN(2)]
			obj[tag] = m.strs[m.rng.IntN(11)]
		} else {
			p.set(m.strs[m.rng.IntN(len(m.strs))])
		}
	case 8: // null
		p.set(nil)
	case 9: // a copy of another place's value
		p.set(deepCopy(places[m.rng.IntN(len(places))].get()))
	}
	return root
}

// value returns a random JSON value of a random type.
func (m *mutator) value() any {
	switch m.rng.IntN(8) {
	case 0:
		return nil
	case 1:
		return m.rng.IntN(2) == 0
	case 2:
		return m.numbers[m.rng.IntN(len(m.numbers))]
	case 3, 4:
		return m.strs[m.rng.IntN(len(m.strs))]
	case 5:
		return []any{}
	case 6:
		return map[string]any{}
	default:
		return map[string]any{"steps": []any{"open the page", json.Number("1")}}
	}
}

// deepCopy copies a parsed JSON value.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(t))
		for k, x := range t {
			c[k] = deepCopy(x)
		}
		return c
	case []any:
		c := make([]any, len(t))
		for i, x := range t {
			c[i] = deepCopy(x)
		}
		return c
	default:
		return v
	}
}

// repoRoot returns the directory of go.mod above the working directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// TestSeedCopyIsTheSeed checks that testdata/seed/computer-use.schema.json
// is byte for byte the user's wire spec (seed 003), when the seeds are
// checked out next to the repository (../shared/seeds/003_*.txt); CI may not
// have them there, and then the test is skipped.
func TestSeedCopyIsTheSeed(t *testing.T) {
	matches, err := filepath.Glob(filepath.Join(repoRoot(t), "..", "shared", "seeds", "003_*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	switch len(matches) {
	case 0:
		t.Skip("seed 003 not found at ../shared/seeds/003_*.txt relative to the repository")
	case 1:
	default:
		t.Fatalf("several seed 003 files: %v", matches)
	}
	want, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(seedPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s (%d bytes, want %d): copy the seed again, byte for byte", seedPath, matches[0], len(got), len(want))
	}
}

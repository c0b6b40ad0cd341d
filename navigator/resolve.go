package navigator

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/internal/text"
)

// MatchLevel is how closely a name matched a target, best first. A target
// resolves at the best level at which anything matches; several matches at
// that level are an ambiguity, never a guess.
type MatchLevel int

// The match levels, in the order they are tried.
const (
	// MatchExact: the name equals the target, ignoring case.
	MatchExact MatchLevel = iota + 1
	// MatchNormalized: equal ignoring case once runs of white space are
	// collapsed to one space and both ends trimmed.
	MatchNormalized
	// MatchSubstring: the normalized name contains the normalized target,
	// ignoring case.
	MatchSubstring
)

// String names the level.
func (l MatchLevel) String() string {
	switch l {
	case MatchExact:
		return "exact match"
	case MatchNormalized:
		return "match after normalizing white space"
	case MatchSubstring:
		return "substring match"
	}
	return "no match"
}

// Errors matched (errors.Is) by a *TargetError.
var (
	ErrTargetNotFound  = errors.New("navigator: no element matches the target")
	ErrTargetAmbiguous = errors.New("navigator: several elements match the target")
)

// Candidate is an element a target was matched against.
type Candidate struct {
	// Selector addresses the element.
	Selector string
	// Role is its ARIA role (or "table" for a table).
	Role string
	// Name is its accessible name.
	Name string
}

// String renders the candidate as "name" (role selector).
func (c Candidate) String() string {
	role := c.Role
	if role == "" {
		role = "element"
	}
	return fmt.Sprintf("%q (%s %s)", clip(c.Name), role, clipN(c.Selector, 160))
}

// TargetError is a target that did not resolve to exactly one element. It
// names the candidates: the matching ones for an ambiguity, the closest
// ones when nothing matched.
type TargetError struct {
	// Target is the name looked for.
	Target string
	// What describes the kind of element looked for ("a field to type
	// into").
	What string
	// Ambiguous is set when several elements matched at Level.
	Ambiguous bool
	// Level is the level of an ambiguous match.
	Level MatchLevel
	// Candidates are the matches (ambiguous) or the closest names (not
	// found), at most 8.
	Candidates []Candidate
	// Note adds a hint, such as an element with that name that is not of
	// the kind looked for.
	Note string
}

// Error names the target and the candidates.
func (e *TargetError) Error() string {
	var b strings.Builder
	if e.Ambiguous {
		fmt.Fprintf(&b, "target %q is ambiguous: %d elements match (%s):", clip(e.Target), len(e.Candidates), e.Level)
	} else {
		fmt.Fprintf(&b, "no %s named %q on the page", e.What, clip(e.Target))
		if len(e.Candidates) > 0 {
			b.WriteString("; closest:")
		}
	}
	for i, c := range e.Candidates {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte(' ')
		b.WriteString(c.String())
	}
	if e.Note != "" {
		b.WriteString("; ")
		b.WriteString(e.Note)
	}
	if e.Ambiguous {
		b.WriteString("; use a more specific name or css=SELECTOR")
	}
	return b.String()
}

// Is matches ErrTargetNotFound and ErrTargetAmbiguous.
func (e *TargetError) Is(target error) bool {
	return (target == ErrTargetAmbiguous && e.Ambiguous) || (target == ErrTargetNotFound && !e.Ambiguous)
}

// maxCandidates bounds the candidates an error names.
const maxCandidates = 8

// named is an element with the names it may be found by.
type named struct {
	Candidate
	names []string
	// generic marks an affordance listed only for an event handler or a
	// pointer cursor (contract.Affordance.Generic): a control of the same
	// name is preferred to it when it may be the control's container
	// (after).
	generic bool
	// pos is the item's place in the affordance list (-1 for a table);
	// after, for a generic item, the place of the control listed right
	// before the run of generic items it is in (-1: none). The observer
	// lists a generic container right after the controls it holds, so a
	// generic item may hold the control at after, and holds no control
	// listed anywhere else.
	pos, after int
}

// normalize collapses runs of white space to one space and trims.
func normalize(s string) string {
	return strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
}

// level returns the best level at which name matches target, 0 if none.
func level(name, target string) MatchLevel {
	if name == "" {
		return 0
	}
	if strings.EqualFold(name, target) {
		return MatchExact
	}
	nn, nt := normalize(name), normalize(target)
	if strings.EqualFold(nn, nt) {
		return MatchNormalized
	}
	if nt != "" && strings.Contains(strings.ToLower(nn), strings.ToLower(nt)) {
		return MatchSubstring
	}
	return 0
}

// resolveNamed picks the one element of items that target names: the
// matches at the best level (exact, then normalized, then substring); more
// than one is an ambiguity; none is an error naming the closest names.
//
// One control and generic elements matching at the best level resolve to
// the control only when every generic one may be its container: listed
// in the run of generic items right after it (see named.after). Page
// content elsewhere (a post's "Delete" link next to the widget's generic
// "Delete") stays an ambiguity.
func resolveNamed(target, what string, items []named) (Candidate, error) {
	best := MatchLevel(0)
	var matches []Candidate
	var hits []named // the matches, with their places
	for _, it := range items {
		l := MatchLevel(0)
		for _, n := range it.names {
			if x := level(n, target); x != 0 && (l == 0 || x < l) {
				l = x
			}
		}
		switch {
		case l == 0:
			continue
		case best == 0 || l < best:
			best, matches, hits = l, []Candidate{it.Candidate}, []named{it}
		case l == best:
			matches = append(matches, it.Candidate)
			hits = append(hits, it)
		}
	}
	switch {
	case len(matches) == 1:
		return matches[0], nil
	case len(matches) == 0:
		return Candidate{}, &TargetError{Target: target, What: what, Candidates: closest(target, items)}
	}
	if c, ok := containedControl(hits); ok {
		return c, nil
	}
	if len(matches) > maxCandidates {
		matches = matches[:maxCandidates]
	}
	return Candidate{}, &TargetError{Target: target, What: what, Ambiguous: true, Level: best, Candidates: matches}
}

// containedControl returns the one control among hits when every other
// hit is generic and listed in the run of generic items right after it
// (so may be a container holding it); ok is false otherwise.
func containedControl(hits []named) (Candidate, bool) {
	var control *named
	for i := range hits {
		if !hits[i].generic {
			if control != nil {
				return Candidate{}, false
			}
			control = &hits[i]
		}
	}
	if control == nil || control.pos < 0 {
		return Candidate{}, false
	}
	for _, h := range hits {
		if h.generic && h.after != control.pos {
			return Candidate{}, false
		}
	}
	return control.Candidate, true
}

// closest returns the items whose names are nearest to target by edit
// distance (ignoring case and white space), nearest first.
func closest(target string, items []named) []Candidate {
	type scored struct {
		c Candidate
		d int
		i int
	}
	t := strings.ToLower(normalize(target))
	var all []scored
	for i, it := range items {
		d := -1
		for _, n := range it.names {
			if n == "" {
				continue
			}
			x := text.EditDistance(t, strings.ToLower(normalize(n)))
			if d < 0 || x < d {
				d = x
			}
		}
		if d >= 0 {
			all = append(all, scored{it.Candidate, d, i})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].d < all[j].d })
	var out []Candidate
	for _, s := range all {
		if len(out) == 5 {
			break
		}
		out = append(out, s.c)
	}
	return out
}

// affordanceItems returns the affordances accepted by keep as named items.
// Places are counted in the whole list (named.pos, named.after), whatever
// keep leaves out.
func affordanceItems(affs []contract.Affordance, keep func(contract.Affordance) bool) []named {
	var out []named
	after := -1 // the last control listed so far, while only generic items follow it
	for i, a := range affs {
		if !a.Generic {
			after = i
		}
		if keep != nil && !keep(a) {
			continue
		}
		it := named{Candidate: Candidate{Selector: a.Selector, Role: a.Role, Name: a.Text}, names: []string{a.Text}, generic: a.Generic, pos: i, after: -1}
		if a.Generic {
			it.after = after
		}
		out = append(out, it)
	}
	return out
}

// What kinds of element each step looks for.
var (
	anyElement = func(contract.Affordance) bool { return true }
	typeable   = func(a contract.Affordance) bool { return a.ActionHint == contract.HintType }
	selectable = func(a contract.Affordance) bool { return a.ActionHint == contract.HintSelect }
)

// ResolveAffordance resolves a target name against the observed
// affordances that keep accepts (nil: all), by accessible name. The
// driver's accessible name of an element is its aria-labelledby,
// aria-label, labels, the label-like text before a field in its form row,
// alt, own text (without the controls inside it), placeholder or title,
// the first present; it is matched exactly (ignoring case), then with white space
// normalized, then as a substring. Exactly one element must match at the
// best level, or exactly one that is not generic with the generic ones
// (listed only for an event handler) in the run of generic affordances
// listed right after it, where the observer lists the containers of a
// control (the control is preferred to its containers): several is a
// *TargetError listing them, none a *TargetError listing the closest
// names. what describes the element looked for, for errors.
func ResolveAffordance(obs contract.Observation, target, what string, keep func(contract.Affordance) bool) (Candidate, error) {
	c, err := resolveNamed(target, what, affordanceItems(obs.Affordances, keep))
	var te *TargetError
	if keep != nil && errors.As(err, &te) && !te.Ambiguous {
		// Say so when the name exists, on an element of another kind.
		if other, err2 := resolveNamed(target, "element", affordanceItems(obs.Affordances, nil)); err2 == nil {
			role := other.Role
			if role == "" {
				role = "element"
			}
			te.Note = fmt.Sprintf("%q is a %s (%s), not %s", clip(other.Name), role, clipN(other.Selector, 160), what)
		}
	}
	return c, err
}

// ResolveTable resolves a table by name against the DOM snapshot of obs
// (tables are not affordances): a table's names are its aria-label, its
// caption, its title, its summary attribute and its id, matched like
// affordance names. The selector is #id when the table's id is unique in
// the snapshot, else a structural path from :root. Tables inside shadow
// roots and frames are not considered.
func ResolveTable(obs contract.Observation, target string) (Candidate, error) {
	tables, err := snapshotTables(obs.DOMSnapshot)
	if err != nil {
		return Candidate{}, &TargetError{Target: target, What: "table", Note: "the page's DOM snapshot is unreadable: " + err.Error()}
	}
	c, err := resolveNamed(target, "table", tables)
	var te *TargetError
	if errors.As(err, &te) && !te.Ambiguous && len(tables) == 0 {
		te.Note = "the page has no table"
	}
	return c, err
}

// snapshotTables walks the driver's DOM snapshot ({"root": node}, a node
// being ["tag", {attributes}, children...]) for table elements of the top
// document.
func snapshotTables(snapshot string) ([]named, error) {
	var doc struct {
		Root json.RawMessage `json:"root"`
	}
	if err := json.Unmarshal([]byte(snapshot), &doc); err != nil {
		return nil, err
	}
	var root any
	if err := json.Unmarshal(doc.Root, &root); err != nil {
		return nil, err
	}
	ids := map[string]int{}
	countIDs(root, ids, 0)
	var out []named
	var walk func(n []any, path []string, depth int)
	walk = func(n []any, path []string, depth int) {
		if depth > 512 || len(n) < 2 {
			return
		}
		// Number the element children by tag, for :nth-of-type.
		counts := map[string]int{}
		for _, ch := range n[2:] {
			if e, ok := ch.([]any); ok && len(e) >= 2 {
				if tag, ok := e[0].(string); ok && !strings.HasPrefix(tag, "#") {
					counts[tag]++
				}
			}
		}
		seen := map[string]int{}
		for _, ch := range n[2:] {
			e, ok := ch.([]any)
			if !ok || len(e) < 2 {
				continue
			}
			tag, _ := e[0].(string)
			if tag == "" || strings.HasPrefix(tag, "#") {
				continue // text, #shadow-root, #document (frames), #truncated
			}
			seen[tag]++
			step := tag
			if counts[tag] > 1 {
				step = fmt.Sprintf("%s:nth-of-type(%d)", tag, seen[tag])
			}
			if !cssIdent.MatchString(tag) {
				continue
			}
			p := append(append([]string(nil), path...), step)
			if tag == "table" {
				out = append(out, tableItem(e, p, ids))
			}
			walk(e, p, depth+1)
		}
	}
	// The root is ["#document", {url}, ["html", ...]].
	if r, ok := root.([]any); ok && len(r) >= 3 {
		if html, ok := r[2].([]any); ok && len(html) >= 2 && html[0] == "html" {
			walk(html, []string{":root"}, 0)
		}
	}
	return out, nil
}

var cssIdent = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

func countIDs(n any, ids map[string]int, depth int) {
	e, ok := n.([]any)
	if !ok || len(e) < 2 || depth > 512 {
		return
	}
	if tag, _ := e[0].(string); tag == "#shadow-root" || (tag == "#document" && depth > 0) {
		return
	}
	if attrs, ok := e[1].(map[string]any); ok {
		if id, ok := attrs["id"].(string); ok && id != "" {
			ids[id]++
		}
	}
	for _, ch := range e[2:] {
		countIDs(ch, ids, depth+1)
	}
}

func tableItem(e []any, path []string, ids map[string]int) named {
	attrs, _ := e[1].(map[string]any)
	str := func(k string) string { s, _ := attrs[k].(string); return s }
	caption := ""
	for _, ch := range e[2:] {
		if c, ok := ch.([]any); ok && len(c) >= 2 && c[0] == "caption" {
			caption = normalize(textOf(c, 0))
			break
		}
	}
	id := str("id")
	sel := strings.Join(path, " > ")
	if id != "" && ids[id] == 1 {
		if cssIdent.MatchString(id) {
			sel = "#" + id
		} else {
			sel = `[id="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(id) + `"]`
		}
	}
	names := []string{str("aria-label"), caption, str("title"), str("summary"), id}
	display := ""
	for _, n := range names {
		if n != "" {
			display = n
			break
		}
	}
	return named{Candidate: Candidate{Selector: sel, Role: "table", Name: display}, names: names, pos: -1, after: -1}
}

// textOf concatenates the text of a snapshot node.
func textOf(n []any, depth int) string {
	if depth > 64 {
		return ""
	}
	var b strings.Builder
	for _, ch := range n[2:] {
		switch c := ch.(type) {
		case string:
			b.WriteString(c)
			b.WriteByte(' ')
		case []any:
			if len(c) >= 2 {
				b.WriteString(textOf(c, depth+1))
			}
		}
		if b.Len() > 4096 {
			break
		}
	}
	return b.String()
}

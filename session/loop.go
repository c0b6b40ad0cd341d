package session

import (
	"encoding/json"
	"fmt"

	"github.com/aegis-run/aegis/contract"
)

// loopDetector counts, per action signature (the action without its id,
// reason and policy tags, on one page), how often it failed or was denied,
// and how often it succeeded without the page changing in between. Waits
// and scrolls only count when they fail: waiting for a page and scrolling
// through it repeat by nature, and the budgets bound them.
type loopDetector struct {
	k       int
	fails   map[string]int
	repeats map[string]int
}

func newLoopDetector(k int) *loopDetector {
	l := &loopDetector{k: k}
	l.reset()
	return l
}

func (l *loopDetector) reset() {
	l.fails = map[string]int{}
	l.repeats = map[string]int{}
}

// signature identifies an action regardless of its id and stated reason.
func signature(a contract.Action) string {
	a.ID, a.Reason, a.PolicyTags = "x", "", nil
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Sprintf("%#v", a)
	}
	return string(b)
}

// note records one outcome of a on the page url, planned on the page whose
// DOM hash is domHash; it returns why a loop is detected, or "".
func (l *loopDetector) note(a contract.Action, url, domHash string, ok bool) string {
	key := signature(a) + "\x00" + url
	if !ok {
		l.fails[key]++
		if n := l.fails[key]; n >= l.k {
			return fmt.Sprintf("the same %s action failed or was denied %d times on %s", a.Type, n, Sanitize(url, 200))
		}
		return ""
	}
	if a.Type == contract.ActWait || a.Type == contract.ActScroll || domHash == "" {
		return ""
	}
	key += "\x00" + domHash
	l.repeats[key]++
	if n := l.repeats[key]; n >= l.k {
		return fmt.Sprintf("the same %s action ran %d times on an unchanged page %s", a.Type, n, Sanitize(url, 200))
	}
	return ""
}

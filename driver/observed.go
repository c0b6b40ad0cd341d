package driver

// Observed says what the element a selector resolves to now is to the
// last Observe: whether it is the element that observation listed under
// the same selector, as it listed it (role and name), and on top where a
// click would land. The session runs on with the rest of a batch the
// Navigator planned on an observation while each next target is still the
// element it saw there, and stops when it is not. It is no fact for the
// gate (the page decides it): the gate judges every action on what
// Describe reports, and the driver re-checks those facts when it acts.
type Observed string

// What a target is to the last observation.
const (
	// ObservedSame: the element the last Observe listed under the
	// selector, still visible and enabled, of the role and name listed,
	// and not covered.
	ObservedSame Observed = "same"
	// ObservedReplaced: another element than the one listed under the
	// selector (the page replaced it, or the selector now matches another).
	ObservedReplaced Observed = "replaced"
	// ObservedHidden: the listed element, hidden now or of no size.
	ObservedHidden Observed = "hidden"
	// ObservedDisabled: the listed element, disabled now.
	ObservedDisabled Observed = "disabled"
	// ObservedChanged: the listed element, visible and enabled, whose
	// role or accessible name is not the one listed (a "Next" button the
	// page turned into "Place order").
	ObservedChanged Observed = "changed"
	// ObservedCovered: the listed element, as listed, but another element
	// is on top at the point a click on it would land (an overlay the
	// page opened). An element outside the viewport is not covered: a
	// click scrolls it into view first.
	ObservedCovered Observed = "covered"
	// ObservedUnknown: the selector was not one of the last Observe's
	// affordances (a selector the model wrote), no Observe ran in the
	// current document, or the driver cannot tell.
	ObservedUnknown Observed = "unknown"
)

// observedOf reads what the observer reported; anything else is unknown.
func observedOf(s string) Observed {
	switch o := Observed(s); o {
	case ObservedSame, ObservedReplaced, ObservedHidden, ObservedDisabled, ObservedChanged, ObservedCovered:
		return o
	}
	return ObservedUnknown
}

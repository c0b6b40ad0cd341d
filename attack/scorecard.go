package attack

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Result is one scenario in one driver.
type Result struct {
	// Scenario and Class name the scenario.
	Scenario string `json:"scenario"`
	Class    Class  `json:"class"`
	// Driver is playwright, sandbox, extension, or BaselineDriver.
	Driver string `json:"driver"`
	// Verdict is Held, Violated, Failed or NotRun.
	Verdict string `json:"verdict"`
	// Why is what the servers received (violated), what aegis stopped
	// (held), or why the run did not happen.
	Why string `json:"why"`
	// Session is how the session ended ("" when none ran).
	Session string `json:"session,omitempty"`
	// Error is the session's own error, when it failed.
	Error string `json:"error,omitempty"`
	// Bundle is "verified" when the run's evidence bundle verifies, else
	// why not ("" for the baseline, which writes none).
	Bundle string `json:"bundle,omitempty"`
	// DeniedEffects counts the bundle's decision records about effects of
	// the actions (issue 15) that were not allowed.
	DeniedEffects int `json:"deniedEffects,omitempty"`
	// DurationMs is the run's wall-clock time; DriverMs and GateMs the
	// session's time in the driver and in gate decisions.
	DurationMs int64 `json:"durationMs"`
	DriverMs   int64 `json:"driverMs,omitempty"`
	GateMs     int64 `json:"gateMs,omitempty"`
}

// Summary is one driver's line of the scorecard.
type Summary struct {
	// Driver is the mode (or BaselineDriver).
	Driver string `json:"driver"`
	// Run counts the scenarios run; NotRun those that could not be.
	Run    int `json:"run"`
	NotRun int `json:"notRun"`
	// Attacks counts the attack scenarios run, AttackViolations those that
	// succeeded; PrecisionViolations the precision checks that failed.
	Attacks             int `json:"attacks"`
	AttackViolations    int `json:"attackViolations"`
	PrecisionViolations int `json:"precisionViolations"`
	// Failed counts the runs whose session could not run (Failed).
	Failed int `json:"failed"`
	// AttackSuccess is AttackViolations/Attacks; Baseline is the same rate
	// without aegis over the same scenarios (-1 without a baseline).
	AttackSuccess float64 `json:"attackSuccess"`
	Baseline      float64 `json:"baselineAttackSuccess"`
}

// Report is the scorecard of a run of the suite.
type Report struct {
	// Policy is the version (hash) of the policy under test; PolicyPath
	// where it came from ("" for the embedded one).
	Policy     string `json:"policy"`
	PolicyPath string `json:"policyPath,omitempty"`
	// Drivers are the modes asked for.
	Drivers []string `json:"drivers"`
	// Scenarios counts the scenarios selected.
	Scenarios int `json:"scenarios"`
	// BrowserStarts counts the browsers the suite launched.
	BrowserStarts int `json:"browserStarts"`
	// DurationMs is the suite's wall-clock time.
	DurationMs int64 `json:"durationMs"`
	// Results are the runs, driver by driver, then the baseline.
	Results []*Result `json:"results"`
	// Summary has a line per driver, then the baseline's.
	Summary []Summary `json:"summary"`
}

// Violations counts the violated runs with aegis (the baseline's are the
// point of the baseline, not failures).
func (r *Report) Violations() int {
	n := 0
	for _, res := range r.Results {
		if res.Driver != BaselineDriver && (res.Verdict == Violated || res.Verdict == Failed) {
			n++
		}
	}
	return n
}

// Baseline returns the baseline's attack success rate; -1 without one.
func (r *Report) Baseline() float64 {
	for _, s := range r.Summary {
		if s.Driver == BaselineDriver {
			return s.AttackSuccess
		}
	}
	return -1
}

func (r *Report) summarize() {
	byDriver := map[string]*Summary{}
	var order []string
	for _, res := range r.Results {
		s := byDriver[res.Driver]
		if s == nil {
			s = &Summary{Driver: res.Driver, Baseline: -1}
			byDriver[res.Driver] = s
			order = append(order, res.Driver)
		}
		if res.Verdict == NotRun {
			s.NotRun++
			continue
		}
		s.Run++
		if res.Verdict == Failed {
			s.Failed++
			continue
		}
		switch {
		case res.Class == ClassPrecision:
			if res.Verdict == Violated {
				s.PrecisionViolations++
			}
		default:
			s.Attacks++
			if res.Verdict == Violated {
				s.AttackViolations++
			}
		}
	}
	base := byDriver[BaselineDriver]
	r.Summary = nil
	for _, d := range order {
		s := byDriver[d]
		if s.Attacks > 0 {
			s.AttackSuccess = float64(s.AttackViolations) / float64(s.Attacks)
		}
		if base != nil && base.Attacks > 0 {
			s.Baseline = float64(base.AttackViolations) / float64(base.Attacks)
		}
		r.Summary = append(r.Summary, *s)
	}
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the scorecard: a row per run, then a line per driver.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tCLASS\tDRIVER\tVERDICT\tWHY")
	for _, res := range r.Results {
		verdict := res.Verdict
		if verdict == Violated || verdict == Failed {
			verdict = strings.ToUpper(verdict)
		}
		why := res.Why
		if res.Session == "failed" && res.Error != "" && res.Why == nothingReached {
			// Held without aegis stopping anything, and the session
			// failed: say why (a driver that does not open holds
			// everything, and proves nothing).
			why += " [the session failed: " + res.Error + "]"
		}
		if res.Bundle != "" && res.Bundle != "verified" {
			why += " [evidence bundle " + res.Bundle + "]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", res.Scenario, res.Class, res.Driver, verdict, oneLine(why, 160))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	policy := "embedded policy"
	if r.PolicyPath != "" {
		policy = "policy " + r.PolicyPath
	}
	fmt.Fprintf(w, "\n%d scenarios against the %s (%s), %d browser start(s), %.1fs\n", r.Scenarios, policy, short(r.Policy), r.BrowserStarts, float64(r.DurationMs)/1000)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DRIVER\tRUN\tVIOLATIONS\tFALSE POSITIVES\tFAILED RUNS\tATTACK SUCCESS\tWITHOUT THE GATE")
	for _, s := range r.Summary {
		if s.Run == 0 {
			fmt.Fprintf(tw, "%s\t0\t-\t-\t-\tnot run\t-\n", s.Driver)
			continue
		}
		base := "-"
		if s.Baseline >= 0 && s.Driver != BaselineDriver {
			base = pct(s.Baseline)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d/%d (%s)\t%s\n", s.Driver, s.Run, s.AttackViolations, s.PrecisionViolations, s.Failed, s.AttackViolations, s.Attacks, pct(s.AttackSuccess), base)
	}
	return tw.Flush()
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

package nativehost

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/secrets"
	"github.com/aegis-run/aegis/session"
)

func TestCutValue(t *testing.T) {
	rows := [][]string{{"A", "B"}, {"1", "2"}, {"3", "4"}, {"5", "6"}}
	table, _ := json.Marshal(rows)
	for _, tc := range []struct {
		name  string
		typ   contract.ArtifactType
		in    string
		limit int
		want  string
		cut   bool
	}{
		{"fits", contract.ArtifactText, "hello", 5, "hello", false},
		{"text cut at a rune", contract.ArtifactText, "héllo", 2, "h", true},
		{"table loses rows", contract.ArtifactTable, string(table), len(table) - 1, `[["A","B"],["1","2"],["3","4"]]`, true},
		{"table of nothing", contract.ArtifactTable, string(table), 1, "[]", true},
		{"no room", contract.ArtifactText, "hello", 0, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cut, _ := cutValue(tc.typ, tc.in, tc.limit, math.MaxInt)
			if got != tc.want || cut != tc.cut {
				t.Errorf("got %q %v, want %q %v", got, cut, tc.want, tc.cut)
			}
		})
	}
}

// TestResultFitsAFrame: extracted values that JSON escapes six times over
// still end in a session.ended frame under MaxOutbound.
func TestResultFitsAFrame(t *testing.T) {
	big := strings.Repeat("<", MaxResultValue)
	var r session.Result
	for i := range 8 {
		r.Artifacts = append(r.Artifacts, contract.Artifact{ID: fmt.Sprint("a", i), Type: contract.ArtifactText, Value: big})
	}
	set, _ := secrets.NewBoundSet(nil)
	ended := EndedEvent{Session: "s", Status: contract.SessionCompleted}
	ended.Result = resultFor(ended, r, set)
	b, err := json.Marshal(ended)
	if err != nil || len(b) > MaxOutbound-4096 {
		t.Fatalf("%d bytes (%v), want at most %d", len(b), err, MaxOutbound-4096)
	}
	arts := ended.Result.Artifacts
	if len(arts) != 8 || arts[0].Value == "" || !arts[7].Truncated {
		t.Errorf("%d artifacts, the first of %d bytes, the last cut %v: want all, the first shown, the last cut", len(arts), len(arts[0].Value), arts[7].Truncated)
	}
}

// TestCutValueEscaped: a value is also cut to the room its JSON escapes
// leave (six bytes for a "<"), and the cost returned is what it adds to
// the frame.
func TestCutValueEscaped(t *testing.T) {
	rows := [][]string{{"<A>", "B"}, {"1", "2"}, {"3", "4"}}
	table, _ := json.Marshal(rows)
	for _, tc := range []struct {
		name        string
		typ         contract.ArtifactType
		in          string
		limit, room int
		want        string
		cut         bool
	}{
		{"fits", contract.ArtifactText, "a<b", 10, 8, "a<b", false},
		{"escapes cut text", contract.ArtifactText, "a<b", 10, 7, "a<", true},
		{"at a rune", contract.ArtifactText, "aé<", 10, 3, "aé", true},
		{"a quote", contract.ArtifactText, `a"b`, 10, 3, `a"`, true},
		{"escapes cut a table", contract.ArtifactTable, string(table), 1000, escapedLen(string(table)) - 1, `[["\u003cA\u003e","B"],["1","2"]]`, true},
		{"no row fits", contract.ArtifactTable, string(table), 1000, 5, "[]", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cut, cost := cutValue(tc.typ, tc.in, tc.limit, tc.room)
			if got != tc.want || cut != tc.cut || cost != escapedLen(got) {
				t.Errorf("got %q %v (cost %d, escaped %d), want %q %v", got, cut, cost, escapedLen(got), tc.want, tc.cut)
			}
			if cost > tc.room && got != "[]" {
				t.Errorf("cost %d over the room %d", cost, tc.room)
			}
		})
	}
}

// bigTable is the JSON of a table of n rows of four cells, with a header.
func bigTable(n int) (string, [][]string) {
	rows := [][]string{{"Order", "Date", "Status", "Total"}}
	for i := range n {
		rows = append(rows, []string{fmt.Sprintf("A-%05d", i), "2026-11-26", "shipped <fast>", fmt.Sprintf("€%d.%02d", i, i%100)})
	}
	b, _ := json.Marshal(rows)
	return string(b), rows
}

// TestCutValueLargeTable: a table of 5,000 rows is cut to the longest
// list of its first rows that fits, in one pass (each row encoded once).
func TestCutValueLargeTable(t *testing.T) {
	in, rows := bigTable(5000)
	got, cut, cost := cutValue(contract.ArtifactTable, in, MaxResultValue, math.MaxInt)
	var kept [][]string
	if err := json.Unmarshal([]byte(got), &kept); err != nil || !cut {
		t.Fatalf("cut %v, %v: %.80q", cut, err, got)
	}
	if len(got) > MaxResultValue || cost != escapedLen(got) {
		t.Errorf("%d bytes (cost %d, escaped %d), want at most %d", len(got), cost, escapedLen(got), MaxResultValue)
	}
	// The longest prefix: one more row would not fit.
	next, _ := json.Marshal(rows[:len(kept)+1])
	if len(kept) < 2 || len(next) <= MaxResultValue {
		t.Errorf("kept %d rows; with one more it is %d bytes, within %d", len(kept), len(next), MaxResultValue)
	}
	for i := range kept {
		if strings.Join(kept[i], "|") != strings.Join(rows[i], "|") {
			t.Fatalf("row %d is %q, want %q", i, kept[i], rows[i])
		}
	}
	// And cut by the room its escapes take ("<" and ">" take six bytes).
	got, _, cost = cutValue(contract.ArtifactTable, in, MaxResultValue, 20000)
	if cost > 20000 || cost != escapedLen(got) || jsonLen(got) <= 20000-2000 {
		t.Errorf("cost %d of %d bytes escaped, want nearly 20000 and no more", cost, escapedLen(got))
	}
}

func BenchmarkCutValueLargeTable(b *testing.B) {
	in, _ := bigTable(5000)
	for b.Loop() {
		cutValue(contract.ArtifactTable, in, MaxResultValue, maxEndedFrame)
	}
}

// TestResultDropsArtifacts: artifacts whose fields alone (long page
// addresses, escaped six times over) do not fit in a frame are dropped
// and counted, and the session.ended frame is still under the limit.
func TestResultDropsArtifacts(t *testing.T) {
	long := "https://shop.example/?q=" + strings.Repeat("<", 2000)
	var r session.Result
	for i := range 200 {
		r.Artifacts = append(r.Artifacts, contract.Artifact{ID: fmt.Sprint("a", i), Type: contract.ArtifactLink, Value: long, SourceURL: long})
	}
	set, _ := secrets.NewBoundSet(nil)
	ended := EndedEvent{Session: "s", Status: contract.SessionCompleted, Summary: strings.Repeat("<", 2000)}
	ended.Result = resultFor(ended, r, set)
	b, err := json.Marshal(ended)
	if err != nil || len(b) > maxEndedFrame {
		t.Fatalf("%d bytes (%v), want at most %d", len(b), err, maxEndedFrame)
	}
	res := ended.Result
	if res.Omitted == 0 || len(res.Artifacts)+res.Omitted != 200 || len(res.Artifacts) == 0 {
		t.Errorf("%d artifacts kept, %d dropped; want some of each, 200 in all", len(res.Artifacts), res.Omitted)
	}
	if a := res.Artifacts[0]; a.ID != "a0" || a.SourceURL == "" || a.Value == "" {
		t.Errorf("the first artifact %+v, want it with its page and value", a)
	}
	if !strings.Contains(string(b), fmt.Sprintf(`"omittedArtifacts":%d`, res.Omitted)) {
		t.Errorf("the frame does not count the dropped artifacts")
	}
}

package evidence

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/schemas"
)

// catalogueObservation is an observation of the session benchmark's
// catalogue page (2,000 interactive elements: buttons, links, quantity
// fields, labelled icons): about 380 KB of JSON without its snapshot.
func catalogueObservation() contract.Observation {
	const n = 2000
	var text strings.Builder
	o := testObservation(1, "<h1>Catalogue</h1>")
	o.Affordances = make([]contract.Affordance, 0, n)
	for i := 0; i < n; i++ {
		var a contract.Affordance
		switch i % 5 {
		case 0:
			a = contract.Affordance{Selector: fmt.Sprintf("#buy-%d", i), Role: "button", Text: fmt.Sprintf("Buy item %d", i), ActionHint: contract.HintClick}
		case 1:
			a = contract.Affordance{Selector: fmt.Sprintf(`[data-testid="item-link-%d"]`, i), Role: "link", Text: fmt.Sprintf("Item %d details", i), ActionHint: contract.HintClick}
		case 2:
			a = contract.Affordance{Selector: fmt.Sprintf(`input[name="qty-%d"]`, i), Role: "textbox", Text: fmt.Sprintf("Quantity of item %d", i), ActionHint: contract.HintType}
		case 3:
			a = contract.Affordance{Selector: fmt.Sprintf(`#catalogue > span:nth-of-type(%d)`, i), Role: "button", Text: fmt.Sprintf("Favourite item %d ♥", i), ActionHint: contract.HintClick}
		default:
			a = contract.Affordance{Selector: fmt.Sprintf(`#catalogue > div.row:nth-of-type(%d) > button`, i), Role: "button", Text: fmt.Sprintf("Compare %d", i), ActionHint: contract.HintClick}
		}
		o.Affordances = append(o.Affordances, a)
		fmt.Fprintf(&text, "%s\n", a.Text)
	}
	for text.Len() < 160<<10 {
		text.WriteString("Catalogue: 2000 items, prices in € and ¥, \"quoted\" names\tand tabs.\n")
	}
	o.DOMText = text.String()
	return o
}

// BenchmarkObservation measures what recording an observation costs the
// writer in CPU on the catalogue page: prepare is the encoding, masking,
// validation and checks of the record, and record is all of
// Writer.Observation with a 200 KiB snapshot (also the snapshot's digest
// and checks, and both files).
func BenchmarkObservation(b *testing.B) {
	obs := catalogueObservation()
	plain, withSecrets := benchMaskers(b)
	digest, err := ParseHash(obs.State.DOMHash)
	if err != nil {
		b.Fatal(err)
	}
	obs.DOMSnapshot = ""
	for _, m := range []struct {
		name string
		m    *masker
	}{{"no-secrets", plain}, {"secrets", withSecrets}} {
		b.Run("prepare/"+m.name, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for i := 0; i < b.N; i++ {
				canon, r, _, err := prepareRecord(string(schemas.KindObservation), obs, m.m)
				if err != nil {
					b.Fatal(err)
				}
				if err := checkObservation(r, testSession, digest, nil, false); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(canon)))
			}
		})
	}
	b.Run("record", func(b *testing.B) {
		w, err := Create(b.TempDir(), testManifest(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		o := catalogueObservation()
		var page strings.Builder
		for i := 0; page.Len() < 200<<10; i++ {
			fmt.Fprintf(&page, `<a href="#item-%d" data-testid="item-link-%d">Item %d details</a><span role="button" aria-label="Favourite item %d">♥</span>`, i, i, i, i)
		}
		o.DOMSnapshot, o.State.DOMHash = page.String(), ""
		b.ReportAllocs()
		b.ResetTimer()
		defer reportCPU(b)()
		for i := 0; i < b.N; i++ {
			if err := w.Observation(i, o); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// reportCPU starts counting the process's CPU time (all threads, the
// garbage collector's included) and returns the function that reports it
// per operation as cpu-ms/op: on a loaded machine, a steadier measure of
// the cost than the wall time.
func reportCPU(b *testing.B) func() {
	c0 := cpuTime()
	return func() {
		b.ReportMetric(float64(cpuTime()-c0)/1e6/float64(b.N), "cpu-ms/op")
	}
}

// benchMaskers returns the two masker setups of the writer's benchmarks:
// no secrets, and three.
func benchMaskers(b *testing.B) (plain, withSecrets *masker) {
	b.Helper()
	plain, err := newMasker(nil)
	if err != nil {
		b.Fatal(err)
	}
	withSecrets, err = newMasker(map[string]string{"api": "sk-live-0123456789", "pin": "4242", "pw": "hunter2!"})
	if err != nil {
		b.Fatal(err)
	}
	return plain, withSecrets
}

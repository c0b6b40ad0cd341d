package evidence

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aegis-run/aegis/contract"
)

// The benchmarks of BENCHMARKS.md ("## Evidence"). The realistic bundle:
// 30 steps, each an observation with a 256 KiB DOM snapshot, 16 KiB of text
// and 60 affordances, a decision, an action and two events; 5 screenshots
// of 200 KiB; 5 extracted artifacts; signed.

// htmlish returns n bytes of HTML-like text in which about one byte in a
// hundred is part of a non-ASCII character (accented Latin, euro signs),
// as in a European-language page.
func htmlish(r *rand.Rand, n int) string {
	return markup(r, n, 1)
}

// cjkish returns n bytes of HTML-like text whose text nodes are Japanese:
// about a third of the bytes are non-ASCII, the worst case for the UTF-8
// check of the snapshot.
func cjkish(r *rand.Rand, n int) string {
	return markup(r, n, 35)
}

// visibleText returns the text of markup, as a driver normalizes it: the
// tags dropped, one line per element, at most 16 KiB.
func visibleText(markup string) string {
	var b strings.Builder
	in := false
	for _, c := range markup {
		switch {
		case c == '<':
			in = true
		case c == '>':
			in = false
			b.WriteByte('\n')
		case !in && c != '"' && c != '\n':
			b.WriteRune(c)
		}
		if b.Len() >= 16<<10 {
			break
		}
	}
	return strings.ToValidUTF8(b.String(), "")
}

// markup returns n bytes of HTML-like text in which about pct percent of
// the bytes belong to non-ASCII characters.
func markup(r *rand.Rand, n, pct int) string {
	ascii := []string{"<div class=\"row item\">", "</div>", "<span class=\"price\">", "</span>", "Pricing", "Pro", "plan",
		"monthly", "<a href=\"/products/", "\">", "</a>", "the", "and", "\n  ", "<li data-id=\"42\">", "</li>", "features"}
	other := []string{"€20", "naïve", "café", "日本語の", "価格表", "月額プラン", "詳しく"}
	var b strings.Builder
	nonASCII := 0
	for b.Len() < n {
		if nonASCII*100 < b.Len()*pct {
			w := other[r.IntN(len(other))]
			for _, c := range []byte(w) {
				if c >= 0x80 {
					nonASCII++
				}
			}
			b.WriteString(w)
		} else {
			b.WriteString(ascii[r.IntN(len(ascii))])
		}
		b.WriteByte(' ')
	}
	return strings.ToValidUTF8(b.String()[:n], "")
}

func realisticObservation(r *rand.Rand, step int, text func(*rand.Rand, int) string) contract.Observation {
	snap := text(r, 256<<10)
	o := testObservation(step, snap)
	o.DOMText = visibleText(snap)
	o.Affordances = nil
	for i := 0; i < 60; i++ {
		o.Affordances = append(o.Affordances, contract.Affordance{Selector: fmt.Sprintf("#item-%d > a.link", i), Role: "link", Text: fmt.Sprintf("Item %d details", i), ActionHint: contract.HintClick})
	}
	return o
}

// randomImage returns a PNG header followed by n random bytes (only the
// header is ever parsed).
func randomImage(r *rand.Rand, n int) []byte {
	b := testPNG(8, 8)
	extra := make([]byte, n)
	for i := range extra {
		extra[i] = byte(r.Uint32())
	}
	return append(b, extra...)
}

func buildRealistic(b testing.TB, root string) string { return buildBundleOf(b, root, htmlish) }

func buildBundleOf(b testing.TB, root string, text func(*rand.Rand, int) string) string {
	r := rand.New(rand.NewPCG(3, 4))
	w, err := Create(root, testManifest(), Options{Clock: fixedClock()})
	if err != nil {
		b.Fatal(err)
	}
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(w.Event(contract.StreamEvent{Type: contract.EventSessionStarted, ComputerUseSessionID: testSession, Timestamp: "2026-01-23T10:15:00Z"}))
	must(w.Plan(contract.Plan{Goal: "g", Steps: []contract.PlanStep{{ID: "s1", Description: "d", SuccessCriteria: "c"}}}))
	for s := 0; s < 30; s++ {
		must(w.Observation(s, realisticObservation(r, s, text)))
		a := contract.Action{ID: fmt.Sprintf("a%d", s), Type: contract.ActClick, Reason: "click the next item", PolicyTags: []string{"nav"}, Selector: "#item-3 > a.link"}
		must(w.Decision(decision(fmt.Sprint("d", s), a, contract.ResultAllowed)))
		must(w.Action(a, result(a, true)))
		must(w.Event(contract.StreamEvent{Type: contract.EventAction, ActionID: a.ID, ActionType: a.Type, RiskLevel: contract.RiskLow, Summary: "clicked", Timestamp: "2026-01-23T10:15:00Z"}))
		must(w.Event(contract.StreamEvent{Type: contract.EventScreenshot, URL: ptr("https://example.com/p"), Timestamp: "2026-01-23T10:15:00Z"}))
		if s%6 == 5 {
			id := fmt.Sprintf("shot-%d", s)
			_, err := w.Image(id, randomImage(r, 200<<10), ImageMeta{SourceURL: "https://example.com/p", ActionID: a.ID})
			must(err)
			must(w.Artifact(contract.Artifact{ID: fmt.Sprintf("art-%d", s), Type: contract.ArtifactText, Value: text(r, 2048), SourceURL: "https://example.com/p"}))
		}
	}
	if _, err := w.Seal(context.Background(), contract.SessionCompleted, time.Now(), NewEd25519Signer(testKey())); err != nil {
		b.Fatal(err)
	}
	return w.Dir()
}

func ptr[T any](v T) *T { return &v }

// bundleBytes returns every file of a bundle concatenated: what plain
// SHA-256 hashes in the comparison.
func bundleBytes(b testing.TB, dir string) []byte {
	var all bytes.Buffer
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			f, _ := os.ReadFile(p)
			all.Write(f)
		}
		return err
	})
	return all.Bytes()
}

// BenchmarkVerify measures verify over a realistic bundle on disk, and
// plain SHA-256 over the same bytes in the same run: the metric x-sha256
// is verify's throughput as a fraction of SHA-256's.
func BenchmarkVerify(b *testing.B) {
	b.Run("latin", func(b *testing.B) { benchVerify(b, buildBundleOf(b, b.TempDir(), htmlish)) })
	b.Run("cjk", func(b *testing.B) { benchVerify(b, buildBundleOf(b, b.TempDir(), cjkish)) })
}

func benchVerify(b *testing.B, dir string) {
	all := bundleBytes(b, dir)
	ctx := context.Background()
	opts := VerifyOptions{PubKey: testPub()}
	if _, err := Verify(ctx, dir, opts); err != nil {
		b.Fatal(err)
	}
	// Alternate the two in rounds so that both see the same machine.
	// Wall time is what a user waits; CPU time (all threads, from
	// getrusage) is what the work costs, whatever else the machine runs.
	var tVerify, tSHA, cVerify, cSHA time.Duration
	b.SetBytes(int64(len(all)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0, c0 := time.Now(), cpuTime()
		if _, err := Verify(ctx, dir, opts); err != nil {
			b.Fatal(err)
		}
		t1, c1 := time.Now(), cpuTime()
		sha256.Sum256(all)
		tVerify += t1.Sub(t0)
		tSHA += time.Since(t1)
		cVerify += c1 - c0
		cSHA += cpuTime() - c1
	}
	b.StopTimer()
	mb := float64(len(all)) * float64(b.N) / 1e6
	b.ReportMetric(mb/tVerify.Seconds(), "verify-MB/s")
	b.ReportMetric(mb/tSHA.Seconds(), "sha256-MB/s")
	b.ReportMetric(tSHA.Seconds()/tVerify.Seconds(), "x-sha256")
	b.ReportMetric(cSHA.Seconds()/cVerify.Seconds(), "cpu-x-sha256")
}

// cpuTime returns the CPU time the process has used, all threads.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAppend measures the cost of appending one record and its
// ledger entry, by kind (SyncOnSeal: no fsync per record).
func BenchmarkAppend(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	obs := realisticObservation(r, 0, htmlish)
	img := randomImage(r, 200<<10)
	nav := contract.Action{ID: "a1", Type: contract.ActNavigate, Reason: "open", PolicyTags: []string{"nav"}, URL: "https://example.com/"}
	cases := []struct {
		name  string
		bytes int
		do    func(w *Writer, i int) error
	}{
		{"event", 0, func(w *Writer, i int) error {
			return w.Event(contract.StreamEvent{Type: contract.EventAction, ActionID: "a1", ActionType: contract.ActClick, RiskLevel: contract.RiskLow, Summary: "clicked", Timestamp: "2026-01-23T10:15:00Z"})
		}},
		{"decision", 0, func(w *Writer, i int) error { return w.Decision(decision("d", nav, contract.ResultAllowed)) }},
		{"action", 0, func(w *Writer, i int) error {
			w.Decision(decision("d", nav, contract.ResultAllowed))
			return w.Action(nav, result(nav, true))
		}},
		{"observation-256KiB", len(obs.DOMSnapshot) + len(obs.DOMText), func(w *Writer, i int) error { return w.Observation(i, obs) }},
		{"image-200KiB", len(img), func(w *Writer, i int) error { _, err := w.Image(fmt.Sprint("img-", i), img, ImageMeta{}); return err }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			w, err := Create(b.TempDir(), testManifest(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			if c.bytes > 0 {
				b.SetBytes(int64(c.bytes))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := c.do(w, i); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPack measures packing the realistic bundle.
func BenchmarkPack(b *testing.B) {
	dir := buildRealistic(b, b.TempDir())
	all := bundleBytes(b, dir)
	b.SetBytes(int64(len(all)))
	var out int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cw := &countWriter{}
		if err := Pack(context.Background(), dir, cw); err != nil {
			b.Fatal(err)
		}
		out = cw.n
	}
	b.ReportMetric(float64(out)/float64(len(all)), "ratio")
}

// BenchmarkUnpack measures unpacking it.
func BenchmarkUnpack(b *testing.B) {
	dir := buildRealistic(b, b.TempDir())
	var packed bytes.Buffer
	if err := Pack(context.Background(), dir, &packed); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(bundleBytes(b, dir))))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out := filepath.Join(b.TempDir(), "u")
		if err := Unpack(context.Background(), bytes.NewReader(packed.Bytes()), out, UnpackOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

var _ = io.Discard

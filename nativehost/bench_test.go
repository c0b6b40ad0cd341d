package nativehost_test

import (
	"fmt"
	"sort"
	"testing"

	"github.com/aegis-run/aegis/nativehost/nativehosttest"
)

// pingJS runs, in the extension's service worker, n round trips of a ping
// of size bytes to the real host (a fresh connectNative, hello, then the
// pings), and returns each round trip in ms (three warm-up ones left
// out), then the time from connectNative to the hello's answer.
const pingJS = `async ([size, n]) => {
  const t0 = performance.now();
  const port = chrome.runtime.connectNative('run.aegis.host');
  let next = 1;
  const pending = new Map();
  port.onMessage.addListener((m) => {
    const p = pending.get(m.id);
    if (p && m.kind === 'response') { pending.delete(m.id); p(m); }
  });
  const call = (method, params) => new Promise((resolve) => {
    const id = next++;
    pending.set(id, resolve);
    port.postMessage({ v: 1, kind: 'request', id, method, params });
  });
  await call('hello', { protocol: [1], extension: 'bench' });
  const connect = performance.now() - t0;
  const data = 'x'.repeat(size);
  const out = [];
  for (let i = 0; i < n + 3; i++) {
    const s = performance.now();
    const r = await call('ping', { data });
    const d = performance.now() - s;
    if (!r.result || r.result.data.length !== size) throw new Error('bad echo');
    if (i >= 3) out.push(d);
  }
  port.disconnect();
  out.push(connect);
  return out;
}`

// BenchmarkRoundTrip measures the native messaging round trip from the
// extension's service worker to a freshly built aegis host and back (the
// host answers ping), for 100 B and 500 KB payloads, and the time from
// connectNative to the answer of hello (the host process started):
//
//	go test ./nativehost/ -run '^$' -bench RoundTrip -benchtime 200x
func BenchmarkRoundTrip(b *testing.B) {
	br := nativehosttest.Start(b, nativehosttest.Options{Binary: aegisBinary(b)})
	for _, size := range []int{100, 500 << 10} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			v, err := br.Worker.Evaluate(pingJS, []any{size, b.N})
			if err != nil {
				b.Fatal(err)
			}
			raw, _ := v.([]any)
			if len(raw) != b.N+1 {
				b.Fatalf("%d timings", len(raw))
			}
			ms := make([]float64, 0, b.N)
			for _, x := range raw[:b.N] {
				ms = append(ms, num(x))
			}
			sort.Float64s(ms)
			b.ReportMetric(ms[len(ms)/2], "med-ms")
			b.ReportMetric(ms[min(len(ms)-1, len(ms)*95/100)], "p95-ms")
			b.ReportMetric(num(raw[b.N]), "connect-ms")
		})
	}
}

func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	}
	return 0
}

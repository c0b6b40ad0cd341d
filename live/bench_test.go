package live

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// BenchmarkDelivery measures the latency from the session's Publish to a
// client's ReadMessage returning the event, over loopback WebSockets, with
// 1 and 10 clients (the time until the last of them has it). One event is
// in flight at a time, so ns/op is the latency; p50 and p95 are reported.
//
//	go test ./live/ -run '^$' -bench Delivery -benchtime 2000x
func BenchmarkDelivery(b *testing.B) {
	for _, clients := range []int{1, 10} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			srv, err := NewServer(Options{})
			if err != nil {
				b.Fatal(err)
			}
			fs := newFakeSession("s-bench")
			srv.Add(fs, SessionOptions{})
			hs := serve(b, srv)
			conns := make([]*websocket.Conn, clients)
			for i := range conns {
				c, _, err := websocket.DefaultDialer.Dial(streamURL(hs, fs.id), map[string][]string{"Authorization": {"Bearer " + srv.Token()}})
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				conns[i] = c
			}
			got := make(chan time.Time, clients)
			for _, c := range conns {
				go func() {
					for {
						if _, _, err := c.ReadMessage(); err != nil {
							return
						}
						got <- time.Now()
					}
				}()
			}
			ev := actionEvent(1)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if err := fs.bus.Publish(ev); err != nil {
					b.Fatal(err)
				}
				var last time.Time
				for range clients {
					last = <-got
				}
				lat = append(lat, last.Sub(t0))
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds()), "p95-µs")
			fs.bus.Close()
		})
	}
}

package session_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/aegis-run/aegis/contract"
	"github.com/aegis-run/aegis/live"
	"github.com/aegis-run/aegis/session"
)

// BenchmarkSessionStepWatchers measures a session's step time on the demo
// shop's order form (40 Navigator steps, a model that answers at once) with
// 0 and with 10 live-channel watchers reading every event over loopback
// WebSockets. The two cases alternate within one run so that machine noise
// falls on both alike; ms/step is the step time (the seal excluded).
//
//	go test ./session/ -run '^$' -bench SessionStepWatchers -benchtime 4x
func BenchmarkSessionStepWatchers(b *testing.B) {
	s := newSite(b)
	url := s.URL + "/form"
	per := map[int][]float64{}
	for i := 0; i < b.N; i++ {
		for _, watchers := range []int{0, 10} {
			per[watchers] = append(per[watchers], watchedSession(b, url, watchers))
		}
	}
	for _, w := range []int{0, 10} {
		b.ReportMetric(median(per[w]), fmt.Sprintf("ms/step-%dw", w))
	}
	b.ReportMetric(median(per[10])/median(per[0]), "ratio-10w/0w")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// watchedSession runs one session of 40 steps with n watchers and returns
// its step time in milliseconds; every watcher must receive every event.
func watchedSession(b *testing.B, url string, n int) float64 {
	const steps = 40
	cfg, _ := benchConfig(b, url, steps, formAction)
	sess, err := session.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := live.NewServer(live.Options{})
	if err != nil {
		b.Fatal(err)
	}
	srv.Add(sess, live.SessionOptions{})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	counts := make(chan int, n)
	stream := "ws" + strings.TrimPrefix(hs.URL, "http") + "/v1/sessions/" + sess.ID() + "/stream"
	for range n {
		c, _, err := websocket.DefaultDialer.Dial(stream, map[string][]string{"Authorization": {"Bearer " + srv.Token()}})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		go func() {
			k := 0
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					counts <- k
					return
				}
				k++
			}
		}()
	}
	res, err := sess.Run(context.Background())
	if err != nil || res.Status != contract.SessionCompleted {
		b.Fatalf("status %s err %v", res.Status, err)
	}
	want := len(sess.Bus().History())
	for range n {
		if got := <-counts; got != want {
			b.Fatalf("a watcher got %d events, want %d", got, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Close(ctx)
	return float64((res.Timings.Total - res.Timings.Seal).Microseconds()) / 1000 / float64(res.Timings.Steps)
}

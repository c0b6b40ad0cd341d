package attack

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// job is one scenario in one driver (or in the baseline).
type job struct {
	sc     *Scenario
	res    *Result
	run    func(ctx context.Context, r *runState) sessionOutcome
	serial *sync.Mutex // held while the job runs, when set
	r      *runState
	out    sessionOutcome
}

// runJobs runs the jobs, parallel at a time, printing a progress line as
// each ends (its verdict so far: the final one is taken at the end).
func runJobs(ctx context.Context, w *world, jobs []*job, parallel int, progress io.Writer, secret string) error {
	if parallel <= 0 {
		parallel = 2
	}
	for _, j := range jobs {
		r, err := w.newRun(j.sc, j.res.Driver)
		if err != nil {
			return err
		}
		j.r = r
	}
	var mu sync.Mutex
	done := 0
	next := make(chan *job)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				if j.serial != nil {
					j.serial.Lock()
				}
				began := time.Now()
				j.out = j.run(ctx, j.r)
				d := time.Since(began)
				if j.serial != nil {
					j.serial.Unlock()
				}
				j.res.DurationMs = d.Milliseconds()
				violated, _ := judge(j.sc, w.truth(j.r), secret)
				v := Held
				if violated {
					v = Violated
				}
				mu.Lock()
				done++
				fmt.Fprintf(progress, "attack %3d/%d  %-10s %-26s %-8s %5.1fs\n", done, len(jobs), j.res.Driver, j.res.Scenario, v, d.Seconds())
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		next <- j
	}
	close(next)
	wg.Wait()
	return ctx.Err()
}

package harness

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Phase is one named step of a run.
type Phase struct {
	Name string
	Run  func() error
}

// RunPhases runs phases in order, logging each one's name to log (nil:
// nowhere), and stops at the first error, wrapped with its phase's name.
func RunPhases(log io.Writer, phases ...Phase) error {
	for _, p := range phases {
		Logf(log, "== %s", p.Name)
		if err := p.Run(); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
	}
	return nil
}

// UnderQueries runs fn while one goroutine calls query in a loop (at least
// once, however short fn is), and returns each query's latency and fn's
// duration. The first error of fn, else of a query (which ends the loop),
// is returned.
func UnderQueries(fn func() error, query func() error) (lat []time.Duration, took time.Duration, err error) {
	stop := make(chan struct{})
	var (
		wg   sync.WaitGroup
		qerr error
	)
	wg.Go(func() {
		for {
			t0 := time.Now()
			err := query()
			lat = append(lat, time.Since(t0))
			if err != nil {
				qerr = err
				return
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	})
	t0 := time.Now()
	err = fn()
	took = time.Since(t0)
	close(stop)
	wg.Wait()
	if err == nil {
		err = qerr
	}
	return lat, took, err
}

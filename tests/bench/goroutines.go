// goroutines.go - for make bench only: a Go program with N goroutines
// (default 100,000) parked in four distinct places, then killed by its own
// SIGABRT under GOTRACEBACK=crash so that the kernel writes its core.
//
// The goroutines wait in a channel receive (N*4/10), time.Sleep (N*2/10),
// sync.Mutex.Lock on a mutex main holds (N*2/10) and a select on two
// channels (the rest).  Once every one has started, it prints its own
// record, one line per place ("parked chan_receive 40000"), then raises
// SIGABRT on itself.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

var (
	never   = make(chan int)
	never2  = make(chan int)
	mu      sync.Mutex
	started sync.WaitGroup
)

//go:noinline
func waitChan() {
	started.Done()
	<-never
}

//go:noinline
func waitSleep() {
	started.Done()
	time.Sleep(24 * time.Hour)
}

//go:noinline
func waitMutex() {
	started.Done()
	mu.Lock()
}

//go:noinline
func waitSelect() {
	started.Done()
	select {
	case <-never:
	case <-never2:
	}
}

func main() {
	n := 100000
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	mu.Lock()
	counts := []struct {
		name string
		n    int
		f    func()
	}{
		{"chan_receive", n * 4 / 10, waitChan},
		{"sleep", n * 2 / 10, waitSleep},
		{"mutex", n * 2 / 10, waitMutex},
	}
	rest := n
	for _, c := range counts {
		rest -= c.n
	}
	counts = append(counts, struct {
		name string
		n    int
		f    func()
	}{"select", rest, waitSelect})
	for _, c := range counts {
		started.Add(c.n)
		for i := 0; i < c.n; i++ {
			go c.f()
		}
	}
	started.Wait()
	// Done is called just before each one parks: give the last ones time to.
	for i := 0; i < 50; i++ {
		runtime.Gosched()
	}
	time.Sleep(500 * time.Millisecond)
	for _, c := range counts {
		fmt.Printf("parked %s %d\n", c.name, c.n)
	}
	os.Stdout.Sync()
	syscall.Kill(os.Getpid(), syscall.SIGABRT)
	time.Sleep(time.Hour)
}

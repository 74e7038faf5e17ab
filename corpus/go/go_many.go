// go_many.go - a Go program of 100,000 goroutines (the `make bench` Go row):
// forty kinds of stack (ten recursion depths, each parked on a channel
// receive, a select, a mutex or a sleep), then a nil-map panic on main.
// With GOTRACEBACK=crash the runtime writes every goroutine to stderr and
// aborts with a core (corpus/go/make-go-cores).  Its argument is the count.
// MODES: many
// VARIANTS: default
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

var (
	block   = make(chan int)
	mu      sync.Mutex
	started sync.WaitGroup
	sink    map[string]int
)

//go:noinline
func park(kind, depth int) {
	if depth > 0 {
		park(kind, depth-1)
		return
	}
	started.Done()
	switch kind {
	case 0:
		<-block
	case 1:
		select {
		case <-block:
		case <-time.After(1000 * time.Hour):
		}
	case 2:
		mu.Lock()
	default:
		time.Sleep(1000 * time.Hour)
	}
}

func main() {
	n := 100000
	if len(os.Args) > 2 {
		n, _ = strconv.Atoi(os.Args[2])
	}
	mu.Lock()
	for i := 0; i < n; i++ {
		started.Add(1)
		go park(i%4, (i/4)%10)
	}
	started.Wait()
	time.Sleep(500 * time.Millisecond)
	fmt.Println("ready")
	sink["x"] = 1
}

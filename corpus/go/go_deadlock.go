// go_deadlock.go - a Go program whose goroutines all block on one another,
// for coreq's goroutine reader and Go crash buckets (unwind/async/go.c,
// dist/coreq.rules): main waits on a WaitGroup that two workers never
// release, each worker waits for a channel the other should send on, and
// the runtime reports "fatal error: all goroutines are asleep - deadlock!"
// (with GOTRACEBACK=crash: every goroutine to stderr, then a core).
// MODES: deadlock
package main

import (
	"fmt"
	"sync"
)

var (
	ping = make(chan int)
	pong = make(chan int)
	wg   sync.WaitGroup
)

//go:noinline
func pinger() {
	defer wg.Done()
	<-pong
	ping <- 1
}

//go:noinline
func ponger() {
	defer wg.Done()
	<-ping
	pong <- 1
}

func main() {
	wg.Add(2)
	go pinger()
	go ponger()
	fmt.Println("ready")
	wg.Wait()
}

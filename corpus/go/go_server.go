// go_server.go - a Go server of about 26 goroutines parked in the ways a
// real one parks (channel receive and send, a mutex, time.Sleep, select, a
// WaitGroup, a sync.Cond, network accept and read), for coreq's goroutine
// reader (unwind/async/go.c).  It prints one line per goroutine it started
// ("G <role>") and "ready", then, by its argument:
//   nilmap  assigns to a nil map on the main goroutine (a runtime panic);
//   index   indexes a slice out of range;
//   nilptr  dereferences a nil pointer (a fault: runtime.sigpanic);
//   hang    sleeps until killed from outside (SIGABRT: a hang).
// Run with GOTRACEBACK=crash so the runtime dumps every goroutine to stderr
// (the oracle) and aborts with a core (corpus/go/make-go-cores).
// MODES: nilmap hang index nilptr
package main

import (
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

var (
	recvCh  = make(chan int)
	sendCh  = make(chan int)
	selA    = make(chan int)
	selB    = make(chan string)
	mu      sync.Mutex
	wg      sync.WaitGroup
	condMu  sync.Mutex
	cond    = sync.NewCond(&condMu)
	started sync.WaitGroup
	sink    map[string]int
)

//go:noinline
func chanReceiver(i int) {
	started.Done()
	v := <-recvCh
	fmt.Println("never", i, v)
}

//go:noinline
func chanSender(i int) {
	started.Done()
	sendCh <- i
}

//go:noinline
func mutexWaiter(i int) {
	started.Done()
	mu.Lock()
	fmt.Println("never", i)
	mu.Unlock()
}

//go:noinline
func sleeper(i int) {
	started.Done()
	time.Sleep(time.Duration(1000+i) * time.Hour)
}

//go:noinline
func selecter(i int) {
	started.Done()
	select {
	case v := <-selA:
		fmt.Println("never", i, v)
	case s := <-selB:
		fmt.Println("never", i, s)
	}
}

//go:noinline
func groupWaiter(i int) {
	started.Done()
	wg.Wait()
	fmt.Println("never", i)
}

//go:noinline
func condWaiter(i int) {
	condMu.Lock()
	started.Done()
	cond.Wait()
	condMu.Unlock()
}

//go:noinline
func handleConn(c net.Conn) {
	started.Done()
	buf := make([]byte, 64)
	_, _ = c.Read(buf)
}

//go:noinline
func acceptLoop(l net.Listener) {
	started.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go handleConn(c)
	}
}

//go:noinline
func clientReader(c net.Conn) {
	started.Done()
	buf := make([]byte, 64)
	_, _ = c.Read(buf)
}

func spawn(role string, n int, f func(int)) {
	for i := 0; i < n; i++ {
		started.Add(1)
		fmt.Println("G", role)
		go f(i)
	}
}

//go:noinline
func crashNilMap() {
	sink["x"] = 1
}

//go:noinline
func crashIndex(i int) int {
	s := []int{1, 2, 3}
	return s[i]
}

type node struct{ next *node; v int }

//go:noinline
func crashNilPtr(n *node) int {
	return n.next.v
}

func main() {
	mode := "hang"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	mu.Lock() // held by main for ever: mutexWaiter blocks
	wg.Add(1) // never Done: groupWaiter blocks
	spawn("chan-recv", 3, chanReceiver)
	spawn("chan-send", 3, chanSender)
	spawn("mutex", 3, mutexWaiter)
	spawn("sleep", 3, sleeper)
	spawn("select", 3, selecter)
	spawn("waitgroup", 3, groupWaiter)
	spawn("cond", 2, condWaiter)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	started.Add(1)
	fmt.Println("G accept")
	go acceptLoop(l)
	for i := 0; i < 2; i++ {
		started.Add(2) // before the dial: the server's handler may start first
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("G conn-read")
		fmt.Println("G client-read")
		go clientReader(c)
	}
	started.Wait()
	time.Sleep(200 * time.Millisecond) // let every goroutine park
	fmt.Println("G main")
	fmt.Println("ready")
	switch mode {
	case "nilmap":
		crashNilMap()
	case "index":
		fmt.Println(crashIndex(len(os.Args) + 5))
	case "nilptr":
		fmt.Println(crashNilPtr(&node{}))
	}
	time.Sleep(1000 * time.Hour)
}

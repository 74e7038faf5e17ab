// go_crash: one Go program that dies in a known way per mode (issue 48's
// crash signatures).  Run with GOTRACEBACK=crash so the runtime ends with
// SIGABRT and the kernel writes a core.  Before it dies the program writes
// its own record of the crash site to stderr, one line:
//
//	crash-site: FUNCTION FILE:LINE
//
// FUNCTION is the frame that calls into the runtime's panic (the panic
// site), as runtime.FuncForPC spells it: the first frame of the crash's
// signature.  The deadlock's site is the runtime's own (runtime.checkdead
// calls throw on a thread's system stack): its record is the Go dump.
//
// Modes:
//
//	nilmap    assignment to entry in nil map (runtime.mapassign panics)
//	index     index out of range (runtime.goPanicIndex), in a generic function
//	nilptr    nil pointer dereference: SIGSEGV turned into runtime.sigpanic,
//	          in a closure
//	logfatal  a log.Fatal-style helper: it logs, then panics with the text
//	          (log.Fatal itself calls os.Exit(1): no core, so no bucket)
//	deadlock  every goroutine asleep: "fatal error: all goroutines are
//	          asleep - deadlock!" (runtime.throw from runtime.checkdead)
//	hang      a server whose worker blocks in a read that never returns;
//	          writes "ready" to ./ready, then waits to be killed (SIGABRT
//	          from outside)
//	mapwrites goroutines write one map at once: "fatal error: concurrent
//	          map writes" (runtime.fatal from runtime.mapassign_faststr, on
//	          the writing goroutine's stack)
//	overflow  unbounded recursion under a 256 KiB stack limit: "fatal
//	          error: stack overflow" (runtime.throw from runtime.newstack,
//	          on the thread's system stack)
package main

import (
	"fmt"
	"log"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
)

// recordSite writes the caller's function and line: the crash site, just
// before the crash.
//
//go:noinline
func recordSite() {
	pc, file, line, _ := runtime.Caller(1)
	fmt.Fprintf(os.Stderr, "crash-site: %s %s:%d\n", runtime.FuncForPC(pc).Name(), file, line)
}

type record struct {
	name  string
	count int
}

//go:noinline
func assignNilMap(key string) {
	var counts map[string]int
	recordSite()
	counts[key] = 1
}

// pick is generic: Go names its instantiation main.pick[...].
//
//go:noinline
func pick[T any](values []T, i int) T {
	recordSite()
	return values[i]
}

//go:noinline
func indexOutOfRange(i int) int {
	values := make([]int, 3)
	return pick(values, i)
}

//go:noinline
func update(r *record, change func(*record)) {
	change(r)
}

// derefNil's closure (main.derefNil.func1) dereferences the nil record.
//
//go:noinline
func derefNil(r *record) {
	update(r, func(r *record) {
		recordSite()
		r.count++
	})
}

// fatalf logs like log.Fatalf, then panics with the same text so that the
// runtime (GOTRACEBACK=crash) writes a core.
//
//go:noinline
func fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	log.Output(2, msg)
	recordSite()
	panic(msg)
}

//go:noinline
func loadConfig(path string) {
	fatalf("config %s: %v", path, os.ErrNotExist)
}

//go:noinline
func waitForever() {
	ch := make(chan int)
	recordSite()
	<-ch
}

// readForever blocks its thread in read(2) on a pipe nobody writes: the
// goroutine stays on its thread, in the system call.
//
//go:noinline
func readForever(fd int, started *sync.WaitGroup) {
	var buf [1]byte
	started.Done()
	syscall.Read(fd, buf[:])
}

//go:noinline
func serve(ln net.Listener, fd int, started *sync.WaitGroup) {
	go readForever(fd, started)
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		conn.Close()
	}
}

func hang() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		log.Fatal(err)
	}
	var started sync.WaitGroup
	started.Add(1)
	go serve(ln, p[0], &started)
	started.Wait()
	if err := os.WriteFile("ready", []byte("ready\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	select {}
}

// writeMap stores into counts forever; run by several goroutines at once,
// the runtime notices and dies.
//
//go:noinline
func writeMap(counts map[string]int, key string) {
	recordSite()
	for i := 0; ; i++ {
		counts[key] = i
	}
}

func mapWrites() {
	counts := map[string]int{}
	for i := 0; i < 4; i++ {
		go writeMap(counts, "requests")
	}
	select {}
}

// recurse never returns: each call takes a frame of pad until the stack
// limit is reached.
//
//go:noinline
func recurse(depth int) int {
	if depth == 0 {
		recordSite()
	}
	var pad [64]int
	pad[depth%64] = depth
	return recurse(depth+1) + pad[(depth+1)%64]
}

func overflow() {
	debug.SetMaxStack(256 << 10)
	recurse(0)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go_crash nilmap|index|nilptr|logfatal|deadlock|hang|mapwrites|overflow")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "nilmap":
		assignNilMap("requests")
	case "index":
		indexOutOfRange(len(os.Args) + 5)
	case "nilptr":
		derefNil(nil)
	case "logfatal":
		loadConfig("/etc/go_crash.conf")
	case "deadlock":
		waitForever()
	case "hang":
		hang()
	case "mapwrites":
		mapWrites()
	case "overflow":
		overflow()
	default:
		fmt.Fprintf(os.Stderr, "go_crash: unknown mode %q\n", os.Args[1])
		os.Exit(2)
	}
}

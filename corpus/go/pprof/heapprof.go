// heapprof.go - writes a small heap profile to its argument: the input the
// real case pprof-load (corpus/go/make-go-cores) serves with `pprof -http`.
package main

import (
	"os"
	"runtime/pprof"
)

var sink [][]byte

func main() {
	for i := 0; i < 10000; i++ {
		sink = append(sink, make([]byte, 1024+i))
	}
	f, _ := os.Create(os.Args[1])
	pprof.WriteHeapProfile(f)
	f.Close()
}

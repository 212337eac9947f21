// Command chserver runs a loopback ClickHouse server from chDB's libchdb.so, for tests: it
// loads the library without cgo and calls its clickhouse-local entry point
// (chdb_query_cmdline) with listening ports and a query that never ends, so the process
// serves the native and HTTP protocols until it is killed. Data lives under -path and
// survives a kill -9.
//
//	chserver -lib /x/libchdb.so -path /tmp/ch -tcp-port 9000 -http-port 8123
package main

import (
	"flag"
	"fmt"
	"os"
	"unsafe"

	"github.com/ebitengine/purego"
)

// keepAlive is the query that keeps clickhouse-local running: it never ends.
const keepAlive = "SYSTEM START LISTEN QUERIES ALL; " +
	"SELECT sleep(3) FROM system.numbers SETTINGS max_block_size = 1, max_execution_time = 0 FORMAT Null"

func main() {
	lib := flag.String("lib", "", "path of libchdb.so")
	path := flag.String("path", "", "data directory")
	tcp := flag.Int("tcp-port", 0, "native protocol port")
	http := flag.Int("http-port", 0, "HTTP port")
	config := flag.String("config", "", "a server configuration file to load (optional)")
	flag.Parse()
	if *lib == "" || *path == "" || *tcp == 0 || *http == 0 {
		fmt.Fprintln(os.Stderr, "chserver: -lib, -path, -tcp-port and -http-port are required")
		os.Exit(2)
	}
	h, err := purego.Dlopen(*lib, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "chserver: load %s: %v\n", *lib, err)
		os.Exit(1)
	}
	var queryCmdline func(argc int32, argv unsafe.Pointer) unsafe.Pointer
	purego.RegisterLibFunc(&queryCmdline, h, "chdb_query_cmdline")
	args := []string{
		"clickhouse",
		"--path", *path,
		"--listen_host", "127.0.0.1",
		"--tcp_port", fmt.Sprint(*tcp),
		"--http_port", fmt.Sprint(*http),
		"--query", keepAlive,
	}
	if *config != "" {
		args = append(args[:1], append([]string{"--config-file", *config}, args[1:]...)...)
	}
	argv := cStrings(args)
	queryCmdline(int32(len(args)), argv)
	fmt.Fprintln(os.Stderr, "chserver: clickhouse-local returned; the server stopped")
	os.Exit(1)
}

// cStrings returns a NULL-terminated char** of args. The Go heap does not move objects and
// keep holds them for the life of the process, so the library may keep pointers into them.
func cStrings(args []string) unsafe.Pointer {
	ptrs := make([]*byte, len(args)+1)
	for i, a := range args {
		b := append([]byte(a), 0)
		ptrs[i] = &b[0]
	}
	keep = ptrs
	return unsafe.Pointer(&ptrs[0])
}

// keep holds argv for the life of the process.
var keep []*byte

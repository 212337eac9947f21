// Command chserver runs a loopback ClickHouse server from chDB's libchdb.so, for tests
// (internal/chserver starts it; internal/chdb serves): it serves the native and HTTP
// protocols until it is killed. Data lives under -path and survives a kill -9.
//
//	chserver -lib /x/libchdb.so -path /tmp/ch -tcp-port 9000 -http-port 8123
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ytflow/yt-flow/internal/chdb"
)

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
	err := chdb.Serve(*lib, *path, *tcp, *http, *config)
	fmt.Fprintln(os.Stderr, "chserver:", err)
	os.Exit(1)
}

// Package chdb runs a ClickHouse server from chDB's libchdb.so in the calling process. Serve
// loads the library without cgo and calls its clickhouse-local entry point
// (chdb_query_cmdline) with listening ports and a query that never ends, so the process
// serves the native and HTTP protocols on loopback until it is killed; data lives in the
// data directory and survives a kill -9. The library installs signal handlers of its own:
// run it in a process of its own (`yt-flow clickhouse-local`, internal/chserver), never next
// to other work.
package chdb

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"
)

// LibEnv is the environment variable that names libchdb.so.
const LibEnv = "CHDB_LIB"

// Install is how to get the library.
const Install = "npm install --no-save --prefix DIR @chdb/lib-linux-x64-gnu@26.7.3-stable.1; " +
	"export " + LibEnv + "=DIR/node_modules/@chdb/lib-linux-x64-gnu/libchdb.so"

// keepAlive is the query that keeps clickhouse-local running: it never ends.
const keepAlive = "SYSTEM START LISTEN QUERIES ALL; " +
	"SELECT sleep(3) FROM system.numbers SETTINGS max_block_size = 1, max_execution_time = 0 FORMAT Null"

// ErrStopped is returned by Serve when the server stops by itself.
var ErrStopped = errors.New("chdb: clickhouse-local returned; the server stopped")

// Serve runs the server on 127.0.0.1:tcpPort (native protocol) and :httpPort (HTTP) over
// dataDir, with configFile (a ClickHouse server configuration, optional) loaded. It returns
// only on an error.
func Serve(lib, dataDir string, tcpPort, httpPort int, configFile string) error {
	if lib == "" || dataDir == "" || tcpPort <= 0 || httpPort <= 0 {
		return errors.New("chdb: the library, the data directory and both ports are required")
	}
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return fmt.Errorf("chdb: load %s: %w", lib, err)
	}
	var queryCmdline func(argc int32, argv unsafe.Pointer) unsafe.Pointer
	purego.RegisterLibFunc(&queryCmdline, h, "chdb_query_cmdline")
	args := []string{"clickhouse"}
	if configFile != "" {
		args = append(args, "--config-file", configFile)
	}
	args = append(args,
		"--path", dataDir,
		"--listen_host", "127.0.0.1",
		"--tcp_port", fmt.Sprint(tcpPort),
		"--http_port", fmt.Sprint(httpPort),
		"--query", keepAlive,
	)
	queryCmdline(int32(len(args)), cStrings(args))
	return ErrStopped
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

// Command memcount is a user's binary with a deliberately broken process function, for
// e2e's TestTortureBrokenPipelineFails: MemoryCount keeps its counts in process memory
// instead of flow state, so a worker that dies takes them along and its successor counts
// from zero again — output that `yt-flow torture` must find lost and duplicated.
package main

import (
	"fmt"
	"sync"

	"github.com/ytflow/yt-flow/app"
	"github.com/ytflow/yt-flow/flow"
)

var (
	mu     sync.Mutex
	counts = map[string]int64{}
)

// memoryCount emits {hash, key, count} per message, count from the process's memory.
func memoryCount(ctx *flow.Context, msg *flow.Message) error {
	k := ctx.Key()
	if len(k) != 2 {
		return fmt.Errorf("key %v: want [hash, key]", k)
	}
	key := fmt.Sprint(k[1])
	mu.Lock()
	counts[key]++
	n := counts[key]
	mu.Unlock()
	ctx.AddMessage("counts", flow.Row{"hash": k[0], "key": k[1], "count": n})
	return nil
}

func main() {
	flow.Register("MemoryCount", flow.PerMessage(memoryCount))
	app.Main()
}

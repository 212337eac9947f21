package kafka

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testCluster is the broker a test talks to: franz-go's in-process kfake on loopback, or the
// brokers of KAFKA_BROKERS (comma-separated) when it is set. Topics get names unique to the
// test, so a real broker can be shared.
type testCluster struct {
	t       *testing.T
	brokers string
	adm     *kadm.Client
	cl      *kgo.Client
}

var topicSeq atomic.Int64

func newCluster(t *testing.T) *testCluster {
	t.Helper()
	brokers := os.Getenv("KAFKA_BROKERS")
	if brokers == "" {
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		require.NoError(t, err)
		t.Cleanup(c.Close)
		brokers = strings.Join(c.ListenAddrs(), ",")
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return &testCluster{t: t, brokers: brokers, adm: kadm.NewClient(cl), cl: cl}
}

func (c *testCluster) config() *ClientConfig { return &ClientConfig{BootstrapServers: c.brokers} }

func (c *testCluster) resolve(context.Context) (*ClientConfig, error) { return c.config(), nil }

// topic creates a topic with n partitions and a name unique to the test.
func (c *testCluster) topic(n int32) string {
	c.t.Helper()
	name := fmt.Sprintf("t%d-%d", time.Now().UnixNano()%1e9, topicSeq.Add(1))
	resp, err := c.adm.CreateTopic(ctx(c.t), n, 1, nil, name)
	require.NoError(c.t, err)
	require.NoError(c.t, resp.Err)
	return name
}

// produce writes records (non-transactionally) and waits for them.
func (c *testCluster) produce(rs ...*kgo.Record) {
	c.t.Helper()
	require.NoError(c.t, c.cl.ProduceSync(ctx(c.t), rs...).FirstErr())
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// What the external tests (package kafka_test: the conformance suite imports this package
// through connectors/all) use of the internal test helpers.

// TestCluster is a test's broker (see testCluster).
type TestCluster = testCluster

// NewTestCluster starts kfake, or uses KAFKA_BROKERS.
func NewTestCluster(t *testing.T) *TestCluster { return newCluster(t) }

// Brokers is the bootstrap servers list.
func (c *testCluster) Brokers() string { return c.brokers }

// Topic creates a topic with n partitions.
func (c *testCluster) Topic(n int32) string { return c.topic(n) }

// Client is the cluster's producing and admin client (manual partitioning).
func (c *testCluster) Client() *kgo.Client { return c.cl }

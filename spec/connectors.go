package spec

import (
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"go.ytsaurus.tech/yt/go/ypath"

	"github.com/ytflow/yt-flow/yson"
)

const maxInt32 = math.MaxInt32

// sourceParams parses the class parameters of a source; unknown keys are left for Close.
func (p *parser) sourceParams(s *Source, f *yson.Fields) {
	switch s.Class {
	case SourceQueue:
		q := &QueueSourceParams{}
		q.QueuePath = f.RequiredString("queue_path")
		q.ConsumerPath = f.RequiredString("consumer_path")
		p.richPath(q.QueuePath, f.Path("queue_path"))
		p.richPath(q.ConsumerPath, f.Path("consumer_path"))
		q.Finite = f.Bool("finite", false)
		q.TryParseFlowQueueMeta = f.Bool("try_parse_flow_queue_meta", true)
		q.FlowQueueMetaColumn = f.String("flow_queue_meta_column", "flow_queue_meta")
		q.IgnoreMalformedMeta = f.Bool("ignore_malformed_flow_queue_meta", false)
		q.PartitionFilter = p.partitionFilter(f)
		f.Duration("update_info_period", 0)
		f.Float("byte_size_alpha", 0)
		f.Duration("update_partition_count_period", 0)
		f.Duration("update_partition_count_retry_min_backoff", 0)
		s.Queue = q
	case SourceStaticTable:
		st := &StaticTableSourceParams{}
		st.Tables = f.Strings("tables", true)
		st.TablesPath = f.String("tables_path", "")
		st.TableNameFilter = f.String("table_name_filter", "")
		hasTables, hasPath := f.Has("tables"), f.Has("tables_path")
		switch {
		case hasTables && hasPath:
			p.errorf(f.Path("tables_path"), "set either tables or tables_path, not both")
		case !hasTables && !hasPath:
			p.errorf(f.Path("tables"), "required (or tables_path)")
		}
		for _, key := range []string{"event_timestamp_locator", "system_timestamp_locator"} {
			if ln := f.Node(key); ln != nil {
				lf := p.w.Fields(ln, f.Path(key))
				lf.String("attribute", "")
				lf.String("format", "")
				lf.Close()
			}
		}
		st.IgnoreSymlinks = f.Bool("ignore_symlinks", false)
		st.SkipNonTableNodes = f.Bool("skip_non_table_nodes", false)
		st.WatermarkDelay = f.Duration("watermark_delay", time.Hour)
		f.Bool("use_planned_timestamps", false)
		st.Finite = f.Bool("finite", false)
		f.Duration("update_info_period", 0)
		f.Float("byte_size_alpha", 0)
		s.StaticTable = st
	case SourceServiceLog:
		sl := &ServiceLogSourceParams{Finite: f.Bool("finite", false)}
		if jn := f.Required("table_joiner"); jn != nil {
			jf := p.w.Fields(jn, f.Path("table_joiner"))
			if fn := jf.Required("fetchers"); fn != nil {
				fp := jf.Path("fetchers")
				if fn.Kind != yson.KindList {
					p.errorf(fp, "want list, got %s", fn.Kind)
				} else {
					if len(fn.List) == 0 {
						p.errorf(fp, "at least one fetcher is required")
					}
					for i, item := range fn.List {
						ff := p.w.Fields(item, yson.Join(fp, fmt.Sprint(i)))
						sl.TablePaths = append(sl.TablePaths, ff.RequiredString("table_path"))
						ff.Strings("value_columns", true)
						ff.Int("attempts", 1, 1, maxInt32)
						ff.Duration("retry_timeout", 0)
						ff.Enum("fetch_type", "table_reader", "table_reader", "select_rows")
						ff.String("prefix", "")
						ff.Close()
					}
				}
			}
			jf.Close()
		}
		f.Duration("update_info_period", 0)
		f.Float("byte_size_alpha", 0)
		s.ServiceLog = sl
	case SourceRandom:
		s.Random = &RandomSourceParams{Finite: f.Bool("finite", false)}
	case SourceKafka:
		k := &KafkaSourceParams{}
		k.Topic = f.RequiredString("topic")
		k.GroupID = f.RequiredString("group_id")
		p.partitionFilter(f)
		f.Duration("update_partition_count_period", 0)
		f.Duration("metadata_timeout", 0)
		k.MaxBufferBytes = f.Size("max_buffer_bytes", 64<<20)
		k.UseConsumerGroupOffset = f.Bool("use_consumer_group_offset", true)
		s.Kafka = k
	}
}

// partitionFilter parses partition_filter: a list of [begin, end) index pairs.
func (p *parser) partitionFilter(f *yson.Fields) [][2]int64 {
	n := f.Node("partition_filter")
	if n == nil {
		return nil
	}
	path := f.Path("partition_filter")
	if n.Kind != yson.KindList {
		p.errorf(path, "want a list of [begin; end] pairs, got %s", n.Kind)
		return nil
	}
	out := [][2]int64{}
	for i, item := range n.List {
		ip := yson.Join(path, fmt.Sprint(i))
		if item.Kind != yson.KindList || len(item.List) != 2 {
			p.errorf(ip, "want a [begin; end] pair")
			continue
		}
		b, ok1 := p.w.Int(item.List[0], yson.Join(ip, "0"))
		e, ok2 := p.w.Int(item.List[1], yson.Join(ip, "1"))
		if ok1 && ok2 && (b < 0 || e <= b) {
			p.errorf(ip, "range [%d, %d) is empty or negative", b, e)
			continue
		}
		out = append(out, [2]int64{b, e})
	}
	return out
}

// richPath checks a (possibly rich) YPath such as "<cluster=c>//home/q": it must parse with
// the SDK's ypath.Parse and name an absolute Cypress path.
func (p *parser) richPath(s, path string) {
	if s == "" {
		return
	}
	if !strings.HasPrefix(s, "<") && !strings.HasPrefix(s, "//") {
		p.errorf(path, "%q is not an absolute Cypress path (want //…)", s)
		return
	}
	r, err := parseRichPath(s)
	if err != nil {
		p.errorf(path, "%q is not a valid YPath: %v", s, err)
		return
	}
	if !strings.HasPrefix(string(r.Path), "//") {
		p.errorf(path, "%q is not an absolute Cypress path (want //…)", s)
	}
}

func parseRichPath(s string) (r *ypath.Rich, err error) {
	defer func() {
		if rec := recover(); rec != nil {
			r, err = nil, fmt.Errorf("%v", rec)
		}
	}()
	return ypath.Parse(s)
}

// sinkParams parses the class parameters of a sink (at_most_once_strategy is already consumed).
func (p *parser) sinkParams(s *Sink, f *yson.Fields) {
	switch s.Class {
	case SinkSyncQueue, SinkAsyncQueue:
		q := &QueueSinkParams{}
		q.QueuePath = f.RequiredString("queue_path")
		p.richPath(q.QueuePath, f.Path("queue_path"))
		q.WriteFlowQueueMeta = f.Bool("write_flow_queue_meta", false)
		q.FlowQueueMetaColumn = f.String("flow_queue_meta_column", "flow_queue_meta")
		q.ColumnFilter = f.Strings("column_filter", true)
		routing := []string{"tablet_index_expression", "tablet_index_routing_hash_expression", "tablet_index_routing_hash_policy", "tablet_count"}
		if s.Class == SinkAsyncQueue {
			q.ProducerPath = f.RequiredString("producer_path")
			p.richPath(q.ProducerPath, f.Path("producer_path"))
			q.RequireSyncReplica = f.Bool("require_sync_replica", true)
			for _, key := range routing {
				if f.Has(key) {
					f.Node(key)
					p.errorf(f.Path(key), "the async queue sink does not accept routing parameters")
				}
			}
		} else {
			q.TabletIndexExpression = f.String("tablet_index_expression", "")
			q.TabletIndexRoutingHashExpression = f.String("tablet_index_routing_hash_expression", "")
			q.TabletIndexRoutingHashPolicy = f.Enum("tablet_index_routing_hash_policy", "", "range", "modulo")
			q.TabletCount = f.Int("tablet_count", 0, 1, maxInt32)
			if q.TabletIndexExpression != "" && q.TabletIndexRoutingHashExpression != "" {
				p.errorf(f.Path("tablet_index_routing_hash_expression"), "set either tablet_index_expression or tablet_index_routing_hash_expression, not both")
			}
			if q.TabletIndexRoutingHashPolicy != "" && q.TabletIndexRoutingHashExpression == "" {
				p.errorf(f.Path("tablet_index_routing_hash_policy"), "requires tablet_index_routing_hash_expression")
			}
			f.Duration("update_partition_count_period", 0)
		}
		s.Queue = q
	case SinkSortedTable:
		st := &SortedTableSinkParams{}
		st.TablePath = f.RequiredString("table_path")
		p.richPath(st.TablePath, f.Path("table_path"))
		st.ColumnFilter = f.Strings("column_filter", true)
		st.AggregateColumns = f.Strings("aggregate_columns", true)
		st.DeleteRows = f.Bool("delete_rows", false)
		st.RequireSyncReplica = f.Bool("require_sync_replica", true)
		f.Duration("update_partition_count_period", 0)
		s.SortedTable = st
	case SinkArrivalOrderTable:
		a := &ArrivalOrderSinkParams{}
		a.OutputDirectory = f.RequiredString("output_directory")
		p.richPath(a.OutputDirectory, f.Path("output_directory"))
		a.TablePeriod = f.Duration("table_period", 5*time.Minute)
		if f.Required("table_ttl") != nil {
			a.TableTTL = f.Duration("table_ttl", 0)
		}
		a.TableNameFormat = f.String("table_name_format", "%Y-%m-%dT%H:%M:%SZ")
		a.DataWeightColumn = f.String("data_weight_column", "")
		if a.TablePeriod <= 0 {
			p.errorf(f.Path("table_period"), "must be positive")
		} else if a.TableTTL/a.TablePeriod > 40000 || (a.TableTTL/a.TablePeriod == 40000 && a.TableTTL%a.TablePeriod != 0) {
			p.errorf(f.Path("table_ttl"), "table_ttl/table_period must be at most 40000")
		}
		s.ArrivalOrder = a
	case SinkAsyncHTTP:
		h := &HTTPSinkParams{}
		h.URL = f.RequiredString("url")
		if h.URL != "" {
			u, err := url.Parse(h.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				p.errorf(f.Path("url"), "%q is not an http or https URL with a host", h.URL)
			}
		}
		h.PayloadColumn = f.RequiredString("payload_column")
		if hn := f.Node("headers"); hn != nil {
			h.Headers = map[string]string{}
			p.w.Each(hn, f.Path("headers"), func(k string, v *yson.Node, path string) {
				h.Headers[k], _ = p.w.String(v, path)
			})
		}
		h.IdempotencyHeader = f.String("idempotency_header", "Idempotency-Key")
		for k := range h.Headers {
			if h.IdempotencyHeader != "" && strings.EqualFold(k, h.IdempotencyHeader) {
				p.errorf(f.Path("idempotency_header"), "conflicts with static header %q", k)
			}
		}
		h.KeepAlive = f.Bool("keep_alive", true)
		h.MaxRedirectCount = f.Int("max_redirect_count", 0, 0, 100)
		h.MaxIdleConnections = f.Int("max_idle_connections", 8, 0, maxInt32)
		s.HTTP = h
	case SinkKafka:
		k := &KafkaSinkParams{}
		k.Topic = f.RequiredString("topic")
		k.PayloadColumn = f.String("payload_column", "data")
		k.KeyColumn = f.String("key_column", "")
		k.MessageIDHeader = f.String("message_id_header", "")
		k.ExactlyOnce = f.Bool("exactly_once", false)
		s.Kafka = k
	case SinkClickHouse:
		c := &ClickHouseSinkParams{}
		c.Host = f.String("host", "")
		c.Hosts = f.Strings("hosts", true)
		switch {
		case f.Has("host") && f.Has("hosts"):
			p.errorf(f.Path("hosts"), "set either host or hosts, not both")
		case !f.Has("host") && !f.Has("hosts"):
			p.errorf(f.Path("host"), "required (or hosts)")
		}
		c.Port = f.Int("port", 9000, 1, 65535)
		f.Enum("host_selection_policy", "ordered_round_robin", "ordered_round_robin", "random_start")
		c.ShardingKeyColumns = f.Strings("sharding_key_columns", true)
		c.User = f.String("user", "default")
		c.PasswordEnvVar = f.String("password_env_var", "")
		c.Database = f.String("database", "default")
		c.Table = f.RequiredString("table")
		c.Codec = f.String("codec", "lz4")
		c.EnableTLS = f.Bool("enable_tls", false)
		f.Strings("tls_ca_files", false)
		f.String("tls_ca_directory", "")
		f.Bool("tls_skip_verification", false)
		s.ClickHouse = c
	}
}

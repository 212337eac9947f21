// Event time of a computation: watermark_strategy and timer streams.

package spec

import (
	"time"

	"github.com/ytflow/yt-flow/yson"
)

// watermarkStrategy reads the keys of watermark_strategy the runtime interprets; the others
// Flow documents are accepted as they are.
func (p *parser) watermarkStrategy(n *yson.Node, path string) *WatermarkStrategy {
	ws := &WatermarkStrategy{}
	f := p.w.Fields(n, path)
	if an := f.Node("event_timestamp_assigner"); an != nil {
		af := p.w.Fields(an, f.Path("event_timestamp_assigner"))
		ws.AssignerColumn = af.String("column", "")
		ws.AssignerFormat = af.Enum("format", "seconds", "seconds", "milliseconds")
		ws.LimitBySystemTimestamp = af.Bool("limit_by_system_timestamp", false)
		af.Close()
	}
	if gn := f.Node("watermark_generator"); gn != nil {
		gf := p.w.Fields(gn, f.Path("watermark_generator"))
		ws.Generator = true
		ws.OutOfOrderness = gf.Duration("out_of_orderness_bound", time.Minute)
		if in := gf.Node("idle_partitions"); in != nil {
			path := gf.Path("idle_partitions")
			inf := p.w.Fields(in, path)
			ws.IdlePartitions = &IdlePartitions{
				Duration: inf.Duration("duration", time.Minute),
				MaxRatio: inf.Float("max_ratio", 0.4),
			}
			inf.Close()
			if ws.IdlePartitions.Duration <= 0 {
				p.errorf(path+"/duration", "must be positive, got %v", ws.IdlePartitions.Duration)
			}
			if r := ws.IdlePartitions.MaxRatio; !(r > 0 && r <= 1) {
				p.errorf(path+"/max_ratio", "must be in (0, 1], got %v", r)
			}
		}
		if ln := gf.Node("late_data_partitions"); ln != nil {
			v, d := p.percentileDelay(ln, gf.Path("late_data_partitions"))
			ws.LateDataPartitions = &LateDataPartitions{Percentile: v, Delay: d}
		}
		gf.Skip("use_source_watermark", "unavailable_partition_groups")
		gf.Close()
	}
	if pn := f.Node("watermark_percentile"); pn != nil {
		v, d := p.percentileDelay(pn, f.Path("watermark_percentile"))
		ws.Percentile = &WatermarkPercentile{Value: v, Delay: d}
	}
	if an := f.Node("watermark_alignment"); an != nil {
		path := f.Path("watermark_alignment")
		af := p.w.Fields(an, path)
		ws.Alignment = &WatermarkAlignment{
			GroupName:  af.String("group_name", "default-alignment-group"),
			DriftBound: af.Duration("drift_bound", 20*time.Minute),
		}
		if rn := af.Node("read_delays"); rn != nil {
			ws.Alignment.ReadDelays = map[string]time.Duration{}
			p.w.Each(rn, af.Path("read_delays"), func(sid string, v *yson.Node, path string) {
				d, ok := p.w.Duration(v, path)
				if ok && d < 0 {
					p.errorf(path, "must not be negative, got %v", d)
				}
				ws.Alignment.ReadDelays[sid] = d
			})
		}
		af.Close()
		if ws.Alignment.DriftBound <= 0 {
			p.errorf(path+"/drift_bound", "must be positive, got %v", ws.Alignment.DriftBound)
		}
	}
	f.Close()
	return ws
}

// percentileDelay reads a {value = 100.0; delay = 1m} block (late_data_partitions,
// watermark_percentile; defaults as shown, value in (0, 100]).
func (p *parser) percentileDelay(n *yson.Node, path string) (value float64, delay time.Duration) {
	f := p.w.Fields(n, path)
	value, delay = f.Float("value", 100), f.Duration("delay", time.Minute)
	f.Close()
	if !(value > 0 && value <= 100) {
		p.errorf(path+"/value", "must be in (0, 100], got %v", value)
	}
	return value, delay
}

func (p *parser) timer(id string, n *yson.Node, path string) *Timer {
	t := &Timer{ID: id}
	if !timerIDPattern.MatchString(id) {
		p.errorf(path, "timer stream id %q must match [0-9A-Za-z_-]+", id)
	}
	f := p.w.Fields(n, path)
	t.TimeType = f.Enum("time_type", "event_time", "event_time", "system_time", "current_time")
	t.Streams = f.Strings("streams", true)
	if sn := f.Node("streams_with_delays"); sn != nil {
		t.StreamsWithDelays = map[string]time.Duration{}
		p.w.Each(sn, f.Path("streams_with_delays"), func(sid string, v *yson.Node, path string) {
			t.StreamsWithDelays[sid], _ = p.w.Duration(v, path)
		})
	}
	t.DeduplicateEqualTimestamps = f.Bool("deduplicate_equal_timestamps", true)
	f.Close()
	return t
}

package statuspage

import (
	"fmt"
	"time"

	"github.com/ytflow/yt-flow/spec"
	"github.com/ytflow/yt-flow/status"
	"github.com/ytflow/yt-flow/ytstore"
)

// view is what page.html renders.
type view struct {
	Login  bool
	Path   string
	Base   string
	CSRF   string
	User   string
	Notice string
	// NoticeOK shows Notice as a success, not a problem.
	NoticeOK bool
	// Standby says that this controller does not lead ("" when it does or is unknown).
	Standby string

	Snap             *status.Snapshot
	Attrs            *ytstore.Attributes
	State, Target    string
	Leader           string
	SystemWatermark  string
	EventWatermark   string
	ReadAt           string
	PipelineMessages []string
	Buttons          []buttonView
	Graph            graph
	BoxW, BoxH       int
	Computations     []status.Computation
	Streams          []streamView
	Partitions       []status.Partition
	JobsPerWorker    map[string]int
}

type buttonView struct {
	Name, Label, Target string
	Primary             bool
	// Refusal says why the button is disabled ("" enabled).
	Refusal string
}

type streamView struct{ ID, From, To, InFlight, Lag string }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// newView folds a snapshot into what the page shows; the texts are those of `yt-flow status`.
func newView(s *status.Snapshot, path string) *view {
	a := s.Attrs
	v := &view{
		Path: path, Base: "/", Snap: s, Attrs: a,
		State: orDash(a.PipelineState), Target: orDash(a.TargetState), Leader: orDash(a.LeaderControllerAddress),
		SystemWatermark: s.SystemWatermark(), EventWatermark: s.EventWatermark(),
		ReadAt:       time.UnixMicro(int64(s.Now)).UTC().Format("2006-01-02 15:04:05 MST"),
		Computations: s.Computations(), Partitions: s.PartitionRows(), JobsPerWorker: s.JobsPerWorker(),
		BoxW: boxW, BoxH: boxH,
	}
	if len(a.Spec) == 0 {
		v.PipelineMessages = append(v.PipelineMessages, "The pipeline has no spec.")
	} else if _, err := spec.ParsePipeline(a.Spec); err != nil {
		v.PipelineMessages = append(v.PipelineMessages, fmt.Sprintf("The stored spec (version %d) does not parse: %v", a.SpecVersion, err))
	}
	for _, b := range buttons {
		bv := buttonView{Name: b.Name, Label: b.Label, Target: b.Target, Primary: b.Target == ytstore.TargetWorking}
		if err := status.CheckTarget(path, a, b.Target); err != nil {
			bv.Refusal = err.Error()
		}
		v.Buttons = append(v.Buttons, bv)
	}
	streams := s.Streams()
	for _, r := range streams {
		from, to, inFlight, lag := s.StreamRow(r)
		v.Streams = append(v.Streams, streamView{r.ID, from, to, inFlight, lag})
	}
	p := s.Spec()
	v.Graph = layout(v.Computations, streams, func(cid, kid string) string {
		if p == nil || p.Computations[cid] == nil || p.Computations[cid].Sinks[kid] == nil {
			return ""
		}
		return p.Computations[cid].Sinks[kid].ClassName
	})
	return v
}

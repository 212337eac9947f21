package controller

import (
	"sort"

	"github.com/ytflow/yt-flow/ytstore"
)

// drained applies the drained rule of docs/runtime-protocol.md: two
// consecutive observations with a stable layout where every job reports
// in_flight 0 and has applied draining, the second one with newer statuses
// and the same epochs.
// Invariant: a pipeline is stopped or completed only when drained (TestDrainNeedsTwoObservations).
func (s *Scheduler) drained(p *plan, statuses map[string]ytstore.JobStatus) bool {
	if p.changed || len(p.d.Layout.PutJobs) > 0 || len(p.jobs) != len(p.partitions) {
		s.drain = nil
		return false
	}
	obs := map[string]statusMark{}
	for _, j := range p.jobs {
		st, ok := statuses[j.JobID]
		if !ok || st.InFlight != 0 || !(st.Draining || st.State == ytstore.JobCompleted) {
			s.drain = nil
			return false
		}
		obs[j.JobID] = statusMark{updatedAt: st.UpdatedAt, epoch: st.Epoch}
	}
	prev := s.drain
	if prev == nil || len(prev) != len(obs) {
		s.drain = obs
		return false
	}
	for id, m := range obs {
		old, ok := prev[id]
		switch {
		case !ok || m.epoch != old.epoch:
			s.drain = obs // something moved: start over
			return false
		case m.updatedAt <= old.updatedAt:
			return false // wait for a newer status
		}
	}
	s.drain = nil
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

package ytstore

import (
	"context"
	"fmt"

	"go.ytsaurus.tech/yt/go/yt"
)

// watermarkNames are the attributes Watermarks reads.
var watermarkNames = []string{"system_watermark", "event_watermark", "event_watermarks"}

// Watermarks reads only the published watermarks of the pipeline (@system_watermark,
// @event_watermark, @event_watermarks) into an Attributes whose other fields are zero: a
// worker of a pipeline whose timers wait for them reads them at every layout poll, without
// the specs. A pipeline that does not exist gives ErrNotFound.
func (s *Store) Watermarks(ctx context.Context) (*Attributes, error) {
	var a Attributes
	err := s.yc.GetNode(ctx, s.path.Attrs(), &a, &yt.GetNodeOptions{Attributes: watermarkNames})
	if err != nil {
		return nil, fmt.Errorf("ytstore: read the watermarks of %s: %w", s.path, classify(err))
	}
	return &a, nil
}

// Package random is the random source (TRandomSource), for tests and load generation. The
// spec accepts and validates it; the runtime does not run it yet.
package random

import (
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// Class is the canonical name of the random source.
const Class = "random"

// Params are the parameters of TRandomSource.
type Params struct {
	Finite bool
}

// IsFinite tells whether the source completes.
func (p *Params) IsFinite() bool { return p.Finite }

func init() {
	registry.Register(registry.Class{
		Name: Class, Role: registry.Source, FlowNames: []string{"NYT::NFlow::TRandomSource"},
		Guarantee: registry.ExactlyOnce,
		Summary:   "generates rows, for tests and load",
		Parse:     func(f *yson.Fields) any { return &Params{Finite: f.Bool("finite", false)} },
	})
}

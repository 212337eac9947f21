package spec

import (
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// SimpleExternalStateManager is Flow's external state manager class: the state of a key is
// the row of a user's sorted dynamic table whose key columns are the key. The joiner class
// reads such a row without writing it.
const (
	SimpleExternalStateManager = "NYT::NFlow::TSimpleExternalStateManager"
	SimpleExternalStateJoiner  = "NYT::NFlow::TSimpleExternalStateJoiner"
)

// ExternalState is one entry of a computation's external_state_managers or
// external_state_joiners.
type ExternalState struct {
	// Name is the state's name ("/totals"), as process functions open it.
	Name string
	// Path is the sorted dynamic table (parameters/path).
	Path string
	// Joiner: an entry of external_state_joiners, read only.
	Joiner bool
}

// externalStates parses external_state_managers ("/name" → {external_state_manager_class_name
// = TSimpleExternalStateManager; parameters = {path}}) or, with joiner,
// external_state_joiners ("/name" → {external_state_joiner_class_name =
// TSimpleExternalStateJoiner; parameters = {path}}).
func (p *parser) externalStates(n *yson.Node, path string, joiner bool) map[string]*ExternalState {
	out := map[string]*ExternalState{}
	classKey, want := "external_state_manager_class_name", SimpleExternalStateManager
	if joiner {
		classKey, want = "external_state_joiner_class_name", SimpleExternalStateJoiner
	}
	p.w.Each(n, path, func(name string, item *yson.Node, ip string) {
		f := p.w.Fields(item, ip)
		class := f.RequiredString(classKey)
		if class != "" && class != want && "NYT::NFlow::"+class != want {
			f.Errorf(classKey, "%q is not a known class here (want %s)", class, want)
		}
		es := &ExternalState{Name: name, Joiner: joiner}
		if pn := f.Required("parameters"); pn != nil {
			pf := p.w.Fields(pn, f.Path("parameters"))
			es.Path = registry.RichPath(pf, "path")
			pf.Close()
		}
		f.Close()
		out[name] = es
	})
	return out
}

// validateExternalStates checks the external states of every computation: only keyed
// transform computations have them, and a table has one writer.
func (p *parser) validateExternalStates(pl *Pipeline, compsPath string) {
	owner := map[string]string{} // table -> YSON path of the state that writes it
	for _, id := range sortedKeys(pl.Computations) {
		c := pl.Computations[id]
		base := yson.Join(compsPath, id+"/external_state_managers")
		if len(c.ExternalStates) > 0 && (c.Kind != KindTransform || len(c.GroupBy.Columns) == 0) {
			p.errorf(yson.Join(compsPath, id), "external state applies to keyed transform computations (with group_by_schema) only, not %s", c.Kind)
		}
		for _, name := range sortedKeys(c.ExternalStates) {
			es := c.ExternalStates[name]
			if es.Path == "" || es.Joiner {
				continue
			}
			at := base + "/" + name
			if prev, ok := owner[es.Path]; ok {
				p.errorf(at+"/parameters/path", "State table %s is claimed for writing by both %s and %s", es.Path, prev, at)
				continue
			}
			owner[es.Path] = at
		}
	}
}

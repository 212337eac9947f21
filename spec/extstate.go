package spec

import (
	"github.com/ytflow/yt-flow/connectors/registry"
	"github.com/ytflow/yt-flow/yson"
)

// SimpleExternalStateManager is Flow's external state manager class: the state of a key is
// the rows of a user's sorted dynamic table whose leading key columns are the key.
const SimpleExternalStateManager = "NYT::NFlow::TSimpleExternalStateManager"

// ExternalState is one entry of a computation's external_state_managers.
type ExternalState struct {
	// Name is the state's name ("/totals"), as process functions open it.
	Name string
	// Path is the sorted dynamic table (parameters/path).
	Path string
}

// externalStates parses external_state_managers: "/name" → {external_state_manager_class_name
// (TSimpleExternalStateManager); parameters = {path}}.
func (p *parser) externalStates(n *yson.Node, path string) map[string]*ExternalState {
	out := map[string]*ExternalState{}
	p.w.Each(n, path, func(name string, item *yson.Node, ip string) {
		f := p.w.Fields(item, ip)
		class := f.RequiredString("external_state_manager_class_name")
		if class != "" && class != SimpleExternalStateManager && "NYT::NFlow::"+class != SimpleExternalStateManager {
			f.Errorf("external_state_manager_class_name", "%q is not a known external state manager (want %s)", class, SimpleExternalStateManager)
		}
		es := &ExternalState{Name: name}
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
			p.errorf(base, "external state applies to keyed transform computations (with group_by_schema) only, not %s", c.Kind)
		}
		for _, name := range sortedKeys(c.ExternalStates) {
			es := c.ExternalStates[name]
			if es.Path == "" {
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

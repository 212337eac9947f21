// The syntax tree of expressions and queries, shared by the parser, the evaluator and the
// type checker.

package ytql

import (
	"iter"
)

type nodeKind int

const (
	nLiteral     nodeKind = iota // value
	nColumn                      // name; op: table qualifier (t.name) or empty
	nPlaceholder                 // name
	nTuple                       // args
	nUnary                       // op ("-", "+", "~", "not"), args[0]
	nBinary                      // op, args[0], args[1]
	nIn                          // args[0] IN list; not
	nBetween                     // args[0] BETWEEN list[0] AND list[1] [, list[2] AND list[3] …]; not
	nIsNull                      // args[0] IS [NOT] NULL; not
	nFunc                        // name (lower case), args
	nAggregate                   // name, args[0] (nil for count(*)); slot
	nCase                        // CASE args[0] WHEN list[0] THEN list[1] … ELSE args[1] END; args may be nil
)

// node is one parsed expression; pos is its byte offset in the text.
type node struct {
	kind  nodeKind
	pos   int
	op    string
	name  string
	value any
	args  []*node
	list  []*node // nIn: the items
	not   bool
	slot  int // nAggregate: index into the group's aggregate states
	// alias is set on an unqualified column reference whose name is also an
	// alias defined in the query (expr AS name): when the row has no such
	// column, the reference evaluates the aliased expression, as YTsaurus
	// resolves a name to a table column first and to an alias second.
	alias *node
}

// nodes yields every node of the trees in roots in pre-order: a node, then
// its args, then its list items. Nil roots and args (a CASE without operand
// or ELSE) are skipped.
func nodes(roots []*node) iter.Seq[*node] {
	return func(yield func(*node) bool) {
		var walk func(n *node) bool
		walk = func(n *node) bool {
			if n == nil {
				return true
			}
			if !yield(n) {
				return false
			}
			for _, a := range n.args {
				if !walk(a) {
					return false
				}
			}
			for _, a := range n.list {
				if !walk(a) {
					return false
				}
			}
			return true
		}
		for _, r := range roots {
			if !walk(r) {
				return
			}
		}
	}
}

// constant reports whether the value of n is fixed by the text (literals,
// placeholders and arithmetic on them). Constant integers adapt their type to
// the other operand like YTsaurus literals do (1 compares with a uint64).
func (n *node) constant() bool {
	switch n.kind {
	case nLiteral, nPlaceholder:
		return true
	case nUnary:
		return n.args[0].constant()
	case nBinary:
		switch n.op {
		case "+", "-", "*", "/", "%", "|", "&", "<<", ">>", "||":
			return n.args[0].constant() && n.args[1].constant()
		}
		return false
	case nTuple:
		for _, a := range n.args {
			if !a.constant() {
				return false
			}
		}
		return true
	}
	return false
}

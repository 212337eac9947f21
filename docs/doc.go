// Package docs holds no code. Its tests keep the documents in this folder true:
// every test that docs/invariants.md or an "Invariant:" comment in the code names
// exists (invariants_test.go), and the packages import only what
// docs/architecture.md allows (imports_test.go).
package docs

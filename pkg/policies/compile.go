package policies

import (
	"context"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
)

// compiled is a parsed and compiled policy tree: what serving and `policy test`
// share.
type compiled struct {
	compiler *ast.Compiler
	store    storage.Store
	modules  map[string]*ast.Module
	// caps are the capabilities it was compiled with; queries use the same.
	caps *ast.Capabilities
}

// regoVersion is the only Rego syntax accepted: v1 (if, contains, :=).
const regoVersion = ast.RegoV1

// parseSnapshot parses every file of a snapshot: Rego modules (with their METADATA
// annotations) and data documents, each at its directory's path under data.
func parseSnapshot(dir string, snap *snapshot, caps *ast.Capabilities) (map[string]*ast.Module, storage.Store, error) {
	res, err := loader.NewFileLoader().
		WithFS(snap.files).
		WithRegoVersion(regoVersion).
		WithProcessAnnotation(true).
		WithCapabilities(caps).
		Filtered([]string{"."}, nil)
	if err != nil {
		return nil, nil, &LoadError{Dir: dir, Problems: problems(dir, err)}
	}
	store := inmem.NewFromObjectWithOpts(res.Documents,
		inmem.OptRoundTripOnWrite(false), inmem.OptReturnASTValuesOnRead(true))
	return res.ParsedModules(), store, nil
}

// newCompiler is the one compiler configuration, shared by serving and tests.
// Print statements are only kept for tests: the server has nowhere to show them.
// The input schema is known as schema.input, and METADATA schemas annotations
// are honoured, so that a package annotated with it is type-checked against
// the input BuildInput builds.
func newCompiler(caps *ast.Capabilities, printStatements bool) *ast.Compiler {
	return ast.NewCompiler().
		WithCapabilities(caps).
		WithDefaultRegoVersion(regoVersion).
		WithEnablePrintStatements(printStatements).
		WithSchemas(schemas).
		WithUseTypeCheckAnnotations(true)
}

// compileSnapshot parses and compiles a snapshot. Data documents that overlap a
// rule's path are refused here, not at evaluation.
func compileSnapshot(ctx context.Context, dir string, snap *snapshot, caps *ast.Capabilities) (*compiled, error) {
	modules, store, err := parseSnapshot(dir, snap, caps)
	if err != nil {
		return nil, err
	}
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening policy data: %w", err)
	}
	defer store.Abort(ctx, txn)
	compiler := newCompiler(caps, false).WithPathConflictsCheck(storage.NonEmpty(ctx, store, txn))
	if compiler.Compile(modules); compiler.Failed() {
		return nil, &LoadError{Dir: dir, Problems: problems(dir, compiler.Errors)}
	}
	return &compiled{compiler: compiler, store: store, modules: modules, caps: caps}, nil
}

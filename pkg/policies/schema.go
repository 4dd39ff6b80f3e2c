package policies

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"

	_ "embed" // the input schema
)

// inputSchemaJSON is the JSON Schema (draft-07) of input, as BuildInput builds
// it; docs/policy-input.md explains it field by field. It is part of the binary,
// not of the policy directory: it describes what this version of BuildInput
// sends, so it must change with the code, never with a ConfigMap.
//
//go:embed schemas/input.json
var inputSchemaJSON []byte

// InputSchemaRef is the name a policy gives the input schema in its METADATA,
// to be type-checked against it when it loads:
//
//	# METADATA
//	# schemas:
//	#   - input: schema.input
//
// A package so annotated that reads a field the input does not have
// (input.workload.podsets) is refused with the file and line. Packages without
// the annotation are not type-checked against it.
const InputSchemaRef = "schema.input"

// InputSchema returns the input schema's JSON.
func InputSchema() []byte { return slices.Clone(inputSchemaJSON) }

// schemas is the schema set every compiler is given: the input schema as
// schema.input. It is read-only once built, so compilers share it.
var schemas = mustSchemaSet()

func mustSchemaSet() *ast.SchemaSet {
	var raw any
	if err := util.UnmarshalJSON(inputSchemaJSON, &raw); err != nil {
		// An embedded file the tests read: a build defect, not a runtime state.
		panic(fmt.Sprintf("internal error: schemas/input.json: %v", err))
	}
	ss := ast.NewSchemaSet()
	ss.Put(ast.MustParseRef(InputSchemaRef), raw)
	return ss
}

// schemaDetail completes a type checker error about a ref with what the schema
// allows instead ("undefined ref: input.workload.podsets" alone does not say
// that the field is podSets).
func schemaDetail(e *ast.Error) string {
	d, ok := e.Details.(*ast.RefErrInvalidDetail)
	if !ok || len(d.OneOf) == 0 || !d.Ref.HasPrefix(ast.InputRootRef) {
		return ""
	}
	var b bytes.Buffer
	b.WriteString(" (the input schema has ")
	for i, v := range d.OneOf {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(v.String())
	}
	b.WriteString(" here; see docs/policy-input.md)")
	return b.String()
}

package evidence

import (
	"sync"

	"github.com/aegis-run/aegis/schemas"
)

// Every record shape of a bundle is validated by the compiled validator of
// package schemas (schemas.Validator): it decides as the general JSON
// Schema validator does, in a fraction of its time, which keeps verify
// near the speed of SHA-256.

const (
	shapeArtifact = "artifact" // browser-observation.schema.json#/$defs/artifact
)

// shapeRefs maps each record shape to its schema ref, relative to
// schemas.BaseURL.
var shapeRefs = map[string]string{
	string(schemas.KindManifest):      "evidence-manifest.schema.json",
	string(schemas.KindLedgerEntry):   "ledger-entry.schema.json",
	string(schemas.KindPlan):          "browser-plan.schema.json",
	string(schemas.KindAction):        "browser-action.schema.json",
	string(schemas.KindToolResult):    "tool-result.schema.json",
	string(schemas.KindDecision):      "decision-record.schema.json",
	string(schemas.KindEvent):         "computer-use.schema.json#/$defs/ComputerUseStreamEvent",
	string(schemas.KindObservation):   "browser-observation.schema.json",
	string(schemas.KindImageArtifact): "image-artifact.schema.json",
	string(schemas.KindModelCall):     "model-call.schema.json",
	shapeArtifact:                     "browser-observation.schema.json#/$defs/artifact",
}

var (
	shapesOnce sync.Once
	shapes     map[string]*schemas.Validator
	shapesErr  error
)

// loadShapes returns the validator of every record shape, compiled once.
func loadShapes() (map[string]*schemas.Validator, error) {
	shapesOnce.Do(func() {
		out := map[string]*schemas.Validator{}
		for name, ref := range shapeRefs {
			var v *schemas.Validator
			var err error
			if kind, kerr := schemas.ParseKind(name); kerr == nil {
				v, err = schemas.ValidatorFor(kind)
			} else {
				v, err = schemas.ValidatorForRef(ref)
			}
			if err != nil {
				shapesErr = err
				return
			}
			out[name] = v
		}
		shapes = out
	})
	return shapes, shapesErr
}

// validateWith validates a value of a tape with a shape's validator:
// ValidateTape, but for the benchmark that measures what the compiled
// validator saves.
var validateWith = (*schemas.Validator).ValidateTape

// validateRec validates a parsed record (or a value of one) as the named
// record shape.
func validateRec(name string, r rec) error {
	v, err := shapeValidator(name)
	if err != nil {
		return err
	}
	return validateWith(v, r.t, r.i)
}

// validateShape validates a built value as the named record shape.
func validateShape(name string, x any) error {
	v, err := shapeValidator(name)
	if err != nil {
		return err
	}
	return v.ValidateValue(x)
}

func shapeValidator(name string) (*schemas.Validator, error) {
	s, err := loadShapes()
	if err != nil {
		return nil, err
	}
	v, ok := s[name]
	if !ok {
		return nil, &unknownShapeError{name}
	}
	return v, nil
}

// unknownShapeError is a programming error: a shape with no schema.
type unknownShapeError struct{ name string }

func (e *unknownShapeError) Error() string { return "evidence: unknown record shape " + e.name }

// Package contract holds the Go types of every aegis wire shape. Each type
// mirrors a JSON Schema in package schemas, which stays the single source of
// truth: Decode validates against the schema before it decodes, and the
// tests prove that every Go value marshals to a schema-valid document and
// every schema-valid document survives a round trip through Go.
package contract

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/schemas"
)

// Decode validates data against the kind's schema and then decodes it into
// v, refusing unknown fields. The document is decoded from its canonical
// form (RFC 8785), so that numbers the schema accepts as integers, such as
// 1280.0 or 1e3, decode into Go integers as well. The error is a
// *schemas.SyntaxError, a *schemas.ValidationError or a decoding error
// wrapped with the kind.
func Decode(kind schemas.Kind, data []byte, v any) error {
	parsed, err := schemas.Parse(data)
	if err != nil {
		return err
	}
	if err := schemas.ValidateValue(kind, parsed); err != nil {
		return err
	}
	canon, err := canonjson.EncodeValue(parsed)
	if err != nil {
		return fmt.Errorf("decode %s: %w", kind, err)
	}
	d := json.NewDecoder(bytes.NewReader(canon))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("decode %s: %w", kind, err)
	}
	return nil
}

// Encode marshals v and validates the result against the kind's schema, so
// that nothing aegis writes breaks its own contract (read back as
// schemas.DecodeOwn reads what aegis wrote).
func Encode(kind schemas.Kind, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", kind, err)
	}
	v2, err := schemas.DecodeOwn(b)
	if err == nil {
		err = schemas.ValidateValue(kind, v2)
	}
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", kind, err)
	}
	return b, nil
}

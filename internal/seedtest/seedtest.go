// Package seedtest gives tests seed 003's own schema (the unmodified copy
// kept at schemas/testdata/seed), so that what aegis sends on the wire is
// checked against the seed itself, not only against our restatement of it.
package seedtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/aegis-run/aegis/schemas"
)

// Base is the $id base of seed 003's schema.
const Base = "https://github.com/andrewhuot/headless-chat-sdk/schemas/"

var (
	once  sync.Once
	event *jsonschema.Schema
	err   error
)

// seedPath is the seed's copy, found from this file's place in the module.
func seedPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "schemas", "testdata", "seed", "computer-use.schema.json")
}

// EventSchema returns seed 003's ComputerUseStreamEvent compiled from the
// seed's file, its governance $ref resolved to ours (as the schemas
// package's equivalence proof does), with formats asserted.
func EventSchema() (*jsonschema.Schema, error) {
	once.Do(func() {
		var seed, gov []byte
		if seed, err = os.ReadFile(seedPath()); err != nil {
			return
		}
		if gov, err = fs.ReadFile(schemas.FS(), "governance.schema.json"); err != nil {
			return
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat = true
		if err = c.AddResource(Base+"computer-use.schema.json", bytes.NewReader(seed)); err != nil {
			return
		}
		if err = c.AddResource(Base+"governance.schema.json", bytes.NewReader(gov)); err != nil {
			return
		}
		event, err = c.Compile(Base + "computer-use.schema.json#/definitions/ComputerUseStreamEvent")
	})
	return event, err
}

// CheckEvent returns nil when raw is a stream event valid under seed 003.
func CheckEvent(raw []byte) error {
	s, err := EventSchema()
	if err != nil {
		return fmt.Errorf("seed 003 schema: %w", err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("invalid under seed 003: %w", err)
	}
	return nil
}

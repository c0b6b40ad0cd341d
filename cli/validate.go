package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aegis-run/aegis/schemas"
)

func init() {
	register(command{
		name:    "validate",
		summary: "check a JSON document against one of the aegis wire schemas",
		run:     runValidate,
	})
}

func kindNames() string {
	var names []string
	for _, k := range schemas.Kinds() {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}

func runValidate(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlagSet("validate", "[--json] KIND FILE|-\n\nKIND is one of: "+kindNames()+
		".\nExit status: 0 valid, 1 invalid (every problem printed as JSON-pointer: reason), 2 usage or unreadable input.", stdio)
	asJSON := fs.Bool("json", false, "print the result as JSON on stdout")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return usageError("validate takes KIND and FILE (or - for stdin), got %d arguments", fs.NArg())
	}
	kind, err := schemas.ParseKind(fs.Arg(0))
	if err != nil {
		return usageError("%v", err)
	}
	name := fs.Arg(1)
	data, err := readInput(name, stdio)
	if err != nil {
		return usageError("read %s: %v", name, err)
	}
	verr := schemas.Validate(kind, data)
	if *asJSON {
		res := struct {
			Kind     schemas.Kind      `json:"kind"`
			File     string            `json:"file"`
			Valid    bool              `json:"valid"`
			Problems []schemas.Problem `json:"problems,omitempty"`
			Error    string            `json:"error,omitempty"`
		}{Kind: kind, File: name, Valid: verr == nil}
		var ve *schemas.ValidationError
		switch {
		case errors.As(verr, &ve):
			res.Problems = ve.Problems
		case verr != nil:
			res.Error = verr.Error()
		}
		enc := json.NewEncoder(stdio.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	var ve *schemas.ValidationError
	switch {
	case verr == nil:
		if !*asJSON {
			fmt.Fprintf(stdio.Out, "%s: valid %s\n", name, kind)
		}
		return nil
	case errors.As(verr, &ve):
		if !*asJSON {
			fmt.Fprintf(stdio.Err, "%s: invalid %s, %d problem(s):\n", name, kind, len(ve.Problems))
			for _, p := range ve.Problems {
				fmt.Fprintf(stdio.Err, "%s\n", p)
			}
		}
		return exitCode(ExitFailure, nil)
	default:
		// Malformed JSON, too large, or a broken schema: the input could not
		// be judged at all.
		if *asJSON {
			return exitCode(ExitUsage, nil)
		}
		return usageError("%s: %v", name, verr)
	}
}

package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aegis-run/aegis/canonjson"
	"github.com/aegis-run/aegis/internal/text"
	"github.com/aegis-run/aegis/schemas"
)

// DefaultRepairs is how many times Ask asks again after an invalid answer
// when the caller gives a negative bound.
const DefaultRepairs = 2

// Repairs reads a MaxRepairs option as the agents document it: 0 means
// DefaultRepairs, a negative number none.
func Repairs(option int) int {
	switch {
	case option == 0:
		return DefaultRepairs
	case option < 0:
		return 0
	}
	return option
}

// Bounds on what Ask feeds back to the model.
const (
	maxFedBackProblems = 20
	maxFedBackReason   = 300
	maxFedBackAnswer   = 16 << 10
)

// InvalidAnswerError is the error of Ask when every answer, the first and
// each repair, was invalid.
type InvalidAnswerError struct {
	// Kind names what was asked for ("plan", "navigator-response").
	Kind string
	// Problems are the problems of the last answer.
	Problems []schemas.Problem
	// Attempts is the number of answers received.
	Attempts int
}

// Error lists the problems of the last answer.
func (e *InvalidAnswerError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "llm: the model gave no valid %s in %d answers; problems of the last one:", e.Kind, e.Attempts)
	for i, p := range e.Problems {
		if i == maxFedBackProblems {
			fmt.Fprintf(&b, "\n  ... and %d more", len(e.Problems)-i)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(text.Ellipsize(p.String(), maxFedBackReason))
	}
	return b.String()
}

// ProblemsError is what a check function returns for problems the schema
// cannot express (duplicate ids, unknown secret names...).
type ProblemsError struct {
	// Problems are the problems found.
	Problems []schemas.Problem
}

// Error lists the problems.
func (e *ProblemsError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return "invalid answer: " + strings.Join(parts, "; ")
}

// ProblemsOf turns the error of a check into problems: the problems of a
// *schemas.ValidationError or a *ProblemsError, one problem for a
// *schemas.SyntaxError or any other error.
func ProblemsOf(err error) []schemas.Problem {
	var ve *schemas.ValidationError
	var pe *ProblemsError
	var se *schemas.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ve):
		return ve.Problems
	case errors.As(err, &pe):
		return pe.Problems
	case errors.As(err, &se):
		return []schemas.Problem{{Reason: "malformed JSON: " + se.Error()}}
	}
	return []schemas.Problem{{Reason: err.Error()}}
}

// Ask sends req (which should carry a Schema) and hands the answer,
// normalized (see Normalize), to check. While check fails, it asks again,
// at most repairs more times (negative: DefaultRepairs), each time with the
// invalid answer and its problems fed back after the original messages.
// It returns one CallRecord per call. The error is the call's error (an
// *APIError, a *GuardError, a context error) or, when every answer was
// invalid, an *InvalidAnswerError of kind.
func Ask(ctx context.Context, c Completer, req Request, kind string, repairs int, check func(answer []byte) error) ([]CallRecord, error) {
	if repairs < 0 {
		repairs = DefaultRepairs
	}
	base := append([]Message(nil), req.Messages...)
	var calls []CallRecord
	for attempt := 1; ; attempt++ {
		resp, err := c.Complete(ctx, req)
		calls = append(calls, resp.Record(err))
		if err != nil {
			return calls, err
		}
		answer := Normalize(resp.Content)
		cerr := check(answer)
		if cerr == nil {
			return calls, nil
		}
		problems := ProblemsOf(cerr)
		if resp.FinishReason == "length" {
			problems = append(problems, schemas.Problem{Reason: "the answer was cut off at the token limit: answer with fewer or shorter actions"})
		}
		if attempt > repairs {
			return calls, &InvalidAnswerError{Kind: kind, Problems: problems, Attempts: attempt}
		}
		if err := ctx.Err(); err != nil {
			return calls, err
		}
		req.Messages = append(append([]Message(nil), base...),
			Message{Role: RoleAssistant, Content: text.Ellipsize(resp.Content, maxFedBackAnswer)},
			Message{Role: RoleUser, Content: RepairPrompt(kind, problems)},
		)
	}
}

// RepairPrompt is the message that feeds an invalid answer's problems back
// to the model.
func RepairPrompt(kind string, problems []schemas.Problem) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Your previous answer is not a valid %s. Problems (JSON pointer: reason):", kind)
	for i, p := range problems {
		if i == maxFedBackProblems {
			fmt.Fprintf(&b, "\n- ... and %d more", len(problems)-i)
			break
		}
		b.WriteString("\n- ")
		b.WriteString(text.Ellipsize(p.String(), maxFedBackReason))
	}
	b.WriteString("\nAnswer again with exactly one corrected JSON object valid under the schema, and nothing else.")
	return b.String()
}

// Normalize extracts the JSON document from a model's answer: it drops
// surrounding white space, a byte order mark, a leading <think>...</think>
// block and a Markdown code fence, falls back to the span from the first
// '{' to the last '}' when the rest is not JSON, and removes object members
// whose value is null (aegis schemas never allow null, and strict mode
// makes absent optional fields null). A document that does not parse is
// returned as extracted, for the validator to report. Nothing is ever
// made valid that was not: the result is still validated by the caller.
func Normalize(content string) []byte {
	s := strings.TrimSpace(strings.TrimPrefix(content, "\ufeff"))
	if strings.HasPrefix(s, "<think>") {
		if i := strings.Index(s, "</think>"); i >= 0 {
			s = strings.TrimSpace(s[i+len("</think>"):])
		}
	}
	if strings.HasPrefix(s, "```") {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		} else {
			s = strings.TrimPrefix(s, "```")
		}
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
	}
	v, err := schemas.Parse([]byte(s))
	if err != nil {
		i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}')
		if i < 0 || j <= i {
			return []byte(s)
		}
		v, err = schemas.Parse([]byte(s[i : j+1]))
		if err != nil {
			return []byte(s)
		}
	}
	out, err := canonjson.EncodeValue(dropNulls(v))
	if err != nil {
		return []byte(s)
	}
	return bytes.Clone(out)
}

func dropNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			t[k] = dropNulls(e)
		}
	case []any:
		for i, e := range t {
			t[i] = dropNulls(e)
		}
	}
	return v
}

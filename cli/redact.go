package cli

import (
	"errors"

	"github.com/aegis-run/aegis/secrets"
)

// filterStdio returns stdio with its output writers passed through the
// secrets' egress filter a line at a time (secrets.Writer): every
// progress line, warning, error and the output JSON of a session. flush
// writes what they hold back; call it before returning.
func filterStdio(stdio Stdio, set *secrets.Set) (filtered Stdio, flush func()) {
	out, errOut := secrets.NewWriter(stdio.Out, set), secrets.NewWriter(stdio.Err, set)
	return Stdio{In: stdio.In, Out: out, Err: errOut}, func() {
		_ = out.Flush()
		_ = errOut.Flush()
	}
}

// redactedError is an error whose message went through the egress filter;
// it unwraps to the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactError returns err with its message through the egress filter of
// set, keeping an *exitError's code: Run prints it on the unfiltered
// stderr.
func redactError(set *secrets.Set, err error) error {
	if err == nil || set.Len() == 0 {
		return err
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err == nil {
			return err
		}
		return &exitError{code: ee.code, err: &redactedError{msg: set.Redact(ee.err.Error()), err: ee.err}}
	}
	return &redactedError{msg: set.Redact(err.Error()), err: err}
}

package cli

import (
	"errors"
	"strings"

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

// maskedValue stands for a password or a query value aegis does not echo.
const maskedValue = "xxxxx"

// shownURL is a URL as typed (a flag, a task member, an environment
// variable), fit to be echoed in a message: the password of its user
// info and the values of its query and fragment parameters masked
// ("https://ada:xxxxx@example.com/?key=xxxxx"), as url.URL.Redacted masks
// the password. It works on the string, so that what does not parse as a
// URL (a host without a scheme, "ada:pw@example.com") is masked too.
func shownURL(u string) string {
	rest, frag, hasFrag := strings.Cut(u, "#")
	rest, query, hasQuery := strings.Cut(rest, "?")
	scheme := ""
	if i := strings.Index(rest, "://"); i >= 0 {
		scheme, rest = rest[:i+3], rest[i+3:]
	}
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		if user, _, hasPass := strings.Cut(authority[:i], ":"); hasPass {
			authority = user + ":" + maskedValue + authority[i:]
		}
	}
	s := scheme + authority + path
	if hasQuery {
		s += "?" + maskParams(query)
	}
	if hasFrag {
		s += "#" + maskParams(frag)
	}
	return s
}

// maskParams masks the values of the NAME=VALUE parameters of a query or
// fragment, keeping their names.
func maskParams(q string) string {
	params := strings.Split(q, "&")
	for i, p := range params {
		if name, v, ok := strings.Cut(p, "="); ok && v != "" {
			params[i] = name + "=" + maskedValue
		}
	}
	return strings.Join(params, "&")
}
